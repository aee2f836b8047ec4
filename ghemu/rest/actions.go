package rest

import (
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/bumperdev/bumper/ghemu/actions"
	"github.com/bumperdev/bumper/ghemu/apierr"
	"github.com/bumperdev/bumper/ghemu/state"
)

// maxDispatchInputs is GitHub's limit on workflow_dispatch inputs.
const maxDispatchInputs = 25

// dispatchWorkflow creates a workflow run the way GitHub does for workflow_dispatch: the
// workflow file must exist at the ref and declare workflow_dispatch, and the inputs must
// match its declared inputs.
func (a *API) dispatchWorkflow(w http.ResponseWriter, r *http.Request, c *call) {
	var req struct {
		Ref              string         `json:"ref"`
		Inputs           map[string]any `json:"inputs"`
		ReturnRunDetails bool           `json:"return_run_details"`
	}
	if err := apierr.Decode(r, &req); err != nil {
		apierr.Write(w, err)
		return
	}
	if req.Ref == "" {
		apierr.Write(w, apierr.Validation("Workflow", "ref", "missing_field", "ref is required"))
		return
	}
	if len(req.Inputs) > maxDispatchInputs {
		apierr.Write(w, apierr.Unprocessable("inputs are limited to 25 properties"))
		return
	}
	wfPath := c.params["workflow_id"]
	if id, err := strconv.ParseInt(wfPath, 10, 64); err == nil {
		p, ok := c.repo.WorkflowPath(id)
		if !ok {
			apierr.Write(w, apierr.NotFound())
			return
		}
		wfPath = p
	} else {
		wfPath = ".github/workflows/" + path.Base(wfPath)
	}
	sha, ok := a.resolveRef(r.Context(), c.repo, req.Ref)
	if !ok {
		apierr.Write(w, apierr.Unprocessable("No ref found for: "+req.Ref))
		return
	}
	raw, _, err := a.git.ReadFile(r.Context(), c.repo.Owner, c.repo.Name, sha, wfPath)
	if isNotFound(err) {
		apierr.Write(w, apierr.NotFound())
		return
	}
	if err != nil {
		apierr.Write(w, err)
		return
	}
	wf, err := actions.ParseWorkflow(raw)
	if err != nil {
		apierr.Write(w, apierr.Unprocessable(err.Error()))
		return
	}
	inputs, err := wf.Inputs(req.Inputs)
	if err != nil {
		apierr.Write(w, apierr.Unprocessable(err.Error()))
		return
	}
	branch := strings.TrimPrefix(req.Ref, "refs/heads/")
	run := a.actions.Dispatch(c.st, c.repo, wf, wfPath, branch, sha, c.who.actor(), inputs)
	if req.ReturnRunDetails {
		base := c.st.BaseURL()
		apierr.WriteJSON(w, http.StatusOK, obj{"workflow_run_id": run.ID,
			"run_url":  base + "/repos/" + c.repo.FullName() + "/actions/runs/" + strconv.FormatInt(run.ID, 10),
			"html_url": base + "/" + c.repo.FullName() + "/actions/runs/" + strconv.FormatInt(run.ID, 10)})
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) listRuns(w http.ResponseWriter, r *http.Request, c *call) {
	q := r.URL.Query()
	var list []*state.WorkflowRun
	for _, run := range c.repo.Runs() {
		if s := q.Get("status"); s != "" && run.Status != s && run.Conclusion != s {
			continue
		}
		if ev := q.Get("event"); ev != "" && run.Event != ev {
			continue
		}
		if b := q.Get("branch"); b != "" && run.Ref != b {
			continue
		}
		if ac := q.Get("actor"); ac != "" && !strings.EqualFold(run.Actor, ac) {
			continue
		}
		list = append(list, run)
	}
	slices.Reverse(list) // newest first
	out, err := pageOf(c, w, r, list, func(run *state.WorkflowRun) obj { return c.rn.Run(c.repo, run) })
	if err != nil {
		apierr.Write(w, err)
		return
	}
	apierr.WriteJSON(w, http.StatusOK, obj{"total_count": len(list), "workflow_runs": out})
}

func (c *call) run() (*state.WorkflowRun, error) {
	id, err := strconv.ParseInt(c.params["run_id"], 10, 64)
	if err != nil {
		return nil, apierr.NotFound()
	}
	run := c.repo.Run(id)
	if run == nil {
		return nil, apierr.NotFound()
	}
	return run, nil
}

func (a *API) getRun(w http.ResponseWriter, r *http.Request, c *call) {
	run, err := c.run()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	apierr.WriteJSON(w, http.StatusOK, c.rn.Run(c.repo, run))
}

func (a *API) listRunJobs(w http.ResponseWriter, r *http.Request, c *call) {
	run, err := c.run()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	if _, _, err := page(w, r, c.st.BaseURL(), 1); err != nil {
		apierr.Write(w, err)
		return
	}
	apierr.WriteJSON(w, http.StatusOK, obj{"total_count": 1, "jobs": []obj{c.rn.Job(c.repo, run)}})
}

// runByJob finds the run whose (only) job has the job_id parameter.
func (c *call) runByJob() (*state.WorkflowRun, error) {
	id, err := strconv.ParseInt(c.params["job_id"], 10, 64)
	if err != nil {
		return nil, apierr.NotFound()
	}
	run := c.repo.RunByJob(id)
	if run == nil {
		return nil, apierr.NotFound()
	}
	return run, nil
}

func (a *API) getJob(w http.ResponseWriter, r *http.Request, c *call) {
	run, err := c.runByJob()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	apierr.WriteJSON(w, http.StatusOK, c.rn.Job(c.repo, run))
}

// downloadJobLogs answers as GitHub does: 302 to a short-lived download URL that needs
// no credentials. Only jobs the local runner executed have a log.
func (a *API) downloadJobLogs(w http.ResponseWriter, r *http.Request, c *call) {
	run, err := c.runByJob()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	if run.Dir == "" {
		apierr.Write(w, apierr.NotFound())
		return
	}
	w.Header().Set("Location", a.actions.LogURL(c.st, run.JobID))
	w.WriteHeader(http.StatusFound)
}

// cancelRun is POST /actions/runs/{id}/cancel (actions.Cancel). GitHub answers 202
// before the run has completed.
func (a *API) cancelRun(w http.ResponseWriter, r *http.Request, c *call) {
	run, err := c.run()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	if run.Status == "completed" {
		apierr.Write(w, apierr.New(http.StatusConflict, "Cannot cancel a workflow run that is completed."))
		return
	}
	if err := a.actions.Cancel(c.st, c.repo, run); err != nil {
		apierr.Write(w, err)
		return
	}
	apierr.WriteJSON(w, http.StatusAccepted, obj{})
}
