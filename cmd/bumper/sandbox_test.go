package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/internal/testgate"
	"github.com/bumperdev/bumper/sandbox"
	"github.com/bumperdev/bumper/sandbox/image/imagetest"
)

func TestSandboxUsage(t *testing.T) {
	runCLICases(t, []cliCase{
		{name: "no subcommand", args: []string{"sandbox"}, wantCode: 2, wantStderr: "want 'bumper sandbox run"},
		{name: "unknown subcommand", args: []string{"sandbox", "start"}, wantCode: 2, wantStderr: "want 'bumper sandbox run"},
		{name: "help", args: []string{"sandbox", "--help"}, wantCode: 0, wantStderr: "--allow"},
		{name: "no command", args: []string{"sandbox", "run", "--image", "/nonexistent"}, wantCode: 2, wantStderr: "no command"},
		{name: "bad memory", args: []string{"sandbox", "run", "--memory", "lots", "--", "true"}, wantCode: 2, wantStderr: `size "lots"`},
		{name: "bad disk", args: []string{"sandbox", "run", "--disk", "-1", "--", "true"}, wantCode: 2, wantStderr: "--disk"},
		{name: "resolve without allow", args: []string{"sandbox", "run", "--resolve", "a.test:127.0.0.1", "--", "true"}, wantCode: 2, wantStderr: "--resolve without --allow"},
		{name: "missing image", args: []string{"sandbox", "run", "--image", "/nonexistent/image", "--", "true"}, wantCode: 1, wantStderr: "/nonexistent/image"},
		{name: "guest agent on a host", args: []string{"guest-agent"}, wantCode: 1, wantStderr: "only as PID 1"},
	})
}

// TestRestoreErrorHint: a snapshot that fails to restore reaches the user with the flag
// that boots without snapshots; the library's message names no flag.
func TestRestoreErrorHint(t *testing.T) {
	re := &sandbox.RestoreError{Snapshot: "/cache/snapshots/abc", QEMU: "qemu-system-x86_64: Missing section footer"}
	if strings.Contains(re.Error(), "--") {
		t.Fatalf("the library's message names a command-line flag: %q", re)
	}
	err := withColdHint(fmt.Errorf("run: %w", re))
	var got *sandbox.RestoreError
	if !errors.As(err, &got) || !strings.Contains(err.Error(), "--cold") || !strings.Contains(err.Error(), "Missing section footer") {
		t.Fatalf("withColdHint: %v, want the restore error with the --cold hint", err)
	}
	if got := withColdHint(errors.New("other")); got.Error() != "other" {
		t.Fatal("withColdHint changed an unrelated error")
	}
}

// TestSandboxRun runs a command in a real VM through the command line, as a user would.
func TestSandboxRun(t *testing.T) {
	testgate.RequiresQEMU(t)
	im := imagetest.Image(t)
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "in.txt"), []byte("input\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	cache := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"sandbox", "run", "--cold", "--image", im.Dir(), "--cache", cache, "--workspace", ws, "--out", out,
		"--cpus", "1", "--memory", "512M", "--", "sh", "-c", "cat in.txt; echo result > /out/r.txt; exit 5"}, &stdout, &stderr)
	if code != 5 {
		t.Fatalf("exit code = %d, want the command's 5; stderr: %s", code, stderr.String())
	}
	if stdout.String() != "input\n" {
		t.Errorf("stdout = %q, want %q", stdout.String(), "input\n")
	}
	if b, err := os.ReadFile(filepath.Join(out, "r.txt")); err != nil || string(b) != "result\n" {
		t.Errorf("out/r.txt = %q, %v; want %q", b, err, "result\n")
	}
	if _, err := os.Stat(filepath.Join(cache, sandbox.AutoPruneStamp)); err != nil {
		t.Errorf("the run did not prune its cache: %v", err)
	}
}

// TestAutoPrune checks that a run prunes the cache at most once a day and keeps
// entries used within the month.
func TestAutoPrune(t *testing.T) {
	cache := t.TempDir()
	old := time.Now().Add(-40 * 24 * time.Hour)
	stale := filepath.Join(cache, "images", strings.Repeat("d", 64))
	recent := filepath.Join(cache, "images", strings.Repeat("e", 64))
	for _, d := range []string{stale, recent} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	autoPrune(cache, &stderr)
	if _, err := os.Stat(stale); err == nil || !strings.Contains(stderr.String(), "pruned 1 cache entries") {
		t.Fatalf("first prune left %s (stderr %q), want it removed and said", stale, stderr.String())
	}
	if _, err := os.Stat(recent); err != nil {
		t.Fatalf("prune removed an entry used lately: %v", err)
	}
	// Within a day of the last prune, nothing is pruned.
	if err := os.MkdirAll(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	autoPrune(cache, &stderr)
	if _, err := os.Stat(stale); err != nil {
		t.Errorf("a second prune within a day removed %s", stale)
	}
}
