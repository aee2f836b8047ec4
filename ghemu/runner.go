package ghemu

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Runner makes the emulator execute dispatched workflow runs itself, standing in for
// GitHub's Actions runner, which cannot run here: each run's job is one process started
// with the environment GitHub's runner gives a step (docs/emulator.md lists it), and the
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
	// logURLTTL is how long a job log download URL works, as on GitHub.
	logURLTTL = time.Minute
	// jobLogFile and summaryFile are kept in each run's directory.
	jobLogFile  = "job.log"
	summaryFile = "summary.md"
)

var (
	errRunCancelled   = errors.New("the run was cancelled")
	errRunTimedOut    = errors.New("the job exceeded its maximum execution time")
	errRunnerShutdown = errors.New("the emulator is shutting down")
)

// localRunner executes runs for an Emulator. Its maps and flags are guarded by
// Emulator.mu.
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
	started     bool // the run is in_progress with this runner; guarded by Emulator.mu
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

// localRunLocked is the local runner's handle on a run, or nil. Callers hold e.mu.
func (e *Emulator) localRunLocked(id int64) *localRun {
	if e.runner == nil {
		return nil
	}
	return e.runner.active[id]
}

// handToRunnerLocked gives a newly dispatched run to the local runner, if one is
// configured and takes its workflow. Callers hold e.mu.
func (e *Emulator) handToRunnerLocked(rp *repo, run *workflowRun) {
	if e.runner == nil || !e.runner.serves(run.WorkflowPath) {
		return
	}
	run.LocalRunner = true
	e.startLocalLocked(rp, run)
}

func (e *Emulator) startLocalLocked(rp *repo, run *workflowRun) {
	r := e.runner
	if r.closing || r.active[run.ID] != nil {
		return
	}
	ctx, stop := context.WithCancelCause(context.Background())
	lr := &localRun{owner: rp.Owner, repo: rp.Name, id: run.ID, ctx: ctx, stop: stop}
	r.active[run.ID] = lr
	r.wg.Add(1)
	go e.execRun(lr)
}

// shutdownRunner cancels every run of the local runner and waits until each has
// completed (as cancelled, with webhooks) or, if still queued, stopped waiting.
func (e *Emulator) shutdownRunner() {
	if e.runner == nil {
		return
	}
	e.mu.Lock()
	e.runner.closing = true
	for _, lr := range e.runner.active {
		lr.stop(errRunnerShutdown)
	}
	e.mu.Unlock()
	e.runner.wg.Wait()
}

// jobFiles are the paths of one job on disk.
type jobFiles struct {
	dir, log, workspace, temp, tool, event string
	output, summary, env, path, state      string
}

func newJobFiles(root string, rp *repo, run *workflowRun) jobFiles {
	dir := filepath.Join(root, strconv.FormatInt(run.ID, 10))
	work := filepath.Join(dir, "_work")
	temp := filepath.Join(work, "_temp")
	cmds := filepath.Join(temp, "_runner_file_commands")
	f := jobFiles{dir: dir, log: filepath.Join(dir, jobLogFile), workspace: filepath.Join(work, rp.Name, rp.Name),
		temp: temp, tool: filepath.Join(work, "_tool"),
		event: filepath.Join(temp, "_github_workflow", "event.json")}
	f.output = filepath.Join(cmds, "set_output_"+newGUID())
	f.summary = filepath.Join(cmds, "step_summary_"+newGUID())
	f.env = filepath.Join(cmds, "set_env_"+newGUID())
	f.path = filepath.Join(cmds, "add_path_"+newGUID())
	f.state = filepath.Join(cmds, "save_state_"+newGUID())
	return f
}

