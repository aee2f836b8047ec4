package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
