package ghemu

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// newProtection turns a validated seed's (or the control's) protection into the
// model's. Pins are kept by App ID, as GitHub keeps them: the check runs an App
// creates carry its ID, and the protection API renders it.
func (e *Emulator) newProtection(p SeedProtection) *protection {
	prot := &protection{RequiredChecks: slices.Clone(p.RequiredChecks), RequiredReviews: p.RequiredReviews,
		EnforceAdmins: p.EnforceAdmins, BypassApps: slices.Clone(p.BypassApps)}
	for check, slug := range p.RequiredCheckApps {
		if prot.CheckApps == nil {
			prot.CheckApps = map[string]int64{}
		}
		prot.CheckApps[check] = e.appIDBySlug(slug)
	}
	return prot
}

// appIDBySlug is the ID of an App of the world: the emulator's own, or another App
// known by its bot user, whose ID stands for the App's (renderAppBySlug renders it so).
// 0 for an unknown slug, which validation refuses before.
func (e *Emulator) appIDBySlug(slug string) int64 {
	if strings.EqualFold(slug, e.st.App.Slug) {
		return e.st.App.ID
	}
	if bot := e.st.Users[key(slug+"[bot]")]; bot != nil && bot.Type == "Bot" {
		return bot.ID
	}
	return 0
}

// AppIDBySlug is the ID of an App of the world by its slug: the emulator's App, or
// another App whose bot user the seed lists, whose check runs carry that ID and to
// which a required check can be pinned. False for an App the world does not know.
func (e *Emulator) AppIDBySlug(slug string) (int64, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	id := e.appIDBySlug(slug)
	return id, id != 0
}

// appOf is the App a caller creates check runs as, by ID and slug: the emulator's App
// for an installation token, another App for its bot user's token; 0 and "" for
// people (who may not create check runs: routes' appOnly).
func (e *Emulator) appOf(who *principal) (int64, string) {
	switch slug := e.appSlugOf(who); {
	case slug == "":
		return 0, ""
	case who.token != nil:
		return e.st.App.ID, e.st.App.Slug
	default:
		return who.user.ID, slug
	}
}

// requiredStatusChecks renders a protection's required checks as GitHub does under
// required_status_checks: every name in contexts, and each in checks with the App it
// is pinned to (app_id null: any source).
func requiredStatusChecks(p *protection) (contexts []string, checks []obj) {
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

// appSlugOf is the slug of the App a caller acts as: the emulator's App for an
// installation token, another App for its bot user's token; "" for people.
func (e *Emulator) appSlugOf(who *principal) string {
	switch {
	case who == nil:
		return ""
	case who.token != nil:
		return e.st.App.Slug
	case who.user != nil && who.user.Type == "Bot":
		return strings.TrimSuffix(who.user.Login, "[bot]")
	}
	return ""
}

// bypassesReviews reports whether who may merge into a branch protected by prot
// without the approving reviews: an App named in bypass_pull_request_allowances.apps.
func (e *Emulator) bypassesReviews(prot *protection, who *principal) bool {
	slug := e.appSlugOf(who)
	return slug != "" && slices.ContainsFunc(prot.BypassApps, func(s string) bool { return strings.EqualFold(s, slug) })
}

// renderAppBySlug renders an App of a bypass list: the emulator's own, or another App
// known by its bot user (GitHub's integration object, with what the emulator knows).
func (e *Emulator) renderAppBySlug(slug string) obj {
	if strings.EqualFold(slug, e.st.App.Slug) {
		return e.renderApp()
	}
	bot := e.st.Users[key(slug+"[bot]")]
	var id int64
	if bot != nil {
		id = bot.ID
	}
	return obj{
		"id": id, "slug": slug, "node_id": nodeID("A", id), "client_id": "Iv1." + slug,
		"owner": e.renderUser(e.st.App.Owner), "name": slug, "description": nil,
		"external_url": e.baseURL, "html_url": e.baseURL + "/apps/" + slug,
		"created_at": ts(e.st.App.CreatedAt), "updated_at": ts(e.st.App.CreatedAt),
		"permissions": obj{}, "events": []string{},
	}
}

func (e *Emulator) getBranchProtection(w http.ResponseWriter, r *http.Request, c *call) {
	name := c.params["branch"]
	p := c.repo.Protected[name]
	if p == nil {
		writeError(w, newError(http.StatusNotFound, "Branch not protected"))
		return
	}
	api := e.baseURL + "/repos/" + c.repo.fullName() + "/branches/" + pathEscape(name) + "/protection"
	contexts, checks := requiredStatusChecks(p)
	o := obj{
		"url": api,
		"required_status_checks": obj{"url": api + "/required_status_checks", "strict": false,
			"contexts": contexts, "checks": checks,
			"contexts_url": api + "/required_status_checks/contexts"},
		"enforce_admins":                   obj{"url": api + "/enforce_admins", "enabled": p.EnforceAdmins},
		"required_signatures":              obj{"url": api + "/required_signatures", "enabled": false},
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
				apps = append(apps, e.renderAppBySlug(slug))
			}
			reviews["bypass_pull_request_allowances"] = obj{"users": []obj{}, "teams": []obj{}, "apps": apps}
		}
		o["required_pull_request_reviews"] = reviews
	}
	writeJSON(w, http.StatusOK, o)
}

