package ghemu

import (
	"net/http"
	"path"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// maxDispatchInputs is GitHub's limit on workflow_dispatch inputs.
const maxDispatchInputs = 25

// workflowFile is the part of a workflow file the emulator reads: its name, its
// workflow_dispatch inputs, and, for the local runner, its first job's id,
// timeout-minutes and whether the permissions grant id-token: write.
type workflowFile struct {
	Name string `yaml:"name"`
	On   struct {
		Dispatch *struct {
			Inputs map[string]struct {
				Required bool `yaml:"required"`
				Default  any  `yaml:"default"`
			} `yaml:"inputs"`
		} `yaml:"workflow_dispatch"`
	} `yaml:"on"`
	Permissions yaml.Node `yaml:"permissions"`
	Jobs        yaml.Node `yaml:"jobs"` // a node, to keep the jobs' order
}

// firstJob reads the first job of the workflow: its id, its timeout-minutes (0 when
// absent or an expression), and whether the job's permissions, or the workflow's when
// the job sets none, grant id-token: write, as GitHub requires before a job may ask for
// an OIDC token.
func (wf *workflowFile) firstJob() (id string, timeoutMinutes float64, idToken bool) {
	perms := &wf.Permissions
	if wf.Jobs.Kind == yaml.MappingNode && len(wf.Jobs.Content) >= 2 {
		id = wf.Jobs.Content[0].Value
		job := wf.Jobs.Content[1]
		for i := 0; job.Kind == yaml.MappingNode && i+1 < len(job.Content); i += 2 {
			switch k, v := job.Content[i].Value, job.Content[i+1]; k {
			case "timeout-minutes":
				if f, err := strconv.ParseFloat(v.Value, 64); err == nil && v.Kind == yaml.ScalarNode && f > 0 {
					timeoutMinutes = f
				}
			case "permissions":
				perms = v
			}
		}
	}
	switch perms.Kind {
	case yaml.ScalarNode:
		idToken = perms.Value == "write-all"
	case yaml.MappingNode:
		for i := 0; i+1 < len(perms.Content); i += 2 {
			if perms.Content[i].Value == "id-token" && perms.Content[i+1].Value == "write" {
				idToken = true
			}
		}
	}
	return id, timeoutMinutes, idToken
}

func (e *Emulator) workflowID(rp *repo, p string) int64 {
	if rp.Workflows == nil {
		rp.Workflows = map[string]int64{}
	}
	if id, ok := rp.Workflows[p]; ok {
		return id
	}
	id := e.st.nextID()
	rp.Workflows[p] = id
	return id
}

// dispatchWorkflow creates a workflow run the way GitHub does for workflow_dispatch: the
// workflow file must exist at the ref and declare workflow_dispatch, and the inputs must
// match its declared inputs.
func (e *Emulator) dispatchWorkflow(w http.ResponseWriter, r *http.Request, c *call) {
	var req struct {
		Ref              string         `json:"ref"`
		Inputs           map[string]any `json:"inputs"`
		ReturnRunDetails bool           `json:"return_run_details"`
	}
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if req.Ref == "" {
		writeError(w, errValidation("Workflow", "ref", "missing_field", "ref is required"))
		return
	}
	if len(req.Inputs) > maxDispatchInputs {
		writeError(w, errUnprocessable("inputs are limited to 25 properties"))
		return
	}
	wfPath := c.params["workflow_id"]
	if id, err := strconv.ParseInt(wfPath, 10, 64); err == nil {
		wfPath = ""
		for p, wid := range c.repo.Workflows {
			if wid == id {
				wfPath = p
			}
		}
		if wfPath == "" {
			writeError(w, errNotFound())
			return
		}
	} else {
		wfPath = ".github/workflows/" + path.Base(wfPath)
	}
	sha, ok := e.resolveRef(r.Context(), c.repo, req.Ref)
	if !ok {
		writeError(w, errUnprocessable("No ref found for: "+req.Ref))
		return
	}
	raw, _, err := e.git.ReadFile(r.Context(), c.repo.Owner, c.repo.Name, sha, wfPath)
	if isNotFound(err) {
		writeError(w, errNotFound())
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	var wf workflowFile
	if err := yaml.Unmarshal(raw, &wf); err != nil {
		writeError(w, errUnprocessable("Workflow file is invalid YAML: "+err.Error()))
		return
	}
	if wf.On.Dispatch == nil {
		writeError(w, errUnprocessable("Workflow does not have 'workflow_dispatch' trigger"))
		return
	}
	inputs := map[string]string{}
	var unexpected []string
	for k, v := range req.Inputs {
		if _, ok := wf.On.Dispatch.Inputs[k]; !ok {
			unexpected = append(unexpected, k)
			continue
		}
		switch tv := v.(type) {
		case string:
			inputs[k] = tv
		case bool, float64:
			inputs[k] = strings.TrimSpace(yamlScalar(tv))
		default:
			writeError(w, errUnprocessable("Input "+k+" must be a string, number or boolean"))
			return
		}
	}
	if len(unexpected) > 0 {
		sort.Strings(unexpected)
		writeError(w, errUnprocessable("Unexpected inputs provided: [\""+strings.Join(unexpected, "\", \"")+"\"]"))
		return
	}
	for name, in := range wf.On.Dispatch.Inputs {
		if _, ok := inputs[name]; ok {
			continue
		}
		if in.Default != nil {
			inputs[name] = strings.TrimSpace(yamlScalar(in.Default))
		} else if in.Required {
			writeError(w, errUnprocessable("Required input '"+name+"' not provided"))
			return
		}
	}
	now := e.timestamp()
	name := wf.Name
	if name == "" {
		name = wfPath
	}
	branch := strings.TrimPrefix(req.Ref, "refs/heads/")
	job, timeout, idToken := wf.firstJob()
	run := &workflowRun{ID: e.st.nextID(), Number: c.repo.NextRunNumber, WorkflowID: e.workflowID(c.repo, wfPath),
		WorkflowPath: wfPath, WorkflowName: name, Ref: branch, HeadSHA: sha, Event: "workflow_dispatch",
		Actor: c.who.actor(), Inputs: inputs, Status: "queued", JobID: e.st.nextID(),
		CreatedAt: now, UpdatedAt: now, StartedAt: now, OIDCRequestToken: randomToken("ghr_"),
		Job: job, TimeoutMinutes: timeout, IDToken: idToken}
	c.repo.NextRunNumber++
	c.repo.Runs[run.ID] = run
	c.mutated = true
	e.emit("workflow_run", "requested", c.repo, run.Actor, obj{"workflow_run": e.renderRun(c.repo, run),
		"workflow": e.renderWorkflow(c.repo, run)})
	e.emit("workflow_job", "queued", c.repo, run.Actor, obj{"workflow_job": e.renderJob(c.repo, run)})
	e.handToRunnerLocked(c.repo, run)
	if req.ReturnRunDetails {
		writeJSON(w, http.StatusOK, obj{"workflow_run_id": run.ID,
			"run_url":  e.baseURL + "/repos/" + c.repo.fullName() + "/actions/runs/" + strconv.FormatInt(run.ID, 10),
			"html_url": e.baseURL + "/" + c.repo.fullName() + "/actions/runs/" + strconv.FormatInt(run.ID, 10)})
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func yamlScalar(v any) string {
	out, err := yaml.Marshal(v)
	if err != nil {
		return ""
	}
	return string(out)
}

func (e *Emulator) listRuns(w http.ResponseWriter, r *http.Request, c *call) {
	q := r.URL.Query()
	var list []*workflowRun
	for _, run := range c.repo.Runs {
		if s := q.Get("status"); s != "" && run.Status != s && run.Conclusion != s {
			continue
		}
		if ev := q.Get("event"); ev != "" && run.Event != ev {
			continue
		}
		if b := q.Get("branch"); b != "" && run.Ref != b {
			continue
		}
		if a := q.Get("actor"); a != "" && !strings.EqualFold(run.Actor, a) {
			continue
		}
		list = append(list, run)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].ID > list[j].ID })
	out, err := pageOf(e, w, r, list, func(run *workflowRun) obj { return e.renderRun(c.repo, run) })
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, obj{"total_count": len(list), "workflow_runs": out})
}

func (c *call) run() (*workflowRun, error) {
	id, err := strconv.ParseInt(c.params["run_id"], 10, 64)
	if err != nil {
		return nil, errNotFound()
	}
	run := c.repo.Runs[id]
	if run == nil {
		return nil, errNotFound()
	}
	return run, nil
}

func (e *Emulator) getRun(w http.ResponseWriter, r *http.Request, c *call) {
	run, err := c.run()
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, e.renderRun(c.repo, run))
}