// execRun is one run's life on the local runner: wait for a free runner, prepare the
// job's directory and environment, run the command, and complete the run.
func (e *Emulator) execRun(lr *localRun) {
	r := e.runner
	defer r.wg.Done()
	defer func() {
		e.mu.Lock()
		delete(r.active, lr.id)
		e.mu.Unlock()
	}()
	var slot int
	select {
	case slot = <-r.slots:
	case <-lr.ctx.Done():
		return // cancelled while queued (the cancel route completed it), or shutdown
	}
	defer func() { r.slots <- slot }()

	e.mu.Lock()
	rp, run, err := e.findRunLocked(lr.owner, lr.repo, lr.id)
	if err != nil || run.Status != "queued" || lr.ctx.Err() != nil {
		// Moved by hand while it waited, or the emulator is closing: leave it.
		e.mu.Unlock()
		return
	}
	name := fmt.Sprintf("%s-%d", r.cfg.Name, slot)
	files := newJobFiles(r.cfg.WorkDir, rp, run)
	run.Dir = files.dir
	env, prepErr := e.prepareJobLocked(rp, run, files, name)
	timeout := defaultJobTimeout
	if run.TimeoutMinutes > 0 {
		timeout = time.Duration(run.TimeoutMinutes * float64(time.Minute))
	}
	if r.cfg.Timeout > 0 && r.cfg.Timeout < timeout {
		timeout = r.cfg.Timeout
	}
	lr.started = true
	if err := e.moveRunLocked(rp, run, RunUpdate{Status: "in_progress", RunnerName: name}); err != nil {
		e.log.Error().Err(err).Int64("run", run.ID).Msg("local runner: failed to start the run")
	}
	e.mu.Unlock()

	res := jobResult{exitCode: -1, startErr: prepErr}
	if prepErr == nil {
		res = e.runProcess(lr, files, env, timeout)
	}
	conclusion, outputs := finishJob(files, res, name, timeout)

	e.mu.Lock()
	defer e.mu.Unlock()
	if res.exitCode >= 0 {
		code := res.exitCode
		run.ExitCode = &code
	}
	run.Outputs = outputs
	if err := e.moveRunLocked(rp, run, RunUpdate{Status: "completed", Conclusion: conclusion}); err != nil {
		e.log.Error().Err(err).Int64("run", run.ID).Msg("local runner: failed to complete the run")
	}
}

// prepareJobLocked creates the job's directories, its event file and empty file
// command files, and returns its environment. Callers hold e.mu.
func (e *Emulator) prepareJobLocked(rp *repo, run *workflowRun, f jobFiles, runnerName string) ([]string, error) {
	for _, d := range []string{f.workspace, f.tool, filepath.Dir(f.output), filepath.Dir(f.event)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("failed to prepare the job's directories: %w", err)
		}
	}
	event, err := json.MarshalIndent(e.dispatchEventLocked(rp, run), "", "  ")
	if err != nil {
		return nil, fmt.Errorf("failed to encode the event payload: %w", err)
	}
	if err := os.WriteFile(f.event, event, 0o600); err != nil {
		return nil, fmt.Errorf("failed to write the event payload: %w", err)
	}
	for _, p := range []string{f.log, f.output, f.summary, f.env, f.path, f.state} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			return nil, fmt.Errorf("failed to create %s: %w", filepath.Base(p), err)
		}
	}
	return e.jobEnvLocked(rp, run, f, runnerName), nil
}

// dispatchEventLocked is the workflow_dispatch event payload GITHUB_EVENT_PATH holds.
func (e *Emulator) dispatchEventLocked(rp *repo, run *workflowRun) any {
	inputs := obj{}
	for k, v := range run.Inputs {
		inputs[k] = v
	}
	p := obj{"inputs": inputs, "ref": "refs/heads/" + run.Ref, "workflow": run.WorkflowPath,
		"repository": e.renderRepo(rp), "sender": e.renderUser(run.Actor)}
	if owner := e.st.Users[key(rp.Owner)]; owner != nil && owner.Type == "Organization" {
		p["organization"] = e.renderOrg(owner)
	}
	return webhookShape(p)
}

// inheritedEnvDropped are the prefixes of variables not passed on from the emulator's
// own environment: a step sees only the GitHub values of these, never an outer CI's.
var inheritedEnvDropped = []string{"GITHUB_", "RUNNER_", "ACTIONS_", "INPUT_", "STATE_"}

