package ghemu

import (
	"net/http"
	"strings"
)

// getUser renders an account of the world as GitHub's public profile does (GET
// /users/{username}, no credential needed): a person, an organization, or an App's bot
// user, whose ID is what GitHub's noreply commit address for the App carries
// (<id>+<slug>[bot]@users.noreply.github.com). Profiles hold no more than the seed
// says; the dates are the world's.
func (e *Emulator) getUser(w http.ResponseWriter, r *http.Request, c *call) {
	u := e.st.Users[key(c.params["username"])]
	if u == nil {
		writeError(w, errNotFound())
		return
	}
	o := e.renderUser(u.Login)
	public := 0
	for _, rp := range e.st.Repos {
		if !rp.Private && strings.EqualFold(rp.Owner, u.Login) {
			public++
		}
	}
	o["name"], o["email"] = nilIfEmpty(u.Name), nil
	o["company"], o["blog"], o["location"], o["hireable"], o["bio"], o["twitter_username"] = nil, "", nil, nil, nil, nil
	o["public_repos"], o["public_gists"], o["followers"], o["following"] = public, 0, 0, 0
	o["created_at"], o["updated_at"] = ts(e.st.App.CreatedAt), ts(e.st.App.CreatedAt)
	writeJSON(w, http.StatusOK, o)
}
