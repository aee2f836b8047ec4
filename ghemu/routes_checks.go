package ghemu

import (
	"net/http"
	"sort"
	"strconv"
	"time"
)

var checkStatuses = map[string]bool{"queued": true, "in_progress": true, "completed": true,
	"waiting": true, "requested": true, "pending": true}

var checkConclusions = map[string]bool{"action_required": true, "cancelled": true, "failure": true,
	"neutral": true, "success": true, "skipped": true, "stale": true, "timed_out": true}

// checkRunRequest is the body of both create and update; pointers tell "absent" apart.
type checkRunRequest struct {
	Name        *string    `json:"name"`
	HeadSHA     *string    `json:"head_sha"`
	DetailsURL  *string    `json:"details_url"`
	ExternalID  *string    `json:"external_id"`
	Status      *string    `json:"status"`
	Conclusion  *string    `json:"conclusion"`
	StartedAt   *time.Time `json:"started_at"`
	CompletedAt *time.Time `json:"completed_at"`
	Output      *struct {
		Title   *string `json:"title"`
		Summary *string `json:"summary"`
		Text    *string `json:"text"`
	} `json:"output"`
}

// maxCheckOutput is GitHub's limit on a check run's summary and text.
const maxCheckOutput = 65535

func (e *Emulator) applyCheckRun(cr *checkRun, req *checkRunRequest) error {
	if req.Name != nil {
		cr.Name = *req.Name
	}
	if req.DetailsURL != nil {
		cr.DetailsURL = *req.DetailsURL
	}
	if req.ExternalID != nil {
		cr.ExternalID = *req.ExternalID
	}
	if req.StartedAt != nil {
		cr.StartedAt = req.StartedAt.UTC()
	}
	if req.Status != nil {
		if !checkStatuses[*req.Status] {
			return errValidation("CheckRun", "status", "invalid", "status must be queued, in_progress or completed")
		}
		cr.Status = *req.Status
	}
	if req.Conclusion != nil {
		if !checkConclusions[*req.Conclusion] {
			return errValidation("CheckRun", "conclusion", "invalid", "conclusion is not one of GitHub's values")
		}
		cr.Conclusion = *req.Conclusion
		cr.Status = "completed"
	}
	if req.Output != nil {
		o := req.Output
		if o.Title == nil || o.Summary == nil {
			return errValidation("CheckRun", "output", "missing_field", "output needs a title and a summary")
		}
		if len(*o.Summary) > maxCheckOutput || o.Text != nil && len(*o.Text) > maxCheckOutput {
			return errValidation("CheckRun", "output", "custom", "output summary and text are limited to 65535 characters")
		}
		cr.Output.Title, cr.Output.Summary = *o.Title, *o.Summary
		if o.Text != nil {
			cr.Output.Text = *o.Text
		}
	}
	if cr.Status == "completed" {
		if cr.Conclusion == "" {
			return errValidation("CheckRun", "conclusion", "missing_field", "a completed check run needs a conclusion")
		}
		if cr.CompletedAt == nil {
			t := e.timestamp()
			if req.CompletedAt != nil {
				t = req.CompletedAt.UTC()
			}
			cr.CompletedAt = &t
		}
	}
	if cr.Name == "" {
		return errValidation("CheckRun", "name", "missing_field", "name is required")
	}
	return nil
}

