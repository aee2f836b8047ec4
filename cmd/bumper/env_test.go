package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/internal/testgate"
)

// TestEnvBuildRefusals: what `bumper env build` refuses before it builds anything, each
// saying what is wrong.
func TestEnvBuildRefusals(t *testing.T) {
	noEnv := t.TempDir()
	os.MkdirAll(filepath.Join(noEnv, ".github"), 0o755)
	os.WriteFile(filepath.Join(noEnv, ".github", "bumper.yml"), []byte("version: 1\n"), 0o644)
	badEnv := t.TempDir()
	os.MkdirAll(filepath.Join(badEnv, ".github"), 0o755)
	os.WriteFile(filepath.Join(badEnv, ".github", "bumper.yml"), []byte("version: 1\nenvironment:\n  setup: ../outside.sh\n"), 0o644)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no directory", []string{"env", "build"}, 2, "want one directory"},
		{"no subcommand", []string{"env"}, 2, "bumper env build"},
		{"no file", []string{"env", "build", t.TempDir()}, 1, "failed to read .github/bumper.yml"},
		{"no environment", []string{"env", "build", noEnv}, 1, "no environment: section"},
		{"a setup outside the tree", []string{"env", "build", badEnv}, 1, "setup"},
		{"a repository that is a path", []string{"env", "build", "--repo", "../../etc", noEnv}, 2, "want owner/name"},
		{"a repository without an owner", []string{"env", "build", "--repo", "widgets", noEnv}, 2, "want owner/name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), tc.args, &stdout, &stderr); code != tc.code || !strings.Contains(stderr.String(), tc.want) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, stderr.String(), tc.code, tc.want)
			}
		})
	}
}

// TestCheckoutFiles: a git checkout gives its tracked files (an untracked .env stays
// out of the setup's VM), a plain directory is copied whole, and --repo wants a clean
// git checkout: a plain directory, a changed file or an untracked one is refused.
func TestCheckoutFiles(t *testing.T) {
	testgate.Command(t, "git", "git")
	ctx := context.Background()
	dir := t.TempDir()
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.org"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(name, content string) {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if files, err := checkoutFiles(ctx, dir, false); err != nil || files != nil {
		t.Fatalf("a plain directory: %q, %v", files, err)
	}
	if _, err := checkoutFiles(ctx, dir, true); err == nil || !strings.Contains(err.Error(), "root of a git checkout") {
		t.Fatalf("--repo on a plain directory: %v", err)
	}
	write("go.mod", "module x\n")
	write("scripts/setup.sh", "echo\n")
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	write(".env", "TOKEN=secret\n")
	files, err := checkoutFiles(ctx, dir, false)
	if err != nil || strings.Join(files, " ") != "go.mod scripts/setup.sh" {
		t.Fatalf("tracked files %q, %v", files, err)
	}
	if _, err := checkoutFiles(ctx, dir, true); err == nil || !strings.Contains(err.Error(), "must be clean") {
		t.Fatalf("--repo with an untracked file: %v", err)
	}
	os.Remove(filepath.Join(dir, ".env"))
	write("scripts/setup.sh", "echo changed\n")
	if _, err := checkoutFiles(ctx, dir, true); err == nil || !strings.Contains(err.Error(), "must be clean") {
		t.Fatalf("--repo with a changed file: %v", err)
	}
	git("commit", "-q", "-am", "changed")
	if files, err := checkoutFiles(ctx, dir, true); err != nil || len(files) != 2 {
		t.Fatalf("--repo on a clean checkout: %q, %v", files, err)
	}
}
