package actions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/bumperdev/bumper/ghemu/state"
)

// Runner makes the emulator execute dispatched workflow runs itself, standing in for
// GitHub's Actions runner, which cannot run here: each run's job is one process started
// with the environment GitHub's runner gives a step (docs/emulator-actions.md lists it), and the
// run moves queued → in_progress → completed with the webhooks GitHub sends.
type Runner struct {
	// Command is the argv started for each run; Command[0] is looked up in PATH. The
	// process stands for the job's one step: `bumper emulator --runner 'CMD'` makes it
	// sh -e -c 'CMD', as a `run:` step with `shell: sh`.
	Command []string
	// Workflows are the workflow files the runner takes, by file name ("bumper-run.yml")
	// or path (".github/workflows/bumper-run.yml"). Empty: every dispatched run.
	Workflows []string
	// WorkDir holds one directory per run (its log, its summary, its workspace).
	// Empty: "runner" in the emulator's state directory.
	WorkDir string
	// Env is extra environment, "KEY=VALUE", given to every run. It overrides what the
	// emulator inherited, never the variables GitHub's runner sets (except CI).
	Env []string
	// Timeout caps every job's run time. A job runs at most its workflow's
	// timeout-minutes (GitHub's 360 when absent) or Timeout, whichever is shorter.
	Timeout time.Duration
	// Parallel is how many runs execute at once, across all repositories, like as many
	// self-hosted runners; later runs stay queued, first come first served. 0: 1.
	Parallel int
	// Name prefixes the runners' names: runner i of Parallel is "<Name>-<i>".
	// Empty: "bumper-runner".
	Name string
	// KillGrace is how long a cancelled or timed-out process has after SIGINT before
	// SIGTERM, and a third of it after SIGTERM before SIGKILL, all sent to its process
	// group. 0: GitHub's 7.5 s (so 2.5 s before SIGKILL).
	KillGrace time.Duration
}

const (
	defaultJobTimeout = 360 * time.Minute
	defaultKillGrace  = 7500 * time.Millisecond
	// maxStepSummary is GitHub's limit on a step's summary.
	maxStepSummary = 1 << 20
)

// localRunner executes runs. Its maps and flags are guarded by Actions.mu.
type localRunner struct {
	cfg     Runner
	slots   chan int // runner numbers 1..Parallel, taken while a run executes
	active  map[int64]*localRun
	closing bool
	wg      sync.WaitGroup
}

// localRun is one run handed to the local runner, from queued until it completed.
type localRun struct {
	owner, repo string
	id          int64
	ctx         context.Context
	stop        context.CancelCauseFunc
	started     bool // the run is in_progress with this runner; guarded by Actions.mu
}

func newLocalRunner(cfg Runner, stateDir string) (*localRunner, error) {
	if len(cfg.Command) == 0 || cfg.Command[0] == "" {
		return nil, errors.New("runner: a command is required")
	}
	if cfg.Parallel < 0 || cfg.Timeout < 0 || cfg.KillGrace < 0 {
		return nil, errors.New("runner: Parallel, Timeout and KillGrace must not be negative")
	}
	for _, kv := range cfg.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return nil, fmt.Errorf("runner: environment entry %q is not KEY=VALUE", kv)
		}
	}
	if cfg.Parallel == 0 {
		cfg.Parallel = 1
	}
	if cfg.Name == "" {
		cfg.Name = "bumper-runner"
	}
	if cfg.KillGrace == 0 {
		cfg.KillGrace = defaultKillGrace
	}
	if strings.ContainsRune(cfg.Command[0], filepath.Separator) {
		// A relative program path names a file from where the emulator was started,
		// not from the run's workspace, where the process starts.
		abs, err := filepath.Abs(cfg.Command[0])
		if err != nil {
			return nil, fmt.Errorf("runner: command: %w", err)
		}
		cfg.Command = append([]string{abs}, cfg.Command[1:]...)
	}
	if cfg.WorkDir == "" {
		cfg.WorkDir = filepath.Join(stateDir, "runner")
	}
	dir, err := filepath.Abs(cfg.WorkDir)
	if err != nil {
		return nil, fmt.Errorf("runner: work directory: %w", err)
	}
	cfg.WorkDir = dir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("runner: failed to create the work directory: %w", err)
	}
	r := &localRunner{cfg: cfg, slots: make(chan int, cfg.Parallel), active: map[int64]*localRun{}}
	for i := 1; i <= cfg.Parallel; i++ {
		r.slots <- i
	}
	return r, nil
}

