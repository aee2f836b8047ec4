package rest

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/bumperdev/bumper/ghemu/apierr"
	"github.com/bumperdev/bumper/ghemu/render"
	"github.com/bumperdev/bumper/ghemu/state"
)

func (a *API) getApp(w http.ResponseWriter, r *http.Request, c *call) {
	apierr.WriteJSON(w, http.StatusOK, c.rn.App())
}

func (a *API) listInstallations(w http.ResponseWriter, r *http.Request, c *call) {
	writeList(c, w, r, c.st.Installations(), func(in *state.Installation) obj { return c.rn.Installation(in) })
}

func (c *call) installationParam() *state.Installation {
	id, err := strconv.ParseInt(c.params["installation_id"], 10, 64)
	if err != nil {
		return nil
	}
	return c.st.Installation(id)
}

func (a *API) getInstallation(w http.ResponseWriter, r *http.Request, c *call) {
	in := c.installationParam()
	if in == nil {
		apierr.Write(w, apierr.NotFound())
		return
	}
	apierr.WriteJSON(w, http.StatusOK, c.rn.Installation(in))
}

func (a *API) getRepoInstallation(w http.ResponseWriter, r *http.Request, c *call) {
	in := c.st.InstallationFor(c.repo)
	if in == nil {
		apierr.Write(w, apierr.NotFound())
		return
	}
	apierr.WriteJSON(w, http.StatusOK, c.rn.Installation(in))
}

// createInstallationToken mints a one-hour token, narrowed to the repositories and
// permissions asked for. Asking for more than the installation has is a 422, as on GitHub.
func (a *API) createInstallationToken(w http.ResponseWriter, r *http.Request, c *call) {
	in := c.installationParam()
	if in == nil {
		apierr.Write(w, apierr.NotFound())
		return
	}
	var req struct {
		Repositories  []string          `json:"repositories"`
		RepositoryIDs []int64           `json:"repository_ids"`
		Permissions   map[string]string `json:"permissions"`
	}
	if err := apierr.DecodeOptional(r, &req); err != nil {
		apierr.Write(w, err)
		return
	}
	perms := in.Permissions
	if req.Permissions != nil {
		perms = map[string]string{}
		for p, lvl := range req.Permissions {
			if lvl != "read" && lvl != "write" && lvl != "admin" {
				apierr.Write(w, apierr.Validation("", "permissions", "invalid",
					"permission "+p+" must be read, write or admin"))
				return
			}
			if !state.LevelAtLeast(in.Permissions[p], lvl) {
				apierr.Write(w, apierr.Unprocessable("The permissions requested are not granted to this installation."))
				return
			}
			perms[p] = lvl
		}
		if perms["metadata"] == "" {
			perms["metadata"] = "read"
		}
	}
	var repoIDs []int64
	var repos []*state.Repo
	notAccessible := apierr.Unprocessable("There is at least one repository that does not exist or is not accessible to the parent installation.")
	for _, name := range req.Repositories {
		rp := c.st.Repo(in.Account, name)
		if rp == nil || c.st.InstallationFor(rp) != in {
			apierr.Write(w, notAccessible)
			return
		}
		repoIDs = append(repoIDs, rp.ID)
		repos = append(repos, rp)
	}
	for _, id := range req.RepositoryIDs {
		rp := c.st.RepoByID(id)
		if rp == nil || c.st.InstallationFor(rp) != in {
			apierr.Write(w, notAccessible)
			return
		}
		repoIDs = append(repoIDs, rp.ID)
		repos = append(repos, rp)
	}
	t := &state.Token{Value: state.RandomToken("ghs_"), InstallationID: in.ID, RepoIDs: repoIDs,
		Permissions: perms, ExpiresAt: c.st.Timestamp().Add(tokenTTL)}
	c.st.AddToken(t)
	// Tokens that expired more than a day ago are forgotten, so a long-lived emulator's
	// state does not grow without bound.
	c.st.PruneTokens(c.st.Now().Add(-24 * time.Hour))
	sel := "all"
	if repoIDs != nil {
		sel = "selected"
	}
	out := obj{"token": t.Value, "expires_at": render.TS(t.ExpiresAt), "permissions": perms,
		"repository_selection": sel}
	if repoIDs != nil {
		list := []obj{}
		for _, rp := range repos {
			list = append(list, c.rn.Repo(rp))
		}
		out["repositories"] = list
	}
	apierr.WriteJSON(w, http.StatusCreated, out)
}

func (a *API) listInstallationRepos(w http.ResponseWriter, r *http.Request, c *call) {
	t := c.who.token
	var repos []*state.Repo
	for _, rp := range c.st.Repos() {
		if c.st.TokenCovers(t, rp) {
			repos = append(repos, rp)
		}
	}
	list, err := pageOf(c, w, r, repos, func(rp *state.Repo) obj { return c.rn.Repo(rp) })
	if err != nil {
		apierr.Write(w, err)
		return
	}
	sel := "selected"
	if c.st.Installation(t.InstallationID).AllRepos && t.RepoIDs == nil {
		sel = "all"
	}
	apierr.WriteJSON(w, http.StatusOK, obj{"total_count": len(repos), "repositories": list,
		"repository_selection": sel})
}

func (a *API) revokeInstallationToken(w http.ResponseWriter, r *http.Request, c *call) {
	c.who.token.Revoked = true
	c.st.MarkChanged()
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) getRateLimit(w http.ResponseWriter, r *http.Request, c *call) {
	win := a.limits.window(c.who, r)
	core := obj{"limit": win.limit, "remaining": max(0, win.limit-win.used), "used": win.used,
		"reset": win.reset.Unix(), "resource": "core"}
	other := func(name string, limit int) obj {
		return obj{"limit": limit, "remaining": limit, "used": 0, "reset": win.reset.Unix(), "resource": name}
	}
	apierr.WriteJSON(w, http.StatusOK, obj{
		"resources": obj{"core": core, "search": other("search", 30), "graphql": other("graphql", 5000),
			"integration_manifest": other("integration_manifest", 5000)},
		"rate": core,
	})
}

// getOrgInstallation serves GET /orgs/{org}/installation: the App's installation on an
// organization, 404 when it has none.
func (a *API) getOrgInstallation(w http.ResponseWriter, r *http.Request, c *call) {
	for _, in := range c.st.Installations() {
		if strings.EqualFold(in.Account, c.params["org"]) {
			apierr.WriteJSON(w, http.StatusOK, c.rn.Installation(in))
			return
		}
	}
	apierr.Write(w, apierr.NotFound())
}
