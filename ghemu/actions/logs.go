package actions

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/bumperdev/bumper/ghemu/state"
)

const (
	// logURLTTL is how long a job log download URL works, as on GitHub.
	logURLTTL = time.Minute
	// jobLogFile and summaryFile are kept in each run's directory.
	jobLogFile  = "job.log"
	summaryFile = "summary.md"
)

// RunLog is the job log of a run the local runner executed: everything its process
// wrote to stdout and stderr, then the runner's own "##[error]…" lines. It grows while
// the run is in progress.
func (a *Actions) RunLog(owner, repoName string, runID int64) ([]byte, error) {
	dir, err := a.runDir(owner, repoName, runID)
	if err != nil {
		return nil, err
	}
	return ReadLog(dir)
}

// ReadLog reads the job log in a run's directory (WorkflowRun.Dir).
func ReadLog(dir string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(dir, jobLogFile))
	if err != nil {
		return nil, fmt.Errorf("failed to read the job log: %w", err)
	}
	return b, nil
}

// RunSummary is what the run's step wrote to GITHUB_STEP_SUMMARY, once it completed;
// "" if nothing.
func (a *Actions) RunSummary(owner, repoName string, runID int64) (string, error) {
	dir, err := a.runDir(owner, repoName, runID)
	if err != nil {
		return "", err
	}
	return ReadSummary(dir)
}

// ReadSummary reads the step summary kept in a run's directory; "" if there is none.
func ReadSummary(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, summaryFile))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("failed to read the step summary: %w", err)
	}
	return string(b), nil
}

func (a *Actions) runDir(owner, repoName string, runID int64) (string, error) {
	var dir string
	var err error
	a.store.Do(func(w *state.World) {
		var run *state.WorkflowRun
		if _, run, err = findRun(w, owner, repoName, runID); err != nil {
			return
		}
		if run.Dir == "" {
			err = fmt.Errorf("run %d was not executed by the emulator's runner (or has not started): it has no log", runID)
			return
		}
		dir = run.Dir
	})
	return dir, err
}

// appendJobLog adds a line to a local run's job log.
func appendJobLog(run *state.WorkflowRun, line string) {
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

// LogURL is where GET /actions/jobs/{id}/logs redirects: a URL that needs no
// credentials and stops working a minute from now, like GitHub's. Inside the caller's
// transaction.
func (a *Actions) LogURL(w *state.World, jobID int64) string {
	exp := strconv.FormatInt(w.Now().Add(logURLTTL).Unix(), 10)
	return fmt.Sprintf("%s%sactions/jobs/%d/logs?expires=%s&signature=%s", w.BaseURL(), ControlPrefix, jobID, exp,
		a.logSignature(jobID, exp))
}

func (a *Actions) logSignature(jobID int64, exp string) string {
	m := hmac.New(sha256.New, a.logKey)
	fmt.Fprintf(m, "%d:%s", jobID, exp)
	return hex.EncodeToString(m.Sum(nil))
}
