package render

import (
	"strconv"
	"time"

	"github.com/bumperdev/bumper/ghemu/state"
)

// githubActionsAppID is GitHub Actions' App on github.com, which creates the check runs
// of workflow jobs.
const githubActionsAppID = 15368

// CheckRun renders a check run as the REST API carries it.
func (r *Renderer) CheckRun(rp *state.Repo, cr *state.CheckRun) Obj {
	api := r.base + "/repos/" + rp.FullName() + "/check-runs/" + strconv.FormatInt(cr.ID, 10)
	prs := []Obj{}
	for _, p := range rp.Pulls() {
		n := p.Number
		if is := rp.Issue(n); p.HeadSHA == cr.HeadSHA && is.State == "open" {
			prs = append(prs, Obj{"id": is.ID, "number": n,
				"url":  r.base + "/repos/" + rp.FullName() + "/pulls/" + strconv.Itoa(n),
				"head": Obj{"ref": p.Head, "sha": p.HeadSHA, "repo": Obj{"id": rp.ID, "url": r.base + "/repos/" + rp.FullName(), "name": rp.Name}},
				"base": Obj{"ref": p.Base, "sha": p.BaseSHA, "repo": Obj{"id": rp.ID, "url": r.base + "/repos/" + rp.FullName(), "name": rp.Name}}})
		}
	}
	return Obj{
		"id": cr.ID, "node_id": NodeID("CR", cr.ID), "head_sha": cr.HeadSHA, "name": cr.Name,
		"external_id": cr.ExternalID, "url": api,
		"html_url":    r.base + "/" + rp.FullName() + "/runs/" + strconv.FormatInt(cr.ID, 10),
		"details_url": NilIfEmpty(cr.DetailsURL), "status": cr.Status, "conclusion": NilIfEmpty(cr.Conclusion),
		"started_at": TS(cr.StartedAt), "completed_at": TSPtr(cr.CompletedAt),
		"output": Obj{"title": NilIfEmpty(cr.Output.Title), "summary": NilIfEmpty(cr.Output.Summary),
			"text": NilIfEmpty(cr.Output.Text), "annotations_count": 0, "annotations_url": api + "/annotations"},
		"check_suite": Obj{"id": cr.SuiteID}, "app": r.CheckRunApp(cr), "pull_requests": prs,
	}
}

// CheckRunApp renders the App that created a check run, as GitHub does. A run without
// an App (from a state saved when the emulator let people create check runs, as GitHub
// never did) renders as a CI system's run does on GitHub, GitHub Actions' App: the REST
// schema would allow null, but webhooks' check_run.app may not be null. Its ID is not
// one a protection can pin in the emulator, so such a run never satisfies a pinned
// check.
func (r *Renderer) CheckRunApp(cr *state.CheckRun) Obj {
	switch cr.AppID {
	case 0:
		o := r.AppBySlug("github-actions")
		o["id"], o["node_id"], o["name"] = githubActionsAppID, NodeID("A", githubActionsAppID), "GitHub Actions"
		o["owner"] = r.User("github")
		return o
	case r.w.App().ID:
		return r.App()
	default:
		// Another App, or the emulator's previous App after a manifest replaced it:
		// its slug with the ID the run was created under.
		o := r.AppBySlug(cr.AppSlug)
		o["id"], o["node_id"] = cr.AppID, NodeID("A", cr.AppID)
		return o
	}
}

// HookCheckRun renders a check run as webhooks carry it: the whole check suite instead
// of its ID, and details_url always a string.
func (r *Renderer) HookCheckRun(rp *state.Repo, cr *state.CheckRun) Obj {
	o := r.CheckRun(rp, cr)
	if cr.DetailsURL == "" {
		o["details_url"] = o["html_url"]
	}
	status, conclusion := "completed", "success"
	var last time.Time
	for _, other := range rp.CheckSuite(cr.SuiteID) {
		if other.Status != "completed" {
			status, conclusion = "in_progress", ""
		} else if conclusion != "" && other.Conclusion != "success" {
			conclusion = other.Conclusion
		}
		if other.StartedAt.After(last) {
			last = other.StartedAt
		}
	}
	branch := ""
	for _, p := range rp.Pulls() {
		if p.HeadSHA == cr.HeadSHA && rp.Issue(p.Number).State == "open" {
			branch = p.Head
		}
	}
	o["check_suite"] = Obj{
		"id": cr.SuiteID, "node_id": NodeID("CS", cr.SuiteID), "head_branch": NilIfEmpty(branch),
		"head_sha": cr.HeadSHA, "status": status, "conclusion": NilIfEmpty(conclusion),
		"url":    r.base + "/repos/" + rp.FullName() + "/check-suites/" + strconv.FormatInt(cr.SuiteID, 10),
		"before": nil, "after": cr.HeadSHA, "pull_requests": o["pull_requests"], "app": o["app"],
		"created_at": TS(cr.StartedAt), "updated_at": TS(last),
	}
	return o
}
