// Package actions is the emulator's GitHub Actions: workflow runs created by
// workflow_dispatch, their life (queued → in_progress → completed, with the
// workflow_run and workflow_job webhooks GitHub sends), the local runner that executes
// them as GitHub's runner would, their job logs, and the control routes a runner uses
// (the run's OIDC ID token, the signed log URL, moving a run by hand).
//
// Concurrency: the runs are the world's (package state) and change only inside
// state.Store.Do. Actions' own lock guards the local runner's bookkeeping (which runs
// it holds, whether each started, whether it is closing) and the channel that wakes
// WaitRun; it is taken inside Store.Do or alone, never around it. A run's process runs
// with no lock held.
package actions

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/ghemu/oidc"
	"github.com/bumperdev/bumper/ghemu/render"
	"github.com/bumperdev/bumper/ghemu/state"
	"github.com/bumperdev/bumper/ghemu/webhook"
)

// ControlPrefix holds the routes that are the emulator's own, not GitHub's: they do
// what GitHub's UI or its Actions runners would do (move a workflow run, hand a run its
// OIDC token, ask to re-run a check). The runner's URLs (ID token, signed job logs) are
// under it.
const ControlPrefix = "/_emulator/"

// RunUpdate moves a workflow run, as a runner picking it up and finishing it would.
type RunUpdate struct {
	Status     string `json:"status"`     // in_progress or completed
	Conclusion string `json:"conclusion"` // with completed: success, failure, cancelled, ...
	RunnerName string `json:"runner_name"`

	// neverStarted completes a queued run without passing through in_progress, as a
	// run cancelled before any runner took it does on GitHub.
	neverStarted bool
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

// Actions runs the world's workflow runs.
type Actions struct {
	store   *state.Store
	hooks   *webhook.Sender
	commits *render.Commits
	oidc    *oidc.Issuer
	log     zerolog.Logger
	// logKey signs the job log download URLs.
	logKey []byte
	// runner executes dispatched runs; nil without a Runner.
	runner *localRunner

	mu sync.Mutex
	// changed is closed, and replaced, whenever a workflow run moves (WaitRun).
	changed chan struct{}
	// recovered is set once the runs an earlier process left unfinished were settled.
	recovered bool
}

// Options configure New.
type Options struct {
	Store   *state.Store
	Hooks   *webhook.Sender
	Commits *render.Commits
	OIDC    *oidc.Issuer
	Logger  zerolog.Logger
	// Runner, when set, executes dispatched runs; StateDir is where its work directory
	// goes by default.
	Runner   *Runner
	StateDir string
}

// New prepares the emulator's Actions; with a Runner it checks the runner's options
// and creates its work directory.
func New(opts Options) (*Actions, error) {
	a := &Actions{store: opts.Store, hooks: opts.Hooks, commits: opts.Commits, oidc: opts.OIDC,
		log: opts.Logger, logKey: []byte(state.RandomToken("")), changed: make(chan struct{})}
	if opts.Runner != nil {
		r, err := newLocalRunner(*opts.Runner, opts.StateDir)
		if err != nil {
			return nil, err
		}
		a.runner = r
	}
	return a, nil
}

// UpdateRun moves a workflow run forward and sends the workflow_run and workflow_job
// webhooks GitHub would. Runs only move forward: queued → in_progress → completed. A
// run the emulator's local runner is executing cannot be moved by hand: cancel it.
func (a *Actions) UpdateRun(owner, repoName string, runID int64, u RunUpdate) error {
	var err error
	a.store.Do(func(w *state.World) {
		var rp *state.Repo
		var run *state.WorkflowRun
		if rp, run, err = findRun(w, owner, repoName, runID); err != nil {
			return
		}
		if lr := a.localRun(runID); lr != nil && a.started(lr) {
			err = fmt.Errorf("run %d is being executed by the emulator's runner; cancel it instead (POST /repos/%s/actions/runs/%d/cancel)", runID, rp.FullName(), runID)
			return
		}
		err = a.Move(w, rp, run, u)
	})
	return err
}

// Move is UpdateRun's work inside the caller's transaction, shared with the local
// runner and the cancel route, so that every path sends the same webhooks.
func (a *Actions) Move(w *state.World, rp *state.Repo, run *state.WorkflowRun, u RunUpdate) error {
	order := map[string]int{"queued": 0, "in_progress": 1, "completed": 2}
	next, ok := order[u.Status]
	if !ok || u.Status == "queued" {
		return fmt.Errorf("status %q: use in_progress or completed", u.Status)
	}
	if next <= order[run.Status] {
		return fmt.Errorf("run %d is already %s; runs only move forward", run.ID, run.Status)
	}
	if u.Status == "completed" && !state.ValidConclusion(u.Conclusion) {
		return fmt.Errorf("conclusion %q: use one of success, failure, neutral, cancelled, skipped, stale, timed_out or action_required", u.Conclusion)
	}
	skipStart := u.neverStarted && run.Status == "queued" && u.Status == "completed"
	if u.RunnerName != "" {
		run.RunnerName = u.RunnerName
	} else if run.RunnerName == "" && !skipStart {
		run.RunnerName = "bumper-runner-1"
	}
	rn := render.New(w, a.commits)
	now := w.Timestamp()
	if run.Status == "queued" && !skipStart {
		run.Status, run.StartedAt, run.UpdatedAt = "in_progress", now, now
		a.hooks.Emit(w, "workflow_run", "in_progress", rp, run.Actor, render.Obj{"workflow_run": rn.Run(rp, run), "workflow": rn.Workflow(rp, run)})
		a.hooks.Emit(w, "workflow_job", "in_progress", rp, run.Actor, render.Obj{"workflow_job": rn.Job(rp, run)})
	}
	if u.Status == "completed" {
		run.Status, run.Conclusion, run.UpdatedAt = "completed", u.Conclusion, now
		a.hooks.Emit(w, "workflow_job", "completed", rp, run.Actor, render.Obj{"workflow_job": rn.Job(rp, run)})
		a.hooks.Emit(w, "workflow_run", "completed", rp, run.Actor, render.Obj{"workflow_run": rn.Run(rp, run), "workflow": rn.Workflow(rp, run)})
	}
	w.MarkChanged()
	a.mu.Lock()
	close(a.changed)
	a.changed = make(chan struct{})
	a.mu.Unlock()
	return nil
}

// Runs lists a repository's workflow runs with what a runner needs to execute them,
// including the ACTIONS_ID_TOKEN_REQUEST_URL/TOKEN pair of each.
func (a *Actions) Runs(owner, repoName string) ([]RunInfo, error) {
	var out []RunInfo
	var err error
	a.store.Do(func(w *state.World) {
		rp := w.Repo(owner, repoName)
		if rp == nil {
			err = fmt.Errorf("no repository %s/%s", owner, repoName)
			return
		}
		for _, run := range rp.Runs() {
			out = append(out, runInfo(w, rp, run))
		}
	})
	return out, err
}

// Run is one workflow run, as Runs lists it.
func (a *Actions) Run(owner, repoName string, runID int64) (RunInfo, error) {
	var info RunInfo
	var err error
	a.store.Do(func(w *state.World) {
		var rp *state.Repo
		var run *state.WorkflowRun
		if rp, run, err = findRun(w, owner, repoName, runID); err == nil {
			info = runInfo(w, rp, run)
		}
	})
	return info, err
}

// WaitRun waits until the run has completed, however it completes (the local runner,
// the cancel route, the control API), and returns it. A run the local runner executed
// has its log, outputs and summary in place by then.
func (a *Actions) WaitRun(ctx context.Context, owner, repoName string, runID int64) (RunInfo, error) {
	for {
		var info RunInfo
		var changed chan struct{}
		var err error
		a.store.Do(func(w *state.World) {
			var rp *state.Repo
			var run *state.WorkflowRun
			if rp, run, err = findRun(w, owner, repoName, runID); err != nil {
				return
			}
			info = runInfo(w, rp, run)
			a.mu.Lock()
			changed = a.changed
			a.mu.Unlock()
		})
		if err != nil {
			return RunInfo{}, err
		}
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

func findRun(w *state.World, owner, repoName string, runID int64) (*state.Repo, *state.WorkflowRun, error) {
	rp := w.Repo(owner, repoName)
	if rp == nil {
		return nil, nil, fmt.Errorf("no repository %s/%s", owner, repoName)
	}
	run := rp.Run(runID)
	if run == nil {
		return nil, nil, fmt.Errorf("no workflow run %d in %s/%s", runID, owner, repoName)
	}
	return rp, run, nil
}

// runInfo is a copy of what the world holds of a run: the caller may change its maps
// while the world keeps (and saves) its own.
func runInfo(w *state.World, rp *state.Repo, run *state.WorkflowRun) RunInfo {
	info := RunInfo{ID: run.ID, Repository: rp.FullName(), WorkflowPath: run.WorkflowPath,
		Ref: "refs/heads/" + run.Ref, SHA: run.HeadSHA, Actor: run.Actor, Status: run.Status,
		Conclusion: run.Conclusion, JobID: run.JobID, RunnerName: run.RunnerName,
		Inputs:           maps.Clone(run.Inputs),
		OIDCRequestURL:   oidcRequestURL(w, run),
		OIDCRequestToken: run.OIDCRequestToken,
		LocalRunner:      run.LocalRunner, Outputs: maps.Clone(run.Outputs)}
	if run.ExitCode != nil {
		code := *run.ExitCode
		info.ExitCode = &code
	}
	return info
}

func oidcRequestURL(w *state.World, run *state.WorkflowRun) string {
	return fmt.Sprintf("%s%sactions/runs/%d/id-token", w.BaseURL(), ControlPrefix, run.ID)
}

// Cancel is POST /actions/runs/{id}/cancel on a run not yet completed, inside the
// caller's transaction. A queued run, or one no local process executes, completes as
// cancelled at once; a run the local runner executes is told to stop (SIGINT, SIGTERM,
// SIGKILL to its process group) and completes as cancelled when its process has exited.
func (a *Actions) Cancel(w *state.World, rp *state.Repo, run *state.WorkflowRun) error {
	lr := a.localRun(run.ID)
	if lr == nil || !a.started(lr) {
		if err := a.Move(w, rp, run, RunUpdate{Status: "completed", Conclusion: "cancelled", neverStarted: true}); err != nil {
			return err
		}
	}
	if lr != nil {
		lr.stop(errRunCancelled)
	}
	return nil
}

// RecoverOnce settles, the first time it is called, the local runner's runs an earlier
// emulator process left unfinished in the world: one that was in progress lost its
// runner and fails, as on GitHub; one still queued is started again if this emulator's
// runner takes it. It runs inside the caller's transaction, once the base URL is set.
func (a *Actions) RecoverOnce(w *state.World) {
	a.mu.Lock()
	done := a.recovered
	a.recovered = true
	a.mu.Unlock()
	if done {
		return
	}
	for _, rp := range w.Repos() {
		for _, run := range rp.Runs() {
			if !run.LocalRunner || run.Status == "completed" || a.localRun(run.ID) != nil {
				continue
			}
			switch {
			case run.Status == "in_progress":
				appendJobLog(run, fmt.Sprintf("##[error]The self-hosted runner: %s lost communication with the server. Verify the machine is running and has a healthy network connection.", run.RunnerName))
				if err := a.Move(w, rp, run, RunUpdate{Status: "completed", Conclusion: "failure"}); err != nil {
					a.log.Error().Err(err).Int64("run", run.ID).Msg("local runner: failed to complete an abandoned run")
				}
			case a.runner != nil && a.runner.serves(run.WorkflowPath):
				a.startLocal(rp, run)
			}
		}
	}
}

var (
	errRunCancelled   = errors.New("the run was cancelled")
	errRunTimedOut    = errors.New("the job exceeded its maximum execution time")
	errRunnerShutdown = errors.New("the emulator is shutting down")
)
