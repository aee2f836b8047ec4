package rest

import (
	"net/http"
	"net/url"

	"github.com/bumperdev/bumper/ghemu/apierr"
	"github.com/bumperdev/bumper/ghemu/state"
)

// requiredStatusChecks renders a protection's required checks as GitHub does under
// required_status_checks: every name in contexts, and each in checks with the App it
// is pinned to (app_id null: any source).
func requiredStatusChecks(p *state.Protection) (contexts []string, checks []obj) {
	contexts, checks = []string{}, []obj{}
	if p == nil {
		return contexts, checks
	}
	for _, name := range p.RequiredChecks {
		contexts = append(contexts, name)
		var app any
		if id, ok := p.CheckApps[name]; ok {
			app = id
		}
		checks = append(checks, obj{"context": name, "app_id": app})
	}
	return contexts, checks
}

func (a *API) getBranchProtection(w http.ResponseWriter, r *http.Request, c *call) {
	name := c.params["branch"]
	p := c.repo.Protection(name)
	if p == nil {
		apierr.Write(w, apierr.New(http.StatusNotFound, "Branch not protected"))
		return
	}
	api := c.st.BaseURL() + "/repos/" + c.repo.FullName() + "/branches/" + url.PathEscape(name) + "/protection"
	contexts, checks := requiredStatusChecks(p)
	o := obj{
		"url": api,
		"required_status_checks": obj{"url": api + "/required_status_checks", "strict": p.Strict,
			"contexts": contexts, "checks": checks,
			"contexts_url": api + "/required_status_checks/contexts"},
		"enforce_admins":                   obj{"url": api + "/enforce_admins", "enabled": p.EnforceAdmins},
		"required_signatures":              obj{"url": api + "/required_signatures", "enabled": p.RequiredSignatures},
		"required_linear_history":          obj{"enabled": false},
		"allow_force_pushes":               obj{"enabled": false},
		"allow_deletions":                  obj{"enabled": false},
		"block_creations":                  obj{"enabled": false},
		"required_conversation_resolution": obj{"enabled": false},
		"lock_branch":                      obj{"enabled": false},
		"allow_fork_syncing":               obj{"enabled": false},
		// "restrictions" (who may push) is absent, as GitHub leaves it when none are set.
	}
	if p.RequiredReviews > 0 || len(p.BypassApps) > 0 {
		reviews := obj{"url": api + "/required_pull_request_reviews",
			"dismiss_stale_reviews": true, "require_code_owner_reviews": false,
			"required_approving_review_count": p.RequiredReviews, "require_last_push_approval": false}
		if len(p.BypassApps) > 0 {
			apps := make([]obj, 0, len(p.BypassApps))
			for _, slug := range p.BypassApps {
				apps = append(apps, c.rn.AppBySlug(slug))
			}
			reviews["bypass_pull_request_allowances"] = obj{"users": []obj{}, "teams": []obj{}, "apps": apps}
		}
		o["required_pull_request_reviews"] = reviews
	}
	apierr.WriteJSON(w, http.StatusOK, o)
}

// getRequiredSignatures and setRequiredSignatures serve …/protection/required_signatures:
// GET says whether the branch requires signed commits, POST turns it on, DELETE off;
// a branch without protection is 404 "Branch not protected", as on GitHub.
func (a *API) getRequiredSignatures(w http.ResponseWriter, _ *http.Request, c *call) {
	a.requiredSignatures(w, c, nil)
}

func (a *API) setRequiredSignatures(w http.ResponseWriter, r *http.Request, c *call) {
	on := r.Method == http.MethodPost
	a.requiredSignatures(w, c, &on)
}

func (a *API) requiredSignatures(w http.ResponseWriter, c *call, set *bool) {
	name := c.params["branch"]
	p := c.repo.Protection(name)
	if p == nil {
		apierr.Write(w, apierr.New(http.StatusNotFound, "Branch not protected"))
		return
	}
	if set != nil {
		np := *p
		np.RequiredSignatures = *set
		c.repo.Protect(name, &np)
		if !*set {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		p = &np
	}
	api := c.st.BaseURL() + "/repos/" + c.repo.FullName() + "/branches/" + url.PathEscape(name) + "/protection/required_signatures"
	apierr.WriteJSON(w, http.StatusOK, obj{"url": api, "enabled": p.RequiredSignatures})
}