func (e *Emulator) renderCheckRun(rp *repo, cr *checkRun) obj {
	api := e.baseURL + "/repos/" + rp.fullName() + "/check-runs/" + strconv.FormatInt(cr.ID, 10)
	prs := []obj{}
	for n, p := range rp.Pulls {
		if p.HeadSHA == cr.HeadSHA && rp.Issues[n].State == "open" {
			prs = append(prs, obj{"id": rp.Issues[n].ID, "number": n,
				"url":  e.baseURL + "/repos/" + rp.fullName() + "/pulls/" + strconv.Itoa(n),
				"head": obj{"ref": p.Head, "sha": p.HeadSHA, "repo": obj{"id": rp.ID, "url": e.baseURL + "/repos/" + rp.fullName(), "name": rp.Name}},
				"base": obj{"ref": p.Base, "sha": p.BaseSHA, "repo": obj{"id": rp.ID, "url": e.baseURL + "/repos/" + rp.fullName(), "name": rp.Name}}})
		}
	}
	return obj{
		"id": cr.ID, "node_id": nodeID("CR", cr.ID), "head_sha": cr.HeadSHA, "name": cr.Name,
		"external_id": cr.ExternalID, "url": api,
		"html_url":    e.baseURL + "/" + rp.fullName() + "/runs/" + strconv.FormatInt(cr.ID, 10),
		"details_url": nilIfEmpty(cr.DetailsURL), "status": cr.Status, "conclusion": nilIfEmpty(cr.Conclusion),
		"started_at": ts(cr.StartedAt), "completed_at": tsPtr(cr.CompletedAt),
		"output": obj{"title": nilIfEmpty(cr.Output.Title), "summary": nilIfEmpty(cr.Output.Summary),
			"text": nilIfEmpty(cr.Output.Text), "annotations_count": 0, "annotations_url": api + "/annotations"},
		"check_suite": obj{"id": cr.SuiteID}, "app": e.renderCheckRunApp(cr), "pull_requests": prs,
	}
}

// githubActionsAppID is GitHub Actions' App on github.com, which creates the check runs
// of workflow jobs.
const githubActionsAppID = 15368

// renderCheckRunApp renders the App that created a check run, as GitHub does. A run
// without an App (from a state saved when the emulator let people create check runs,
// as GitHub never did) renders as a CI system's run does on GitHub, GitHub Actions'
// App: the REST schema would allow null, but webhooks' check_run.app may not be null.
// Its ID is not one a protection can pin in the emulator, so such a run never
// satisfies a pinned check.
func (e *Emulator) renderCheckRunApp(cr *checkRun) obj {
	switch cr.AppID {
	case 0:
		o := e.renderAppBySlug("github-actions")
		o["id"], o["node_id"], o["name"] = githubActionsAppID, nodeID("A", githubActionsAppID), "GitHub Actions"
		o["owner"] = e.renderUser("github")
		return o
	case e.st.App.ID:
		return e.renderApp()
	default:
		// Another App, or the emulator's previous App after a manifest replaced it:
		// its slug with the ID the run was created under.
		o := e.renderAppBySlug(cr.AppSlug)
		o["id"], o["node_id"] = cr.AppID, nodeID("A", cr.AppID)
		return o
	}
}

func (e *Emulator) createCheckRun(w http.ResponseWriter, r *http.Request, c *call) {
	var req checkRunRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Name == nil || req.HeadSHA == nil {
		writeError(w, errValidation("CheckRun", "head_sha", "missing_field", "name and head_sha are required"))
		return
	}
	if _, err := e.commit(r.Context(), c.repo, *req.HeadSHA); err != nil || !isSHA(*req.HeadSHA) {
		writeError(w, errUnprocessable("No commit found for SHA: "+*req.HeadSHA))
		return
	}
	cr := &checkRun{ID: e.st.nextID(), HeadSHA: *req.HeadSHA, Status: "queued", StartedAt: e.timestamp()}
	cr.AppID, cr.AppSlug = e.appOf(c.who)
	cr.SuiteID = e.suiteFor(c.repo, cr.HeadSHA, cr.AppID)
	if err := e.applyCheckRun(cr, &req); err != nil {
		writeError(w, err)
		return
	}
	c.repo.CheckRuns[cr.ID] = cr
	c.mutated = true
	rendered := e.renderCheckRun(c.repo, cr)
	e.emit("check_run", "created", c.repo, c.who.actor(), obj{"check_run": e.hookCheckRun(c.repo, cr)})
	if cr.Status == "completed" {
		e.emit("check_run", "completed", c.repo, c.who.actor(), obj{"check_run": e.hookCheckRun(c.repo, cr)})
	}
	writeJSON(w, http.StatusCreated, rendered)
}

