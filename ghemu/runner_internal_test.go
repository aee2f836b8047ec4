package ghemu

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseFileCommand(t *testing.T) {
	tests := []struct {
		name, in string
		want     map[string]string
		err      string
	}{
		{"name=value", "a=1\nb=two words\n", map[string]string{"a": "1", "b": "two words"}, ""},
		{"empty value and empty lines", "\na=\n\n", map[string]string{"a": ""}, ""},
		{"the value keeps later = and <<", "a=b=c<<d\n", map[string]string{"a": "b=c<<d"}, ""},
		{"a later name wins", "a=1\na=2\n", map[string]string{"a": "2"}, ""},
		{"no final newline", "a=1", map[string]string{"a": "1"}, ""},
		{"CRLF", "a=1\r\nb<<E\r\nx\r\ny\r\nE\r\n", map[string]string{"a": "1", "b": "x\r\ny"}, ""},
		{"heredoc", "notes<<EOF\nline one\nline=two\n\nEOF\nafter=1\n", map[string]string{"notes": "line one\nline=two\n", "after": "1"}, ""},
		{"heredoc before =", "k<<A=B\nv\nA=B\n", map[string]string{"k": "v"}, ""},
		{"empty heredoc", "k<<EOF\nEOF\n", map[string]string{"k": ""}, ""},
		{"delimiter at the end of the file", "k<<EOF\nv\nEOF", map[string]string{"k": "v"}, ""},
		{"no = nor <<", "just words\n", nil, "Invalid format 'just words'"},
		{"empty name", "=v\n", nil, "Invalid format '=v'. Name must not be empty"},
		{"empty delimiter", "k<<\nv\n", nil, "Invalid format 'k<<'. Name must not be empty and delimiter must not be empty"},
		{"missing delimiter", "k<<EOF\nv\n", nil, "Invalid value. Matching delimiter not found 'EOF'"},
		{"value line without newline", "k<<EOF\nv", nil, "Invalid value. EOF marker missing new line."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseFileCommand(tt.in)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || len(got) != len(tt.want) {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

func TestInputEnvName(t *testing.T) {
	for in, want := range map[string]string{"work_item": "INPUT_WORK_ITEM", "my input": "INPUT_MY_INPUT",
		"with-hyphen": "INPUT_WITH-HYPHEN", "Stage": "INPUT_STAGE"} {
		if got := inputEnvName(in); got != want {
			t.Errorf("inputEnvName(%q) = %q, want %q", in, got, want)
		}
	}
}

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
	if err := os.WriteFile(filepath.Join(runDir, jobLogFile), []byte("working\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e1.mu.Lock()
	rp := e1.st.repoByName(DefaultOrg, DefaultRepo)
	now := e1.timestamp()
	newRun := func(status string) int64 {
		run := &workflowRun{ID: e1.st.nextID(), Number: rp.NextRunNumber, WorkflowID: e1.workflowID(rp, ".github/workflows/"+DefaultWorkflow),
			WorkflowPath: ".github/workflows/" + DefaultWorkflow, WorkflowName: "bumper-run", Ref: "main",
			Event: "workflow_dispatch", Actor: DefaultMaintainer, Status: status, JobID: e1.st.nextID(),
			CreatedAt: now, UpdatedAt: now, StartedAt: now, LocalRunner: true, IDToken: true}
		rp.NextRunNumber++
		rp.Runs[run.ID] = run
		return run.ID
	}
	lost := newRun("in_progress")
	rp.Runs[lost].Dir, rp.Runs[lost].RunnerName = runDir, "bumper-runner-1"
	waiting := newRun("queued")
	e1.saveLocked()
	e1.mu.Unlock()
	e1.hooks.close() // as good as killed: no runner, nothing else to stop

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

func TestNewRunnerRefusesBadOptions(t *testing.T) {
	for _, r := range []Runner{{}, {Command: []string{""}}, {Command: []string{"true"}, Parallel: -1},
		{Command: []string{"true"}, Env: []string{"NOEQUALS"}}, {Command: []string{"true"}, Env: []string{"=v"}}} {
		if _, err := New(Options{Runner: &r}); err == nil {
			t.Errorf("New accepted runner %+v", r)
		}
	}
}
