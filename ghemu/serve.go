package ghemu

import (
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/bumperdev/bumper/ghemu/actions"
	"github.com/bumperdev/bumper/ghemu/apierr"
	"github.com/bumperdev/bumper/ghemu/rest"
	"github.com/bumperdev/bumper/ghemu/state"
	"github.com/bumperdev/bumper/ghemu/web"
)

// controlPrefix holds the emulator's own routes (actions.ControlPrefix).
const controlPrefix = actions.ControlPrefix

// Handler serves the REST API, the git smart-HTTP server, the OIDC issuer, the web
// view and the emulator's control routes, each at its part of the URL space.
func (e *Emulator) Handler() http.Handler {
	return http.HandlerFunc(e.serveHTTP)
}

func (e *Emulator) serveHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			e.log.Error().Interface("panic", v).Str("path", r.URL.Path).Msg("emulator handler panicked")
			apierr.Write(w, apierr.New(http.StatusInternalServerError, "Server Error"))
		}
	}()
	w.Header().Set("X-GitHub-Request-Id", state.RandomToken("")[:16])
	w.Header().Set("X-GitHub-Api-Version-Selected", "2022-11-28")
	if rr, ok := underAPIV3(r); ok {
		e.api.ServeHTTP(w, rr)
		return
	}
	switch {
	case isGitPath(r.URL.Path):
		e.git.ServeHTTP(w, r)
	case strings.HasPrefix(r.URL.Path, "/.well-known/"):
		e.oidc.Serve(w, r, e.BaseURL())
	case strings.HasPrefix(r.URL.Path, controlPrefix):
		e.serveControl(w, r)
	case web.IsManifestPage(r):
		e.web.ServeManifest(w, r)
	case isWebForm(r):
		e.web.ServeForm(w, r)
	case isWebRequest(r):
		e.web.ServeHTTP(w, r)
	default:
		e.api.ServeHTTP(w, r)
	}
}

// apiV3Prefix is where GitHub Enterprise Server serves its REST API
// (https://HOST/api/v3/…). The emulator serves the same routes there too, so a client
// set up for an Enterprise Server (`bumper setup --github-url`, go-github's
// WithEnterpriseURLs) works against it unchanged; at the root, as api.github.com
// serves them, they stay.
const apiV3Prefix = "/api/v3"

// underAPIV3 returns r with apiV3Prefix taken off its path, and true, when the path is
// under it: that request is the REST API's, whatever follows (git, the web view and
// the control routes are not served under it, as on Enterprise Server).
func underAPIV3(r *http.Request) (*http.Request, bool) {
	p := r.URL.Path
	if p != apiV3Prefix && !strings.HasPrefix(p, apiV3Prefix+"/") {
		return r, false
	}
	rr := r.Clone(r.Context())
	rr.URL.Path = strings.TrimPrefix(p, apiV3Prefix)
	if rr.URL.Path == "" {
		rr.URL.Path = "/"
	}
	if rr.URL.RawPath != "" {
		rr.URL.RawPath = strings.TrimPrefix(rr.URL.RawPath, apiV3Prefix)
	}
	rr.RequestURI = rr.URL.RequestURI()
	return rr, true
}

// isGitPath reports whether the path is a git smart-HTTP path "/{owner}/{repo}.git/...".
func isGitPath(p string) bool {
	parts := strings.SplitN(strings.TrimPrefix(p, "/"), "/", 3)
	return len(parts) >= 2 && strings.HasSuffix(parts[1], ".git")
}

// restTops are the first path segments of the REST routes; isWebPath leaves those
// paths to the REST API.
var restTops = sync.OnceValue(rest.Tops)

// isWebPath reports whether a GET of path is the web view's: anything but the REST
// API's paths (/repos/…, /app/…, /installation/…, …), the git smart-HTTP paths
// (/{owner}/{repo}.git/…), the OIDC issuer (/.well-known/…) and the control routes
// (/_emulator/…). GitHub's logins and repository names cannot collide with these: no
// account is called "repos" or "app", and a login never starts with "_" or ".".
func isWebPath(p string) bool {
	if isGitPath(p) || strings.HasPrefix(p, "/.well-known/") || strings.HasPrefix(p, controlPrefix) {
		return false
	}
	top, _, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
	return !restTops()[top]
}

// isWebRequest is isWebPath for the methods the view's pages answer.
func isWebRequest(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) && isWebPath(r.URL.Path)
}

// isWebForm reports whether a request posts one of the web view's forms (signing in
// and out, comments, reviews, threads, merges): a POST to a web path the view's forms
// own. The REST API's own paths are never the view's.
func isWebForm(r *http.Request) bool {
	return r.Method == http.MethodPost && isWebPath(r.URL.Path) && web.IsFormPath(r.URL.Path)
}

