package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/sandbox/image/imagetest"
)

func TestSandboxUsage(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr string
	}{
		{"no subcommand", []string{"sandbox"}, 2, "want 'bumper sandbox run"},
		{"unknown subcommand", []string{"sandbox", "start"}, 2, "want 'bumper sandbox run"},
		{"help", []string{"sandbox", "--help"}, 0, "--allow"},
		{"no command", []string{"sandbox", "run", "--image", "/nonexistent"}, 2, "no command"},
		{"bad memory", []string{"sandbox", "run", "--memory", "lots", "--", "true"}, 2, `size "lots"`},
		{"bad disk", []string{"sandbox", "run", "--disk", "-1", "--", "true"}, 2, "--disk"},
		{"resolve without allow", []string{"sandbox", "run", "--resolve", "a.test:127.0.0.1", "--", "true"}, 2, "--resolve without --allow"},
		{"missing image", []string{"sandbox", "run", "--image", "/nonexistent/image", "--", "true"}, 1, "/nonexistent/image"},
		{"guest agent on a host", []string{"guest-agent"}, 1, "only as PID 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, &stdout, &stderr)
			if code != tt.wantCode {
				t.Fatalf("exit code = %d, want %d; stderr: %s", code, tt.wantCode, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), tt.wantStderr)
			}
		})
	}
}

// TestSandboxRun runs a command in a real VM through the command line, as a user would.
func TestSandboxRun(t *testing.T) {
	for _, bin := range []string{"qemu-system-x86_64", "qemu-img", "mkfs.ext4"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("bumper sandbox run needs %s (apt-get install qemu-system-x86 qemu-utils e2fsprogs)", bin)
		}
	}
	im := imagetest.Image(t)
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "in.txt"), []byte("input\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"sandbox", "run", "--cold", "--image", im.Dir(), "--workspace", ws, "--out", out,
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
}