// SetBranchProtection protects p.Branch of a repository, replacing what protected it,
// as a repository admin does in the branch's settings. Tests use it to build a
// repository whose protection is missing or too weak. The branch must exist.
func (e *Emulator) SetBranchProtection(owner, repoName string, p SeedProtection) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	rp := e.st.repoByName(owner, repoName)
	if rp == nil {
		return fmt.Errorf("no repository %s/%s", owner, repoName)
	}
	err := validateProtection(p, e.st.App.Slug, func(login string) bool {
		u := e.st.Users[key(login)]
		return u != nil && u.Type == "Bot"
	})
	if err != nil {
		return fmt.Errorf("failed to protect %s: %w", p.Branch, err)
	}
	refs, err := e.git.Refs(context.Background(), rp.Owner, rp.Name)
	if err != nil {
		return fmt.Errorf("failed to read the branches of %s: %w", rp.fullName(), err)
	}
	if _, ok := refs["refs/heads/"+p.Branch]; !ok {
		return fmt.Errorf("no branch %s in %s", p.Branch, rp.fullName())
	}
	rp.Protected[p.Branch] = e.newProtection(p)
	e.saveLocked()
	return nil
}

// RemoveBranchProtection unprotects a branch; unprotecting one that is not protected is
// an error, as GitHub's DELETE answers 404 "Branch not protected".
func (e *Emulator) RemoveBranchProtection(owner, repoName, branch string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	rp := e.st.repoByName(owner, repoName)
	if rp == nil {
		return fmt.Errorf("no repository %s/%s", owner, repoName)
	}
	if rp.Protected[branch] == nil {
		return fmt.Errorf("branch %s of %s is not protected", branch, rp.fullName())
	}
	delete(rp.Protected, branch)
	e.saveLocked()
	return nil
}

// serveProtectionControl serves PUT and DELETE
// /_emulator/repos/{owner}/{repo}/branches/{branch...}/protection.
func (e *Emulator) serveProtectionControl(w http.ResponseWriter, r *http.Request, owner, repoName, branch string) {
	var err error
	switch r.Method {
	case http.MethodPut:
		var p SeedProtection
		if err := decode(r, &p); err != nil {
			writeError(w, err)
			return
		}
		p.Branch = branch
		err = e.SetBranchProtection(owner, repoName, p)
	case http.MethodDelete:
		err = e.RemoveBranchProtection(owner, repoName, branch)
	default:
		writeError(w, errNotFound())
		return
	}
	if err != nil {
		writeError(w, errUnprocessable(err.Error()))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