// serves reports whether the runner takes runs of the workflow file at p.
func (r *localRunner) serves(p string) bool {
	if len(r.cfg.Workflows) == 0 {
		return true
	}
	for _, w := range r.cfg.Workflows {
		if w == p || w == path.Base(p) {
			return true
		}
	}
	return false
}

// localRun is the local runner's handle on a run, or nil.
func (a *Actions) localRun(id int64) *localRun {
	if a.runner == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.runner.active[id]
}

// started reports whether the local runner moved lr's run to in_progress.
func (a *Actions) started(lr *localRun) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return lr.started
}

// startLocal hands a queued run to the local runner, inside the caller's transaction.
func (a *Actions) startLocal(rp *state.Repo, run *state.WorkflowRun) {
	r := a.runner
	a.mu.Lock()
	defer a.mu.Unlock()
	if r.closing || r.active[run.ID] != nil {
		return
	}
	ctx, stop := context.WithCancelCause(context.Background())
	lr := &localRun{owner: rp.Owner, repo: rp.Name, id: run.ID, ctx: ctx, stop: stop}
	r.active[run.ID] = lr
	r.wg.Add(1)
	go a.execRun(lr)
}

// Shutdown cancels every run of the local runner and waits until each has completed
// (as cancelled, with webhooks) or, if still queued, stopped waiting.
func (a *Actions) Shutdown() {
	if a.runner == nil {
		return
	}
	a.mu.Lock()
	a.runner.closing = true
	for _, lr := range a.runner.active {
		lr.stop(errRunnerShutdown)
	}
	a.mu.Unlock()
	a.runner.wg.Wait()
}

// execRun is one run's life on the local runner: wait for a free runner, prepare the
// job's directory and environment, run the command, and complete the run. It takes the
// state lock to start the run and to complete it, and none while the command runs.
func (a *Actions) execRun(lr *localRun) {
	r := a.runner
	defer r.wg.Done()
	defer func() {
		a.mu.Lock()
		delete(r.active, lr.id)
		a.mu.Unlock()
	}()
	var slot int
	select {
	case slot = <-r.slots:
	case <-lr.ctx.Done():
		return // cancelled while queued (the cancel route completed it), or shutdown
	}
	defer func() { r.slots <- slot }()

	name := fmt.Sprintf("%s-%d", r.cfg.Name, slot)
	var (
		rp      *state.Repo
		run     *state.WorkflowRun
		files   jobFiles
		env     []string
		prepErr error
		timeout = defaultJobTimeout
		ok      bool
	)
	a.store.Do(func(w *state.World) {
		var err error
		rp, run, err = findRun(w, lr.owner, lr.repo, lr.id)
		if err != nil || run.Status != "queued" || lr.ctx.Err() != nil {
			// Moved by hand while it waited, or the emulator is closing: leave it.
			return
		}
		ok = true
		files = newJobFiles(r.cfg.WorkDir, rp, run)
		run.Dir = files.dir
		env, prepErr = a.prepareJob(w, rp, run, files, name)
		if run.TimeoutMinutes > 0 {
			timeout = time.Duration(run.TimeoutMinutes * float64(time.Minute))
		}
		if r.cfg.Timeout > 0 && r.cfg.Timeout < timeout {
			timeout = r.cfg.Timeout
		}
		a.mu.Lock()
		lr.started = true
		a.mu.Unlock()
		if err := a.Move(w, rp, run, RunUpdate{Status: "in_progress", RunnerName: name}); err != nil {
			a.log.Error().Err(err).Int64("run", run.ID).Msg("local runner: failed to start the run")
		}
	})
	if !ok {
		return
	}

	res := jobResult{exitCode: -1, startErr: prepErr}
	if prepErr == nil {
		res = runProcess(lr, r.cfg, files, env, timeout)
	}
	conclusion, outputs := finishJob(files, res, name, timeout)

	a.store.Do(func(w *state.World) {
		if res.exitCode >= 0 {
			code := res.exitCode
			run.ExitCode = &code
		}
		run.Outputs = outputs
		if err := a.Move(w, rp, run, RunUpdate{Status: "completed", Conclusion: conclusion}); err != nil {
			a.log.Error().Err(err).Int64("run", run.ID).Msg("local runner: failed to complete the run")
		}
	})
}
