package ghemu

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// controlPrefix holds the routes that are the emulator's own, not GitHub's: they do what
// GitHub's UI or its Actions runners would do (move a workflow run, hand a run its OIDC
// token, ask to re-run a check). They need no credential beyond what each says.
const controlPrefix = "/_emulator/"

// RunUpdate moves a workflow run, as a runner picking it up and finishing it would.
type RunUpdate struct {
	Status     string `json:"status"`     // in_progress or completed
	Conclusion string `json:"conclusion"` // with completed: success, failure, cancelled, ...
	RunnerName string `json:"runner_name"`

	// neverStarted completes a queued run without passing through in_progress, as a
	// run cancelled before any runner took it does on GitHub.
	neverStarted bool
}

// UpdateRun moves a workflow run forward and sends the workflow_run and workflow_job
// webhooks GitHub would. Runs only move forward: queued → in_progress → completed. A
// run the emulator's local runner is executing cannot be moved by hand: cancel it.
func (e *Emulator) UpdateRun(owner, repoName string, runID int64, u RunUpdate) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	rp := e.st.repoByName(owner, repoName)
	if rp == nil {
		return fmt.Errorf("no repository %s/%s", owner, repoName)
	}
	run := rp.Runs[runID]
	if run == nil {
		return fmt.Errorf("no workflow run %d in %s/%s", runID, owner, repoName)
	}
	if lr := e.localRunLocked(runID); lr != nil && lr.started {
		return fmt.Errorf("run %d is being executed by the emulator's runner; cancel it instead (POST /repos/%s/actions/runs/%d/cancel)", runID, rp.fullName(), runID)
	}
	return e.moveRunLocked(rp, run, u)
}

// moveRunLocked is UpdateRun's work, shared with the local runner and the cancel route,
// so that every path sends the same webhooks. Callers hold e.mu.
func (e *Emulator) moveRunLocked(rp *repo, run *workflowRun, u RunUpdate) error {
	order := map[string]int{"queued": 0, "in_progress": 1, "completed": 2}
	next, ok := order[u.Status]
	if !ok || u.Status == "queued" {
		return fmt.Errorf("status %q: use in_progress or completed", u.Status)
	}
	if next <= order[run.Status] {
		return fmt.Errorf("run %d is already %s; runs only move forward", run.ID, run.Status)
	}
	if u.Status == "completed" && !checkConclusions[u.Conclusion] {
		return fmt.Errorf("conclusion %q: use one of success, failure, neutral, cancelled, skipped, stale, timed_out or action_required", u.Conclusion)
	}
	skipStart := u.neverStarted && run.Status == "queued" && u.Status == "completed"
	if u.RunnerName != "" {
		run.RunnerName = u.RunnerName
	} else if run.RunnerName == "" && !skipStart {
		run.RunnerName = "bumper-runner-1"
	}
	now := e.timestamp()
	if run.Status == "queued" && !skipStart {
		run.Status, run.StartedAt, run.UpdatedAt = "in_progress", now, now
		e.emit("workflow_run", "in_progress", rp, run.Actor, obj{"workflow_run": e.renderRun(rp, run), "workflow": e.renderWorkflow(rp, run)})
		e.emit("workflow_job", "in_progress", rp, run.Actor, obj{"workflow_job": e.renderJob(rp, run)})
	}
	if u.Status == "completed" {
		run.Status, run.Conclusion, run.UpdatedAt = "completed", u.Conclusion, now
		e.emit("workflow_job", "completed", rp, run.Actor, obj{"workflow_job": e.renderJob(rp, run)})
		e.emit("workflow_run", "completed", rp, run.Actor, obj{"workflow_run": e.renderRun(rp, run), "workflow": e.renderWorkflow(rp, run)})
	}
	e.saveLocked()
	e.runsChangedLocked()
	return nil
}