func (e *Emulator) listRunJobs(w http.ResponseWriter, r *http.Request, c *call) {
	run, err := c.run()
	if err != nil {
		writeError(w, err)
		return
	}
	if _, _, err := page(w, r, e.baseURL, 1); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, obj{"total_count": 1, "jobs": []obj{e.renderJob(c.repo, run)}})
}

// runByJob finds the run whose (only) job has the job_id parameter.
func (c *call) runByJob() (*workflowRun, error) {
	id, err := strconv.ParseInt(c.params["job_id"], 10, 64)
	if err != nil {
		return nil, errNotFound()
	}
	for _, run := range c.repo.Runs {
		if run.JobID == id {
			return run, nil
		}
	}
	return nil, errNotFound()
}

func (e *Emulator) getJob(w http.ResponseWriter, r *http.Request, c *call) {
	run, err := c.runByJob()
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, e.renderJob(c.repo, run))
}

// downloadJobLogs answers as GitHub does: 302 to a short-lived download URL that needs
// no credentials. Only jobs the local runner executed have a log.
func (e *Emulator) downloadJobLogs(w http.ResponseWriter, r *http.Request, c *call) {
	run, err := c.runByJob()
	if err != nil {
		writeError(w, err)
		return
	}
	if run.Dir == "" {
		writeError(w, errNotFound())
		return
	}
	w.Header().Set("Location", e.signedLogURL(run.JobID, e.now().Add(logURLTTL)))
	w.WriteHeader(http.StatusFound)
}

// cancelRun is POST /actions/runs/{id}/cancel. A queued run, or one no local process
// executes, completes as cancelled at once; a run the local runner executes is told to
// stop (SIGINT, SIGTERM, SIGKILL to its process group) and completes as cancelled when
// its process has exited. Either way GitHub answers 202 before the run has completed.
func (e *Emulator) cancelRun(w http.ResponseWriter, r *http.Request, c *call) {
	run, err := c.run()
	if err != nil {
		writeError(w, err)
		return
	}
	if run.Status == "completed" {
		writeError(w, newError(http.StatusConflict, "Cannot cancel a workflow run that is completed."))
		return
	}
	lr := e.localRunLocked(run.ID)
	if lr == nil || !lr.started {
		if err := e.moveRunLocked(c.repo, run, RunUpdate{Status: "completed", Conclusion: "cancelled", neverStarted: true}); err != nil {
			writeError(w, err)
			return
		}
		c.mutated = true
	}
	if lr != nil {
		lr.stop(errRunCancelled)
	}
	writeJSON(w, http.StatusAccepted, obj{})
}
