package rest

import (
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/bumperdev/bumper/ghemu/apierr"
	"github.com/bumperdev/bumper/ghemu/state"
)

var checkStatuses = map[string]bool{"queued": true, "in_progress": true, "completed": true,
	"waiting": true, "requested": true, "pending": true}

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

func applyCheckRun(st *state.World, cr *state.CheckRun, req *checkRunRequest) error {
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
			return apierr.Validation("CheckRun", "status", "invalid", "status must be queued, in_progress or completed")
		}
		cr.Status = *req.Status
	}
	if req.Conclusion != nil {
		if !state.ValidConclusion(*req.Conclusion) {
			return apierr.Validation("CheckRun", "conclusion", "invalid", "conclusion is not one of GitHub's values")
		}
		cr.Conclusion = *req.Conclusion
		cr.Status = "completed"
	}
	if req.Output != nil {
		o := req.Output
		if o.Title == nil || o.Summary == nil {
			return apierr.Validation("CheckRun", "output", "missing_field", "output needs a title and a summary")
		}
		if len(*o.Summary) > maxCheckOutput || o.Text != nil && len(*o.Text) > maxCheckOutput {
			return apierr.Validation("CheckRun", "output", "custom", "output summary and text are limited to 65535 characters")
		}
		cr.Output.Title, cr.Output.Summary = *o.Title, *o.Summary
		if o.Text != nil {
			cr.Output.Text = *o.Text
		}
	}
	if cr.Status == "completed" {
		if cr.Conclusion == "" {
			return apierr.Validation("CheckRun", "conclusion", "missing_field", "a completed check run needs a conclusion")
		}
		if cr.CompletedAt == nil {
			t := st.Timestamp()
			if req.CompletedAt != nil {
				t = req.CompletedAt.UTC()
			}
			cr.CompletedAt = &t
		}
	}
	if cr.Name == "" {
		return apierr.Validation("CheckRun", "name", "missing_field", "name is required")
	}
	return nil
}

func (a *API) createCheckRun(w http.ResponseWriter, r *http.Request, c *call) {
	var req checkRunRequest
	if err := apierr.Decode(r, &req); err != nil {
		apierr.Write(w, err)
		return
	}
	if req.Name == nil || req.HeadSHA == nil {
		apierr.Write(w, apierr.Validation("CheckRun", "head_sha", "missing_field", "name and head_sha are required"))
		return
	}
	if !a.commitExists(r.Context(), c.repo, *req.HeadSHA) {
		apierr.Write(w, apierr.Unprocessable("No commit found for SHA: "+*req.HeadSHA))
		return
	}
	cr := &state.CheckRun{ID: c.st.NextID(), HeadSHA: *req.HeadSHA, Status: "queued", StartedAt: c.st.Timestamp()}
	cr.AppID, cr.AppSlug = appOf(c.st, c.who)
	cr.SuiteID = suiteFor(c.st, c.repo, cr.HeadSHA, cr.AppID)
	if err := applyCheckRun(c.st, cr, &req); err != nil {
		apierr.Write(w, err)
		return
	}
	c.repo.AddCheckRun(cr)
	rendered := c.rn.CheckRun(c.repo, cr)
	c.emit("check_run", "created", c.repo, c.who.actor(), obj{"check_run": c.rn.HookCheckRun(c.repo, cr)})
	if cr.Status == "completed" {
		c.emit("check_run", "completed", c.repo, c.who.actor(), obj{"check_run": c.rn.HookCheckRun(c.repo, cr)})
	}
	apierr.WriteJSON(w, http.StatusCreated, rendered)
}

// suiteFor gives an App's check suite on a commit: one suite per (App, head SHA).
func suiteFor(st *state.World, rp *state.Repo, sha string, appID int64) int64 {
	for _, cr := range rp.CheckRunsOn(sha) {
		if cr.AppID == appID {
			return cr.SuiteID
		}
	}
	return st.NextID()
}

func (c *call) checkRun() (*state.CheckRun, error) {
	id, err := strconv.ParseInt(c.params["check_run_id"], 10, 64)
	if err != nil {
		return nil, apierr.NotFound()
	}
	cr := c.repo.CheckRun(id)
	if cr == nil {
		return nil, apierr.NotFound()
	}
	return cr, nil
}

func (a *API) getCheckRun(w http.ResponseWriter, r *http.Request, c *call) {
	cr, err := c.checkRun()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	apierr.WriteJSON(w, http.StatusOK, c.rn.CheckRun(c.repo, cr))
}

func (a *API) updateCheckRun(w http.ResponseWriter, r *http.Request, c *call) {
	cr, err := c.checkRun()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	var req checkRunRequest
	if err := apierr.Decode(r, &req); err != nil {
		apierr.Write(w, err)
		return
	}
	next := *cr
	wasCompleted := cr.Status == "completed"
	if err := applyCheckRun(c.st, &next, &req); err != nil {
		apierr.Write(w, err)
		return
	}
	*cr = next
	c.st.MarkChanged()
	rendered := c.rn.CheckRun(c.repo, cr)
	if cr.Status == "completed" && !wasCompleted {
		c.emit("check_run", "completed", c.repo, c.who.actor(), obj{"check_run": c.rn.HookCheckRun(c.repo, cr)})
	}
	apierr.WriteJSON(w, http.StatusOK, rendered)
}

func (a *API) listCheckRunsForRef(w http.ResponseWriter, r *http.Request, c *call) {
	sha, ok := a.resolveRef(r.Context(), c.repo, c.params["ref"])
	if !ok {
		apierr.Write(w, apierr.Unprocessable("No commit found for SHA: "+c.params["ref"]))
		return
	}
	q := r.URL.Query()
	var list []*state.CheckRun
	for _, cr := range c.repo.CheckRunsOn(sha) {
		if n := q.Get("check_name"); n != "" && cr.Name != n {
			continue
		}
		if s := q.Get("status"); s != "" && cr.Status != s {
			continue
		}
		list = append(list, cr)
	}
	slices.Reverse(list) // newest first
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
	out, err := pageOf(c, w, r, list, func(cr *state.CheckRun) obj { return c.rn.CheckRun(c.repo, cr) })
	if err != nil {
		apierr.Write(w, err)
		return
	}
	apierr.WriteJSON(w, http.StatusOK, obj{"total_count": len(list), "check_runs": out})
}
