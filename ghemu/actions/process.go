package actions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

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
func runProcess(lr *localRun, cfg Runner, f jobFiles, env []string, timeout time.Duration) jobResult {
	argv := cfg.Command
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
		killGroup(pgid, cfg.KillGrace, done)
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
// then SIGTERM after grace, then SIGKILL a third of grace later.
func killGroup(pgid int, grace time.Duration, done <-chan struct{}) {
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
