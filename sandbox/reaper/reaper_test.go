package reaper

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// deadPID returns the pid of a process that has exited and been waited for.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("cannot start a child process: %v", err)
	}
	return cmd.Process.Pid
}

func TestReap(t *testing.T) {
	self, err := Own("alive")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		record     Record
		corrupt    bool
		wantReaped bool
		wantErr    string
	}{
		{name: "owner alive", record: self},
		{name: "owner dead", record: Record{ID: "dead", OwnerPID: deadPID(t)}, wantReaped: true},
		{name: "pid reused by another process", record: Record{ID: "reused", OwnerPID: os.Getpid(), OwnerStart: self.OwnerStart + 1}, wantReaped: true},
		{name: "corrupt record", record: Record{ID: "bad"}, corrupt: true, wantErr: "corrupt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := t.TempDir()
			runDir := filepath.Join(t.TempDir(), "run")
			if err := os.MkdirAll(runDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(runDir, "root.qcow2"), []byte("overlay"), 0o600); err != nil {
				t.Fatal(err)
			}
			r := tt.record
			r.RunDir = runDir
			if err := Write(state, r); err != nil {
				t.Fatal(err)
			}
			if tt.corrupt {
				if err := os.WriteFile(filepath.Join(state, "runs", r.ID+".json"), []byte("{"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			reaped, err := Reap(state)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Reap = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Reap: %v", err)
			}
			_, statErr := os.Stat(runDir)
			_, recErr := os.Stat(filepath.Join(state, "runs", r.ID+".json"))
			if tt.wantReaped {
				if len(reaped) != 1 || reaped[0] != r.ID || statErr == nil || recErr == nil {
					t.Fatalf("reaped %v, run dir err %v, record err %v; want %s gone", reaped, statErr, recErr, r.ID)
				}
				return
			}
			if len(reaped) != 0 || statErr != nil || recErr != nil {
				t.Fatalf("reaped %v (run dir %v, record %v) of a live owner", reaped, statErr, recErr)
			}
		})
	}
}

func TestReapEmptyState(t *testing.T) {
	reaped, err := Reap(filepath.Join(t.TempDir(), "never-created"))
	if err != nil || len(reaped) != 0 {
		t.Fatalf("Reap of a missing state dir = %v, %v; want nothing", reaped, err)
	}
}