// suiteFor gives an App's check suite on a commit: one suite per (App, head SHA).
func (e *Emulator) suiteFor(rp *repo, sha string, appID int64) int64 {
	for _, cr := range rp.CheckRuns {
		if cr.HeadSHA == sha && cr.AppID == appID {
			return cr.SuiteID
		}
	}
	return e.st.nextID()
}

func (c *call) checkRun() (*checkRun, error) {
	id, err := strconv.ParseInt(c.params["check_run_id"], 10, 64)
	if err != nil {
		return nil, errNotFound()
	}
	cr := c.repo.CheckRuns[id]
	if cr == nil {
		return nil, errNotFound()
	}
	return cr, nil
}

func (e *Emulator) getCheckRun(w http.ResponseWriter, r *http.Request, c *call) {
	cr, err := c.checkRun()
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, e.renderCheckRun(c.repo, cr))
}

func (e *Emulator) updateCheckRun(w http.ResponseWriter, r *http.Request, c *call) {
	cr, err := c.checkRun()
	if err != nil {
		writeError(w, err)
		return
	}
	var req checkRunRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	next := *cr
	wasCompleted := cr.Status == "completed"
	if err := e.applyCheckRun(&next, &req); err != nil {
		writeError(w, err)
		return
	}
	*cr = next
	c.mutated = true
	rendered := e.renderCheckRun(c.repo, cr)
	if cr.Status == "completed" && !wasCompleted {
		e.emit("check_run", "completed", c.repo, c.who.actor(), obj{"check_run": e.hookCheckRun(c.repo, cr)})
	}
	writeJSON(w, http.StatusOK, rendered)
}

func (e *Emulator) listCheckRunsForRef(w http.ResponseWriter, r *http.Request, c *call) {
	sha, ok := e.resolveRef(r.Context(), c.repo, c.params["ref"])
	if !ok {
		writeError(w, errUnprocessable("No commit found for SHA: "+c.params["ref"]))
		return
	}
	q := r.URL.Query()
	var list []*checkRun
	for _, cr := range c.repo.CheckRuns {
		if cr.HeadSHA != sha {
			continue
		}
		if n := q.Get("check_name"); n != "" && cr.Name != n {
			continue
		}
		if s := q.Get("status"); s != "" && cr.Status != s {
			continue
		}
		list = append(list, cr)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].ID > list[j].ID })
	if q.Get("filter") != "all" {
		// "latest" (the default) keeps the newest run of each name.
		seen := map[string]bool{}
		kept := list[:0]
		for _, cr := range list {
			if !seen[cr.Name] {
				seen[cr.Name] = true
				kept = append(kept, cr)
			}
		}
		list = kept
	}
	out, err := pageOf(e, w, r, list, func(cr *checkRun) obj { return e.renderCheckRun(c.repo, cr) })
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, obj{"total_count": len(list), "check_runs": out})
}

// hookCheckRun renders a check run as webhooks carry it: the whole check suite instead
// of its ID, and details_url always a string.
func (e *Emulator) hookCheckRun(rp *repo, cr *checkRun) obj {
	o := e.renderCheckRun(rp, cr)
	if cr.DetailsURL == "" {
		o["details_url"] = o["html_url"]
	}
	status, conclusion := "completed", "success"
	var last time.Time
	for _, other := range rp.CheckRuns {
		if other.SuiteID != cr.SuiteID {
			continue
		}
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
	for n, p := range rp.Pulls {
		if p.HeadSHA == cr.HeadSHA && rp.Issues[n].State == "open" {
			branch = p.Head
		}
	}
	o["check_suite"] = obj{
		"id": cr.SuiteID, "node_id": nodeID("CS", cr.SuiteID), "head_branch": nilIfEmpty(branch),
		"head_sha": cr.HeadSHA, "status": status, "conclusion": nilIfEmpty(conclusion),
		"url":    e.baseURL + "/repos/" + rp.fullName() + "/check-suites/" + strconv.FormatInt(cr.SuiteID, 10),
		"before": nil, "after": cr.HeadSHA, "pull_requests": o["pull_requests"], "app": o["app"],
		"created_at": ts(cr.StartedAt), "updated_at": ts(last),
	}
	return o
}