// RunInfo is what a runner learns about a dispatched run, and what became of it.
type RunInfo struct {
	ID               int64             `json:"id"`
	Repository       string            `json:"repository"`
	WorkflowPath     string            `json:"workflow_path"`
	Ref              string            `json:"ref"`
	SHA              string            `json:"sha"`
	Actor            string            `json:"actor"`
	Status           string            `json:"status"`
	Conclusion       string            `json:"conclusion,omitempty"`
	JobID            int64             `json:"job_id"`
	RunnerName       string            `json:"runner_name,omitempty"`
	Inputs           map[string]string `json:"inputs"`
	OIDCRequestURL   string            `json:"oidc_request_url"`
	OIDCRequestToken string            `json:"oidc_request_token"`
	// LocalRunner is set when the emulator's own runner (Options.Runner) took the run.
	// ExitCode and Outputs are known once it completed: the command's exit status
	// (128+n when signal n killed it; absent when it never started) and its
	// GITHUB_OUTPUT. Its log and summary are read with RunLog and RunSummary.
	LocalRunner bool              `json:"local_runner,omitempty"`
	ExitCode    *int              `json:"exit_code,omitempty"`
	Outputs     map[string]string `json:"outputs,omitempty"`
}

// Runs lists a repository's workflow runs with what a runner needs to execute them,
// including the ACTIONS_ID_TOKEN_REQUEST_URL/TOKEN pair of each.
func (e *Emulator) Runs(owner, repoName string) ([]RunInfo, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	rp := e.st.repoByName(owner, repoName)
	if rp == nil {
		return nil, fmt.Errorf("no repository %s/%s", owner, repoName)
	}
	var out []RunInfo
	for _, run := range rp.Runs {
		out = append(out, e.runInfo(rp, run))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Run is one workflow run, as Runs lists it.
func (e *Emulator) Run(owner, repoName string, runID int64) (RunInfo, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	rp, run, err := e.findRunLocked(owner, repoName, runID)
	if err != nil {
		return RunInfo{}, err
	}
	return e.runInfo(rp, run), nil
}

// WaitRun waits until the run has completed, however it completes (the local runner,
// the cancel route, the control API), and returns it. A run the local runner executed
// has its log, outputs and summary in place by then.
func (e *Emulator) WaitRun(ctx context.Context, owner, repoName string, runID int64) (RunInfo, error) {
	for {
		e.mu.Lock()
		rp, run, err := e.findRunLocked(owner, repoName, runID)
		if err != nil {
			e.mu.Unlock()
			return RunInfo{}, err
		}
		info, changed := e.runInfo(rp, run), e.runsChanged
		e.mu.Unlock()
		if info.Status == "completed" {
			return info, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return info, fmt.Errorf("run %d is still %s: %w", runID, info.Status, ctx.Err())
		}
	}
}

// runsChangedLocked wakes WaitRun callers. Callers hold e.mu.
func (e *Emulator) runsChangedLocked() {
	close(e.runsChanged)
	e.runsChanged = make(chan struct{})
}

func (e *Emulator) findRunLocked(owner, repoName string, runID int64) (*repo, *workflowRun, error) {
	rp := e.st.repoByName(owner, repoName)
	if rp == nil {
		return nil, nil, fmt.Errorf("no repository %s/%s", owner, repoName)
	}
	run := rp.Runs[runID]
	if run == nil {
		return nil, nil, fmt.Errorf("no workflow run %d in %s/%s", runID, owner, repoName)
	}
	return rp, run, nil
}

// runInfo is a copy of what the emulator holds of a run: the caller may change its maps
// while the emulator keeps (and saves) its own.
func (e *Emulator) runInfo(rp *repo, run *workflowRun) RunInfo {
	info := RunInfo{ID: run.ID, Repository: rp.fullName(), WorkflowPath: run.WorkflowPath,
		Ref: "refs/heads/" + run.Ref, SHA: run.HeadSHA, Actor: run.Actor, Status: run.Status,
		Conclusion: run.Conclusion, JobID: run.JobID, RunnerName: run.RunnerName,
		Inputs:           maps.Clone(run.Inputs),
		OIDCRequestURL:   e.oidcRequestURL(run),
		OIDCRequestToken: run.OIDCRequestToken,
		LocalRunner:      run.LocalRunner, Outputs: maps.Clone(run.Outputs)}
	if run.ExitCode != nil {
		code := *run.ExitCode
		info.ExitCode = &code
	}
	return info
}

func (e *Emulator) oidcRequestURL(run *workflowRun) string {
	return fmt.Sprintf("%s%sactions/runs/%d/id-token", e.baseURL, controlPrefix, run.ID)
}

func (e *Emulator) serveControl(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(strings.TrimPrefix(r.URL.Path, controlPrefix), "/"), "/")
	switch {
	// GET /_emulator/actions/runs/{id}/id-token?audience=A, bearer = the run's request
	// token: what ACTIONS_ID_TOKEN_REQUEST_URL answers on GitHub's runners.
	case r.Method == http.MethodGet && len(parts) == 4 && parts[0] == "actions" && parts[1] == "runs" && parts[3] == "id-token":
		e.serveRunIDToken(w, r, parts[2])
	// GET /_emulator/repos/{owner}/{repo}/actions/runs: the runs with their OIDC request pairs.
	case r.Method == http.MethodGet && len(parts) == 5 && parts[0] == "repos" && parts[3] == "actions" && parts[4] == "runs":
		runs, err := e.Runs(parts[1], parts[2])
		if err != nil {
			writeError(w, errNotFound())
			return
		}
		writeJSON(w, http.StatusOK, runs)
	// GET /_emulator/actions/jobs/{id}/logs?expires=…&signature=…: where the REST job
	// logs route redirects, as GitHub's signed log URLs.
	case r.Method == http.MethodGet && len(parts) == 4 && parts[0] == "actions" && parts[1] == "jobs" && parts[3] == "logs":
		e.serveSignedLog(w, r, parts[2])
	// GET /_emulator/repos/{owner}/{repo}/actions/runs/{id}[/log|/summary][?wait=DURATION].
	case r.Method == http.MethodGet && (len(parts) == 6 || len(parts) == 7) && parts[0] == "repos" && parts[3] == "actions" && parts[4] == "runs":
		id, err := strconv.ParseInt(parts[5], 10, 64)
		if err != nil {
			writeError(w, errNotFound())
			return
		}
		e.serveRunControl(w, r, parts[1], parts[2], id, strings.Join(parts[6:], ""))
	// PATCH /_emulator/repos/{owner}/{repo}/actions/runs/{id} {"status","conclusion"}.
	case r.Method == http.MethodPatch && len(parts) == 6 && parts[0] == "repos" && parts[3] == "actions" && parts[4] == "runs":
		id, err := strconv.ParseInt(parts[5], 10, 64)
		if err != nil {
			writeError(w, errNotFound())
			return
		}
		var u RunUpdate
		if err := decode(r, &u); err != nil {
			writeError(w, err)
			return
		}
		if err := e.UpdateRun(parts[1], parts[2], id, u); err != nil {
			writeError(w, errUnprocessable(err.Error()))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	// POST /_emulator/repos/{owner}/{repo}/check-runs/{id}/rerequest: "Re-run" in the UI.
	case r.Method == http.MethodPost && len(parts) == 6 && parts[0] == "repos" && parts[3] == "check-runs" && parts[5] == "rerequest":
		id, err := strconv.ParseInt(parts[4], 10, 64)
		if err != nil {
			writeError(w, errNotFound())
			return
		}
		if err := e.RerequestCheckRun(parts[1], parts[2], id, r.URL.Query().Get("user")); err != nil {
			writeError(w, errUnprocessable(err.Error()))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	// PUT|DELETE /_emulator/repos/{owner}/{repo}/branches/{branch...}/protection: what an
	// admin does in the branch's settings (SetBranchProtection, RemoveBranchProtection).
	case len(parts) >= 6 && parts[0] == "repos" && parts[3] == "branches" && parts[len(parts)-1] == "protection":
		e.serveProtectionControl(w, r, parts[1], parts[2], strings.Join(parts[4:len(parts)-1], "/"))
	// POST /_emulator/app/installations {"account","repositories"}: the App's "Install" page (InstallApp).
	case r.Method == http.MethodPost && len(parts) == 2 && parts[0] == "app" && parts[1] == "installations":
		e.serveInstallControl(w, r)
	default:
		writeError(w, errNotFound())
	}
}

func (e *Emulator) serveRunIDToken(w http.ResponseWriter, r *http.Request, idStr string) {
	id, err := strconv.ParseInt(idStr, 10, 64)
	if err != nil {
		writeError(w, errNotFound())
		return
	}
	bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	e.mu.Lock()
	defer e.mu.Unlock()
	var rp *repo
	var run *workflowRun
	for _, cand := range e.st.Repos {
		if cand.Runs[id] != nil {
			rp, run = cand, cand.Runs[id]
		}
	}
	if run == nil || !ok || bearer != run.OIDCRequestToken {
		writeError(w, errBadCredentials())
		return
	}
	if run.Status == "completed" {
		writeError(w, newError(http.StatusForbidden, "the run has completed; its ID token request token expired"))
		return
	}
	aud := r.URL.Query().Get("audience")
	if aud == "" {
		aud = e.baseURL + "/" + rp.Owner
	}
	tok, err := e.mintOIDCLocked(OIDCClaims{
		Audience: aud, Repository: rp.fullName(), RepositoryID: strconv.FormatInt(rp.ID, 10),
		WorkflowRef: rp.fullName() + "/" + run.WorkflowPath + "@refs/heads/" + run.Ref,
		Ref:         "refs/heads/" + run.Ref, SHA: run.HeadSHA, RunID: strconv.FormatInt(run.ID, 10),
		Actor: run.Actor,
	})
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, obj{"count": 1, "value": tok})
}

// RerequestCheckRun sends check_run "rerequested", as a user pressing "Re-run" does.
func (e *Emulator) RerequestCheckRun(owner, repoName string, id int64, by string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	rp := e.st.repoByName(owner, repoName)
	if rp == nil || rp.CheckRuns[id] == nil {
		return fmt.Errorf("no check run %d in %s/%s", id, owner, repoName)
	}
	if by == "" {
		by = rp.Owner
	}
	e.emit("check_run", "rerequested", rp, by, obj{"check_run": e.hookCheckRun(rp, rp.CheckRuns[id])})
	return nil
}

// maxControlWait bounds ?wait= on the run control route.
const maxControlWait = 10 * time.Minute

// serveRunControl serves one run (what = ""), its log or its summary. ?wait=DURATION
// first waits up to that long for the run to complete.
func (e *Emulator) serveRunControl(w http.ResponseWriter, r *http.Request, owner, repoName string, id int64, what string) {
	if s := r.URL.Query().Get("wait"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			writeError(w, errValidation("", "wait", "invalid", "wait must be a duration such as 30s"))
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), min(d, maxControlWait))
		_, err = e.WaitRun(ctx, owner, repoName, id)
		cancel()
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			writeError(w, errNotFound())
			return
		}
	}
	switch what {
	case "":
		info, err := e.Run(owner, repoName, id)
		if err != nil {
			writeError(w, errNotFound())
			return
		}
		writeJSON(w, http.StatusOK, info)
	case "log":
		b, err := e.RunLog(owner, repoName, id)
		if err != nil {
			writeError(w, errNotFound())
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write(b)
	case "summary":
		s, err := e.RunSummary(owner, repoName, id)
		if err != nil {
			writeError(w, errNotFound())
			return
		}
		w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
		_, _ = w.Write([]byte(s))
	default:
		writeError(w, errNotFound())
	}
}
