package evidence_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/internal/repoconfig"
)

// TestAllowlistPatchApplies commits each shape of .github/bumper.yml to a real
// repository, checks that the proposed patch passes `git apply --check` there, applies
// it, and reads the result with the policy's own parser: the entries are on the list,
// and every line the file had is still in it.
func TestAllowlistPatchApplies(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	const setup = "environment:\n  packages: [curl]\n  setup: ./setup.sh\n"
	tests := []struct {
		name string
		file *string // nil: no file at the base commit
		key  string
	}{
		{"no file", nil, evidence.PolicyKeyAllowlist},
		{"a file without allowlist", ptr("# our policy\nversion: 1\nbounds:\n  attempts: 2 # per item\n"), evidence.PolicyKeyAllowlist},
		{"a block allowlist", ptr("version: 1\nallowlist:\n  - github.com # code\n  # the registry\n  - registry.npmjs.org\nbounds:\n  attempts: 2\n"), evidence.PolicyKeyAllowlist},
		{"a block allowlist at the key's indentation, last in the file", ptr("version: 1\nallowlist:\n- github.com\n- registry.npmjs.org"), evidence.PolicyKeyAllowlist},
		{"a flow allowlist", ptr("version: 1\nallowlist: [github.com, \"registry.npmjs.org\"] # two\nbounds:\n  attempts: 2\n"), evidence.PolicyKeyAllowlist},
		{"an empty flow allowlist", ptr("version: 1\nallowlist: []\n"), evidence.PolicyKeyAllowlist},
		{"an empty block allowlist", ptr("version: 1\nallowlist:\nbounds:\n  attempts: 2\n"), evidence.PolicyKeyAllowlist},
		{"environment without allow", ptr("version: 1\n" + setup), evidence.PolicyKeyEnvironmentAllow},
		{"environment with a block allow", ptr("version: 1\nenvironment:\n  allow:\n    - deb.debian.org\n  packages: [curl]\n  setup: ./setup.sh\nallowlist: [github.com]\n"), evidence.PolicyKeyEnvironmentAllow},
		{"environment with a flow allow", ptr("version: 1\n" + setup + "  allow: [deb.debian.org]\n"), evidence.PolicyKeyEnvironmentAllow},
	}
	add := []string{"pkgs.example.test", "pypi.unlisted.test:8443"}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			repo := t.TempDir()
			var before []byte
			if tc.file != nil {
				before = []byte(*tc.file)
				writeFile(t, filepath.Join(repo, repoconfig.Path), before)
			}
			writeFile(t, filepath.Join(repo, "setup.sh"), []byte("#!/bin/sh\n"))
			git(t, repo, "init", "-q")
			git(t, repo, "add", "-A")
			git(t, repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
			patch, err := evidence.AllowlistPatch(before, tc.key, add)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(repo, "..", tc.name+".patch"), []byte(patch))
			pf := filepath.Join(repo, "..", tc.name+".patch")
			if out, err := exec.Command("git", "-C", repo, "apply", "--check", pf).CombinedOutput(); err != nil {
				t.Fatalf("git apply --check: %v\n%s\npatch:\n%s", err, out, patch)
			}
			git(t, repo, "apply", pf)
			after, err := os.ReadFile(filepath.Join(repo, repoconfig.Path))
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := repoconfig.Parse(after)
			if err != nil {
				t.Fatalf("the patched file does not parse: %v\n%s", err, after)
			}
			list := cfg.Allowlist
			if tc.key == evidence.PolicyKeyEnvironmentAllow {
				list = cfg.Environment.Allow
			}
			for _, a := range add {
				if !slices.Contains(list, a) {
					t.Errorf("%s is %q after the patch, without %s:\n%s", tc.key, list, a, after)
				}
			}
			for _, l := range strings.Split(string(before), "\n") {
				// A one-line flow list is the one line the patch rewrites.
				flow := strings.Contains(l, ": [")
				if !flow && !strings.Contains(string(after), l) {
					t.Errorf("the line %q was lost:\n%s", l, after)
				}
			}
			if !strings.Contains(patch, "why is") {
				t.Errorf("the patch leaves no question for a person:\n%s", patch)
			}
		})
	}
}

// TestAllowlistPatchRefuses: what the editor cannot extend safely, or what is not an
// entry, is an error rather than a patch that might mean something else.
func TestAllowlistPatchRefuses(t *testing.T) {
	tests := []struct {
		name, file string
		entries    []string
	}{
		{"a multi-line flow list", "version: 1\nallowlist: [a.test,\n  b.test]\n", []string{"c.test"}},
		{"an anchor", "version: 1\nallowlist: &hosts\n  - a.test\n", []string{"c.test"}},
		{"a quote in an entry", "version: 1\n", []string{`a.test" , evil`}},
		{"a newline in an entry", "version: 1\n", []string{"a.test\nbudget: 100"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if p, err := evidence.AllowlistPatch([]byte(tc.file), evidence.PolicyKeyAllowlist, tc.entries); err == nil {
				t.Fatalf("a patch:\n%s", p)
			}
		})
	}
}

func ptr(s string) *string { return &s }

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", args, err, out)
	}
}
