package ghemu

import (
	"net/http"
	"sort"
	"strconv"
	"time"
)

func (e *Emulator) getApp(w http.ResponseWriter, r *http.Request, c *call) {
	writeJSON(w, http.StatusOK, e.renderApp())
}

func (e *Emulator) sortedInstallations() []*installation {
	out := make([]*installation, 0, len(e.st.Installations))
	for _, in := range e.st.Installations {
		out = append(out, in)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (e *Emulator) listInstallations(w http.ResponseWriter, r *http.Request, c *call) {
	all := e.sortedInstallations()
	writeList(e, w, r, all, func(in *installation) obj { return e.renderInstallation(in) })
}

func (e *Emulator) installationParam(c *call) *installation {
	id, err := strconv.ParseInt(c.params["installation_id"], 10, 64)
	if err != nil {
		return nil
	}
	return e.st.Installations[id]
}

func (e *Emulator) getInstallation(w http.ResponseWriter, r *http.Request, c *call) {
	in := e.installationParam(c)
	if in == nil {
		writeError(w, errNotFound())
		return
	}
	writeJSON(w, http.StatusOK, e.renderInstallation(in))
}

func (e *Emulator) getRepoInstallation(w http.ResponseWriter, r *http.Request, c *call) {
	in := e.st.installationFor(c.repo)
	if in == nil {
		writeError(w, errNotFound())
		return
	}
	writeJSON(w, http.StatusOK, e.renderInstallation(in))
}

// createInstallationToken mints a one-hour token, narrowed to the repositories and
// permissions asked for. Asking for more than the installation has is a 422, as on GitHub.
func (e *Emulator) createInstallationToken(w http.ResponseWriter, r *http.Request, c *call) {
	in := e.installationParam(c)
	if in == nil {
		writeError(w, errNotFound())
		return
	}
	var req struct {
		Repositories  []string          `json:"repositories"`
		RepositoryIDs []int64           `json:"repository_ids"`
		Permissions   map[string]string `json:"permissions"`
	}
	if err := decodeOptional(r, &req); err != nil {
		writeError(w, err)
		return
	}
	perms := in.Permissions
	if req.Permissions != nil {
		perms = map[string]string{}
		for p, lvl := range req.Permissions {
			if lvl != "read" && lvl != "write" && lvl != "admin" {
				writeError(w, errValidation("", "permissions", "invalid",
					"permission "+p+" must be read, write or admin"))
				return
			}
			if !levelAtLeast(in.Permissions[p], lvl) {
				writeError(w, errUnprocessable("The permissions requested are not granted to this installation."))
				return
			}
			perms[p] = lvl
		}
		if perms["metadata"] == "" {
			perms["metadata"] = "read"
		}
	}
	var repoIDs []int64
	var repos []*repo
	notAccessible := errUnprocessable("There is at least one repository that does not exist or is not accessible to the parent installation.")
	for _, name := range req.Repositories {
		rp := e.st.repoByName(in.Account, name)
		if rp == nil || e.st.installationFor(rp) != in {
			writeError(w, notAccessible)
			return
		}
		repoIDs = append(repoIDs, rp.ID)
		repos = append(repos, rp)
	}
	for _, id := range req.RepositoryIDs {
		rp := e.st.repoByID(id)
		if rp == nil || e.st.installationFor(rp) != in {
			writeError(w, notAccessible)
			return
		}
		repoIDs = append(repoIDs, rp.ID)
		repos = append(repos, rp)
	}
	t := &installToken{Value: randomToken("ghs_"), InstallationID: in.ID, RepoIDs: repoIDs,
		Permissions: perms, ExpiresAt: e.timestamp().Add(tokenTTL)}
	e.st.Tokens[t.Value] = t
	c.mutated = true
	e.pruneTokens()
	sel := "all"
	if repoIDs != nil {
		sel = "selected"
	}
	out := obj{"token": t.Value, "expires_at": ts(t.ExpiresAt), "permissions": perms,
		"repository_selection": sel}
	if repoIDs != nil {
		list := []obj{}
		for _, rp := range repos {
			list = append(list, e.renderRepo(rp))
		}
		out["repositories"] = list
	}
	writeJSON(w, http.StatusCreated, out)
}

// pruneTokens forgets tokens that expired more than a day ago, so a long-lived
// emulator's state does not grow without bound.
func (e *Emulator) pruneTokens() {
	cutoff := e.now().Add(-24 * time.Hour)
	for v, t := range e.st.Tokens {
		if t.ExpiresAt.Before(cutoff) {
			delete(e.st.Tokens, v)
		}
	}
}

func (e *Emulator) listInstallationRepos(w http.ResponseWriter, r *http.Request, c *call) {
	t := c.who.token
	repos := e.sortedRepos(func(rp *repo) bool { return e.tokenCovers(t, rp) })
	list, err := pageOf(e, w, r, repos, func(rp *repo) obj { return e.renderRepo(rp) })
	if err != nil {
		writeError(w, err)
		return
	}
	sel := "selected"
	if e.st.Installations[t.InstallationID].AllRepos && t.RepoIDs == nil {
		sel = "all"
	}
	writeJSON(w, http.StatusOK, obj{"total_count": len(repos), "repositories": list,
		"repository_selection": sel})
}

func (e *Emulator) revokeInstallationToken(w http.ResponseWriter, r *http.Request, c *call) {
	c.who.token.Revoked = true
	c.mutated = true
	w.WriteHeader(http.StatusNoContent)
}

func (e *Emulator) getRateLimit(w http.ResponseWriter, r *http.Request, c *call) {
	win := e.window(c.who, r)
	core := obj{"limit": win.limit, "remaining": max(0, win.limit-win.used), "used": win.used,
		"reset": win.reset.Unix(), "resource": "core"}
	other := func(name string, limit int) obj {
		return obj{"limit": limit, "remaining": limit, "used": 0, "reset": win.reset.Unix(), "resource": name}
	}
	writeJSON(w, http.StatusOK, obj{
		"resources": obj{"core": core, "search": other("search", 30), "graphql": other("graphql", 5000),
			"integration_manifest": other("integration_manifest", 5000)},
		"rate": core,
	})
}