// jobEnvLocked is the process environment: the emulator's own minus GitHub's names,
// then Runner.Env, then what GitHub's runner sets for a step. Callers hold e.mu.
func (e *Emulator) jobEnvLocked(rp *repo, run *workflowRun, f jobFiles, runnerName string) []string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		drop := k == "CI"
		for _, p := range inheritedEnvDropped {
			drop = drop || strings.HasPrefix(k, p)
		}
		if !drop {
			env[k] = v
		}
	}
	for _, kv := range e.runner.cfg.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	ref := "refs/heads/" + run.Ref
	id := func(login string) string {
		if u := e.st.Users[key(login)]; u != nil {
			return strconv.FormatInt(u.ID, 10)
		}
		return "0"
	}
	_, protected := rp.Protected[run.Ref]
	for k, v := range map[string]string{
		"CI":                         "true",
		"GITHUB_ACTION":              "__run",
		"GITHUB_ACTIONS":             "true",
		"GITHUB_ACTOR":               run.Actor,
		"GITHUB_ACTOR_ID":            id(run.Actor),
		"GITHUB_API_URL":             e.baseURL,
		"GITHUB_ENV":                 f.env,
		"GITHUB_EVENT_NAME":          run.Event,
		"GITHUB_EVENT_PATH":          f.event,
		"GITHUB_GRAPHQL_URL":         e.baseURL + "/graphql",
		"GITHUB_JOB":                 run.jobName(),
		"GITHUB_OUTPUT":              f.output,
		"GITHUB_PATH":                f.path,
		"GITHUB_REF":                 ref,
		"GITHUB_REF_NAME":            run.Ref,
		"GITHUB_REF_PROTECTED":       strconv.FormatBool(protected),
		"GITHUB_REF_TYPE":            "branch",
		"GITHUB_REPOSITORY":          rp.fullName(),
		"GITHUB_REPOSITORY_ID":       strconv.FormatInt(rp.ID, 10),
		"GITHUB_REPOSITORY_OWNER":    rp.Owner,
		"GITHUB_REPOSITORY_OWNER_ID": id(rp.Owner),
		"GITHUB_RETENTION_DAYS":      "90",
		"GITHUB_RUN_ATTEMPT":         "1",
		"GITHUB_RUN_ID":              strconv.FormatInt(run.ID, 10),
		"GITHUB_RUN_NUMBER":          strconv.Itoa(run.Number),
		"GITHUB_SERVER_URL":          e.baseURL,
		"GITHUB_SHA":                 run.HeadSHA,
		"GITHUB_STATE":               f.state,
		"GITHUB_STEP_SUMMARY":        f.summary,
		"GITHUB_TRIGGERING_ACTOR":    run.Actor,
		"GITHUB_WORKFLOW":            run.WorkflowName,
		"GITHUB_WORKFLOW_REF":        rp.fullName() + "/" + run.WorkflowPath + "@" + ref,
		"GITHUB_WORKFLOW_SHA":        run.HeadSHA,
		"GITHUB_WORKSPACE":           f.workspace,
		"RUNNER_ARCH":                runnerArch(runtime.GOARCH),
		"RUNNER_ENVIRONMENT":         "self-hosted",
		"RUNNER_NAME":                runnerName,
		"RUNNER_OS":                  runnerOS(runtime.GOOS),
		"RUNNER_TEMP":                f.temp,
		"RUNNER_TOOL_CACHE":          f.tool,
	} {
		env[k] = v
	}
	if run.IDToken {
		// GitHub's URL carries a query already; @actions/core appends "&audience=…".
		env["ACTIONS_ID_TOKEN_REQUEST_URL"] = e.oidcRequestURL(run) + "?api-version=2.0"
		env["ACTIONS_ID_TOKEN_REQUEST_TOKEN"] = run.OIDCRequestToken
	}
	for name, v := range run.Inputs {
		env[inputEnvName(name)] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// inputEnvName is the variable GitHub's runner gives an action input: INPUT_, then the
// name with spaces replaced by underscores, upper-cased. Hyphens stay.
func inputEnvName(name string) string {
	return "INPUT_" + strings.ToUpper(strings.ReplaceAll(name, " ", "_"))
}

func runnerArch(goarch string) string {
	switch goarch {
	case "amd64":
		return "X64"
	case "386":
		return "X86"
	case "arm64":
		return "ARM64"
	case "arm":
		return "ARM"
	}
	return strings.ToUpper(goarch)
}

func runnerOS(goos string) string {
	switch goos {
	case "linux":
		return "Linux"
	case "darwin":
		return "macOS"
	case "windows":
		return "Windows"
	}
	return goos
}

// jobResult is how the process ended.
type jobResult struct {
	exitCode int   // -1: it never ran
	stopped  error // errRunCancelled, errRunTimedOut, errRunnerShutdown, or nil
	startErr error
	orphans  bool
}

// runProcess runs the command in its own process group, its stdout and stderr both
// appended to the job log, until it exits, is cancelled, times out, or the emulator
// closes.
func (e *Emulator) runProcess(lr *localRun, f jobFiles, env []string, timeout time.Duration) jobResult {
	argv := e.runner.cfg.Command
	logf, err := os.OpenFile(f.log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return jobResult{exitCode: -1, startErr: fmt.Errorf("failed to open the job log: %w", err)}
	}
	defer logf.Close()
	out := &maskingWriter{w: logf}
	defer out.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = f.workspace, env, out, out
	// The output now goes through a pipe: a process the job left behind (orphaned, as a
	// killed job's children are) may hold it open, and must not hold the run with it.
	cmd.WaitDelay = 2 * time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return jobResult{exitCode: -1, startErr: err}
	}
	pgid := cmd.Process.Pid
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait() // the exit status is read from ProcessState
		close(done)
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var res jobResult
	select {
	case <-done:
	case <-lr.ctx.Done():
		res.stopped = context.Cause(lr.ctx)
	case <-timer.C:
		res.stopped = errRunTimedOut
	}
	if res.stopped != nil {
		e.killGroup(pgid, done)
	}
	// As GitHub's runner does at the end of a job: whatever the step left running in
	// its process group is killed.
	if syscall.Kill(-pgid, 0) == nil {
		res.orphans = true
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	res.exitCode = exitStatus(cmd.ProcessState)
	return res
}

// killGroup stops a process group as GitHub's runner stops a cancelled step: SIGINT,
// then SIGTERM after KillGrace, then SIGKILL a third of KillGrace later.
func (e *Emulator) killGroup(pgid int, done <-chan struct{}) {
	grace := e.runner.cfg.KillGrace
	for _, step := range []struct {
		sig  syscall.Signal
		wait time.Duration
	}{{syscall.SIGINT, grace}, {syscall.SIGTERM, grace / 3}, {syscall.SIGKILL, -1}} {
		_ = syscall.Kill(-pgid, step.sig)
		if step.wait < 0 {
			<-done
			return
		}
		t := time.NewTimer(step.wait)
		select {
		case <-done:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// exitStatus is the process's exit code, 128+n when signal n killed it.
func exitStatus(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// finishJob reads the job's file commands, appends the runner's own lines to the log,
// keeps the summary, empties RUNNER_TEMP as GitHub's runner does, and decides the
// conclusion.
func finishJob(f jobFiles, res jobResult, runnerName string, timeout time.Duration) (string, map[string]string) {
	var lines []string
	conclusion := "success"
	if res.orphans {
		lines = append(lines, "Cleaning up orphan processes")
	}
	switch {
	case res.startErr != nil:
		conclusion = "failure"
		lines = append(lines, "##[error]"+res.startErr.Error())
	case errors.Is(res.stopped, errRunTimedOut):
		conclusion = "cancelled"
		lines = append(lines, fmt.Sprintf("##[error]The job running on runner %s has exceeded the maximum execution time of %s.", runnerName, minutes(timeout)),
			"##[error]The operation was canceled.")
	case errors.Is(res.stopped, errRunnerShutdown):
		conclusion = "cancelled"
		lines = append(lines, "##[error]The runner has received a shutdown signal. This can happen when the runner service is stopped, or a manually started runner is canceled.",
			"##[error]The operation was canceled.")
	case res.stopped != nil:
		conclusion = "cancelled"
		lines = append(lines, "##[error]The operation was canceled.")
	case res.exitCode != 0:
		conclusion = "failure"
		lines = append(lines, fmt.Sprintf("##[error]Process completed with exit code %d.", res.exitCode))
	}
	var outputs map[string]string
	if res.startErr == nil {
		raw, err := os.ReadFile(f.output)
		if err == nil {
			outputs, err = parseFileCommand(string(raw))
		}
		if err != nil {
			outputs = nil
			if conclusion == "success" {
				conclusion = "failure"
			}
			lines = append(lines, "##[error]Unable to process file command 'output' successfully.", "##[error]"+err.Error())
		}
		if s, err := os.ReadFile(f.summary); err == nil && len(s) > 0 {
			if len(s) > maxStepSummary {
				lines = append(lines, fmt.Sprintf("##[error]$GITHUB_STEP_SUMMARY upload aborted, supports content up to a size of %dk, got %dk.", maxStepSummary>>10, len(s)>>10))
			} else if err := os.WriteFile(filepath.Join(f.dir, summaryFile), s, 0o600); err != nil {
				lines = append(lines, "##[error]failed to keep the step summary: "+err.Error())
			}
		}
		_ = os.RemoveAll(f.temp)
	}
	if len(lines) > 0 {
		if lf, err := os.OpenFile(f.log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
			_, _ = lf.WriteString(strings.Join(lines, "\n") + "\n")
			_ = lf.Close()
		}
	}
	return conclusion, outputs
}

// fileCommandError is a file command the runner refuses, in the words of GitHub's.
type fileCommandError string

func (e fileCommandError) Error() string { return string(e) }

func minutes(d time.Duration) string {
	if d%time.Minute == 0 {
		return fmt.Sprintf("%d minutes", int(d/time.Minute))
	}
	return d.String()
}

// parseFileCommand reads a GITHUB_OUTPUT (or GITHUB_ENV) file as GitHub's runner does:
// each non-empty line is NAME=VALUE, or NAME<<DELIMITER followed by the value's lines
// and a line that is exactly DELIMITER. Whichever of "=" and "<<" comes first decides
// the form. A later NAME replaces an earlier one.
func parseFileCommand(text string) (map[string]string, error) {
	out := map[string]string{}
	i := 0
	// next returns the line at i without its terminator, the terminator, and moves i.
	next := func() (line, nl string, ok bool) {
		if i >= len(text) {
			return "", "", false
		}
		j := strings.IndexByte(text[i:], '\n')
		if j < 0 {
			line, i = text[i:], len(text)
			return line, "", true
		}
		line, nl = text[i:i+j], "\n"
		i += j + 1
		if strings.HasSuffix(line, "\r") {
			line, nl = line[:len(line)-1], "\r\n"
		}
		return line, nl, true
	}
	for {
		line, _, ok := next()
		if !ok {
			return out, nil
		}
		if line == "" {
			continue
		}
		eq, hd := strings.Index(line, "="), strings.Index(line, "<<")
		switch {
		case eq >= 0 && (hd < 0 || eq < hd):
			if eq == 0 {
				return nil, fileCommandError(fmt.Sprintf("Invalid format '%s'. Name must not be empty", line))
			}
			out[line[:eq]] = line[eq+1:]
		case hd >= 0:
			name, delim := line[:hd], line[hd+2:]
			if name == "" || delim == "" {
				return nil, fileCommandError(fmt.Sprintf("Invalid format '%s'. Name must not be empty and delimiter must not be empty", line))
			}
			start, end := i, i
			for {
				l, nl, ok := next()
				if !ok {
					return nil, fileCommandError(fmt.Sprintf("Invalid value. Matching delimiter not found '%s'", delim))
				}
				if l == delim {
					break
				}
				if nl == "" {
					return nil, fileCommandError("Invalid value. EOF marker missing new line.")
				}
				end = i - len(nl)
			}
			out[name] = text[start:max(start, end)]
		default:
			return nil, fileCommandError(fmt.Sprintf("Invalid format '%s'", line))
		}
	}
}

// RunLog is the job log of a run the local runner executed: everything its process
// wrote to stdout and stderr, then the runner's own "##[error]…" lines. It grows while
// the run is in progress.
func (e *Emulator) RunLog(owner, repoName string, runID int64) ([]byte, error) {
	dir, err := e.runDir(owner, repoName, runID)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(dir, jobLogFile))
	if err != nil {
		return nil, fmt.Errorf("failed to read the job log: %w", err)
	}
	return b, nil
}

// RunSummary is what the run's step wrote to GITHUB_STEP_SUMMARY, once it completed;
// "" if nothing.
func (e *Emulator) RunSummary(owner, repoName string, runID int64) (string, error) {
	dir, err := e.runDir(owner, repoName, runID)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(filepath.Join(dir, summaryFile))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("failed to read the step summary: %w", err)
	}
	return string(b), nil
}

func (e *Emulator) runDir(owner, repoName string, runID int64) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, run, err := e.findRunLocked(owner, repoName, runID)
	if err != nil {
		return "", err
	}
	if run.Dir == "" {
		return "", fmt.Errorf("run %d was not executed by the emulator's runner (or has not started): it has no log", runID)
	}
	return run.Dir, nil
}

// appendJobLog adds a line to a local run's job log.
func (e *Emulator) appendJobLog(run *workflowRun, line string) {
	if run.Dir == "" {
		return
	}
	lf, err := os.OpenFile(filepath.Join(run.Dir, jobLogFile), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	_, _ = lf.WriteString(line + "\n")
	_ = lf.Close()
}

// signedLogURL is where GET /actions/jobs/{id}/logs redirects: a URL that needs no
// credentials and stops working at expires, like GitHub's. Callers hold e.mu.
func (e *Emulator) signedLogURL(jobID int64, expires time.Time) string {
	exp := strconv.FormatInt(expires.Unix(), 10)
	return fmt.Sprintf("%s%sactions/jobs/%d/logs?expires=%s&signature=%s", e.baseURL, controlPrefix, jobID, exp,
		e.logSignature(jobID, exp))
}

func (e *Emulator) logSignature(jobID int64, exp string) string {
	m := hmac.New(sha256.New, e.logKey)
	fmt.Fprintf(m, "%d:%s", jobID, exp)
	return hex.EncodeToString(m.Sum(nil))
}

func (e *Emulator) serveSignedLog(w http.ResponseWriter, r *http.Request, idStr string) {
	id, err := strconv.ParseInt(idStr, 10, 64)
	if err != nil {
		writeError(w, errNotFound())
		return
	}
	q := r.URL.Query()
	exp, err := strconv.ParseInt(q.Get("expires"), 10, 64)
	if err != nil || !hmac.Equal([]byte(q.Get("signature")), []byte(e.logSignature(id, q.Get("expires")))) ||
		e.now().Unix() > exp {
		writeError(w, newError(http.StatusForbidden, "the log URL is not valid or has expired; ask GET /repos/{owner}/{repo}/actions/jobs/{job_id}/logs again"))
		return
	}
	e.mu.Lock()
	var dir string
	for _, rp := range e.st.Repos {
		for _, run := range rp.Runs {
			if run.JobID == id {
				dir = run.Dir
			}
		}
	}
	e.mu.Unlock()
	b, err := os.ReadFile(filepath.Join(dir, jobLogFile))
	if dir == "" || err != nil {
		writeError(w, errNotFound())
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write(b)
}

// recoverRunsLocked settles the local runner's runs an earlier emulator process left
// unfinished in the state: one that was in progress lost its runner and fails, as on
// GitHub; one still queued is started again if this emulator's runner takes it.
// Callers hold e.mu; the base URL is set.
func (e *Emulator) recoverRunsLocked() {
	for _, rp := range e.sortedRepos(func(*repo) bool { return true }) {
		ids := make([]int64, 0, len(rp.Runs))
		for id := range rp.Runs {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		for _, id := range ids {
			run := rp.Runs[id]
			if !run.LocalRunner || run.Status == "completed" || e.localRunLocked(id) != nil {
				continue
			}
			switch {
			case run.Status == "in_progress":
				e.appendJobLog(run, fmt.Sprintf("##[error]The self-hosted runner: %s lost communication with the server. Verify the machine is running and has a healthy network connection.", run.RunnerName))
				if err := e.moveRunLocked(rp, run, RunUpdate{Status: "completed", Conclusion: "failure"}); err != nil {
					e.log.Error().Err(err).Int64("run", id).Msg("local runner: failed to complete an abandoned run")
				}
			case e.runner != nil && e.runner.serves(run.WorkflowPath):
				e.startLocalLocked(rp, run)
			}
		}
	}
}