// serveControl serves the routes under controlPrefix: the runs' (package actions),
// then what GitHub's UI does for a check run, a branch's protection and the App's
// installation.
func (e *Emulator) serveControl(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(strings.TrimPrefix(r.URL.Path, controlPrefix), "/"), "/")
	if e.actions.ServeControl(w, r, parts) {
		return
	}
	switch {
	// POST /_emulator/repos/{owner}/{repo}/check-runs/{id}/rerequest: "Re-run" in the UI.
	case r.Method == http.MethodPost && len(parts) == 6 && parts[0] == "repos" && parts[3] == "check-runs" && parts[5] == "rerequest":
		id, err := strconv.ParseInt(parts[4], 10, 64)
		if err != nil {
			apierr.Write(w, apierr.NotFound())
			return
		}
		if err := e.RerequestCheckRun(parts[1], parts[2], id, r.URL.Query().Get("user")); err != nil {
			apierr.Write(w, apierr.Unprocessable(err.Error()))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	// PUT|DELETE /_emulator/repos/{owner}/{repo}/branches/{branch...}/protection: what an
	// admin does in the branch's settings (SetBranchProtection, RemoveBranchProtection).
	case len(parts) >= 6 && parts[0] == "repos" && parts[3] == "branches" && parts[len(parts)-1] == "protection":
		e.serveProtectionControl(w, r, parts[1], parts[2], strings.Join(parts[4:len(parts)-1], "/"))
	// POST /_emulator/repos/{owner}/{repo}/pulls/comments/{id}/resolution
	// {"user","resolved"}: a thread's "Resolve conversation" (ResolveThread).
	case r.Method == http.MethodPost && len(parts) == 7 && parts[0] == "repos" && parts[3] == "pulls" &&
		parts[4] == "comments" && parts[6] == "resolution":
		e.serveResolveControl(w, r, parts[1], parts[2], parts[5])
	// POST /_emulator/app/installations {"account","repositories"}: the App's "Install" page (InstallApp).
	case r.Method == http.MethodPost && len(parts) == 2 && parts[0] == "app" && parts[1] == "installations":
		e.serveInstallControl(w, r)
	default:
		apierr.Write(w, apierr.NotFound())
	}
}

// serveProtectionControl serves PUT and DELETE
// /_emulator/repos/{owner}/{repo}/branches/{branch...}/protection.
func (e *Emulator) serveProtectionControl(w http.ResponseWriter, r *http.Request, owner, repoName, branch string) {
	var err error
	switch r.Method {
	case http.MethodPut:
		var p SeedProtection
		if err := apierr.Decode(r, &p); err != nil {
			apierr.Write(w, err)
			return
		}
		p.Branch = branch
		err = e.SetBranchProtection(owner, repoName, p)
	case http.MethodDelete:
		err = e.RemoveBranchProtection(owner, repoName, branch)
	default:
		apierr.Write(w, apierr.NotFound())
		return
	}
	if err != nil {
		apierr.Write(w, apierr.Unprocessable(err.Error()))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// serveInstallControl is POST /_emulator/app/installations {"account", "repositories"}.
func (e *Emulator) serveInstallControl(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Account      string   `json:"account"`
		Repositories []string `json:"repositories"`
	}
	if err := apierr.Decode(r, &req); err != nil {
		apierr.Write(w, err)
		return
	}
	id, err := e.InstallApp(req.Account, req.Repositories)
	if err != nil {
		apierr.Write(w, apierr.Unprocessable(err.Error()))
		return
	}
	apierr.WriteJSON(w, http.StatusCreated, map[string]any{"id": id})
}

// serveResolveControl is POST
// /_emulator/repos/{owner}/{repo}/pulls/comments/{id}/resolution {"user", "resolved"}.
func (e *Emulator) serveResolveControl(w http.ResponseWriter, r *http.Request, owner, repoName, idText string) {
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil {
		apierr.Write(w, apierr.NotFound())
		return
	}
	var req struct {
		User     string `json:"user"`
		Resolved *bool  `json:"resolved"`
	}
	if err := apierr.Decode(r, &req); err != nil {
		apierr.Write(w, err)
		return
	}
	if req.Resolved == nil {
		apierr.Write(w, apierr.Validation("", "resolved", "missing_field", "resolved (true or false) is required"))
		return
	}
	if err := e.ResolveThread(owner, repoName, id, req.User, *req.Resolved); err != nil {
		apierr.Write(w, apierr.Unprocessable(err.Error()))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
