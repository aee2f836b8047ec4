package rest

import (
	"net/http"
	"strings"

	"github.com/bumperdev/bumper/ghemu/apierr"
	"github.com/bumperdev/bumper/ghemu/render"
)

// getUser renders an account of the world as GitHub's public profile does (GET
// /users/{username}, no credential needed): a person, an organization, or an App's bot
// user, whose ID is what GitHub's noreply commit address for the App carries
// (<id>+<slug>[bot]@users.noreply.github.com). Profiles hold no more than the seed
// says; the dates are the world's.
func (a *API) getUser(w http.ResponseWriter, r *http.Request, c *call) {
	u := c.st.User(c.params["username"])
	if u == nil {
		apierr.Write(w, apierr.NotFound())
		return
	}
	o := c.rn.User(u.Login)
	public := 0
	for _, rp := range c.st.Repos() {
		if !rp.Private && strings.EqualFold(rp.Owner, u.Login) {
			public++
		}
	}
	created := render.TS(c.st.App().CreatedAt)
	o["name"], o["email"] = render.NilIfEmpty(u.Name), nil
	o["company"], o["blog"], o["location"], o["hireable"], o["bio"], o["twitter_username"] = nil, "", nil, nil, nil, nil
	o["public_repos"], o["public_gists"], o["followers"], o["following"] = public, 0, 0, 0
	o["created_at"], o["updated_at"] = created, created
	apierr.WriteJSON(w, http.StatusOK, o)
}
