package ghemu

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/ghemu/state"
)

// TestRestartSettlesAbandonedRuns: an emulator that stopped without closing (killed)
// leaves its local runs unfinished in the state. The next one fails the run that was in
// progress, as GitHub fails a job whose runner went away, and starts the queued one.
func TestRestartSettlesAbandonedRuns(t *testing.T) {
	dir := t.TempDir()
	e1, err := New(Options{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	e1.SetBaseURL("http://127.0.0.1:1")
	runDir := filepath.Join(t.TempDir(), "lost")
	if err := os.MkdirAll(runDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(runDir, "job.log"), []byte("working\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var lost, waiting int64
	e1.store.Do(func(w *state.World) {
		rp := w.Repo(DefaultOrg, DefaultRepo)
		now := w.Timestamp()
		newRun := func(status string) *state.WorkflowRun {
			run := &state.WorkflowRun{ID: w.NextID()}
			run.WorkflowID = rp.WorkflowID(".github/workflows/" + DefaultWorkflow)
			run.JobID = w.NextID()
			run.WorkflowPath, run.WorkflowName, run.Ref = ".github/workflows/"+DefaultWorkflow, "bumper-run", "main"
			run.Event, run.Actor, run.Status = "workflow_dispatch", DefaultMaintainer, status
			run.CreatedAt, run.UpdatedAt, run.StartedAt = now, now, now
			run.LocalRunner, run.IDToken = true, true
			rp.AddRun(run)
			return run
		}
		run := newRun("in_progress")
		run.Dir, run.RunnerName = runDir, "bumper-runner-1"
		lost, waiting = run.ID, newRun("queued").ID
	})
	e1.hooks.Close() // as good as killed: no runner, nothing else to stop

	e2, err := New(Options{StateDir: dir, Runner: &Runner{Command: []string{"sh", "-c", "echo picked up"}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e2.Handler())
	defer srv.Close()
	defer e2.Close()
	e2.SetBaseURL(srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	info, err := e2.WaitRun(ctx, DefaultOrg, DefaultRepo, lost)
	log, _ := e2.RunLog(DefaultOrg, DefaultRepo, lost)
	if err != nil || info.Conclusion != "failure" ||
		!strings.HasPrefix(string(log), "working\n##[error]The self-hosted runner: bumper-runner-1 lost communication with the server.") {
		t.Fatalf("abandoned run = %+v, %v; log:\n%s", info, err, log)
	}
	info, err = e2.WaitRun(ctx, DefaultOrg, DefaultRepo, waiting)
	log, _ = e2.RunLog(DefaultOrg, DefaultRepo, waiting)
	if err != nil || info.Conclusion != "success" || string(log) != "picked up\n" {
		t.Fatalf("queued run = %+v, %v; log %q", info, err, log)
	}
}
