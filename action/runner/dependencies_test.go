package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/repoconfig"
)

// TestCheckDependencies: the runner takes from serve exactly the dependencies the
// policy it read lists, with their own token, and nothing for a plan run.
func TestCheckDependencies(t *testing.T) {
	pol, err := repoconfig.Parse([]byte("version: 1\ndependencies: {repositories: [acme/lib, acme/conf]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	grant := func(deps []string, tok string) wire.ExchangeResponse {
		return wire.ExchangeResponse{InstallationToken: "ghs_run", Dependencies: deps, DependencyToken: tok}
	}
	tests := []struct {
		name    string
		stage   wire.Stage
		resp    wire.ExchangeResponse
		wantErr string
	}{
		{"as listed", wire.StageImplement, grant([]string{"ACME/conf", "acme/lib"}, "ghs_dep"), ""},
		{"one more", wire.StageImplement, grant([]string{"acme/conf", "acme/lib", "acme/secret"}, "ghs_dep"), "lists"},
		{"one fewer", wire.StageImplement, grant([]string{"acme/lib"}, "ghs_dep"), "lists"},
		{"without the token", wire.StageImplement, grant([]string{"acme/conf", "acme/lib"}, ""), "without their token"},
		{"the run's token", wire.StageImplement, grant([]string{"acme/conf", "acme/lib"}, "ghs_run"), "run's own token"},
		{"a plan run", wire.StagePlan, grant(nil, ""), ""},
		{"a plan run granted them", wire.StagePlan, grant([]string{"acme/conf", "acme/lib"}, "ghs_dep"), "lists"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{WorkItem: wire.WorkItem{Repository: "acme/app", Issue: 1}, Stage: tt.stage}
			err := checkDependencies(cfg, pol, tt.resp)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("got %v; want %q", err, tt.wantErr)
			}
		})
	}
	t.Run("no dependencies, a token all the same", func(t *testing.T) {
		cfg := Config{WorkItem: wire.WorkItem{Repository: "acme/app", Issue: 1}, Stage: wire.StageImplement}
		if err := checkDependencies(cfg, repoconfig.Default(), grant(nil, "ghs_dep")); err == nil {
			t.Fatal("a dependency token with no dependency was taken")
		}
	})
}

// TestDependencyEnv: real git, given the environment, rewrites the URLs go and
// submodules use for a dependency to the gateway, and leaves another repository's alone.
func TestDependencyEnv(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	if got := dependencyEnv("https://github.com", nil); got != nil {
		t.Fatalf("env without dependencies: %v", got)
	}
	env := dependencyEnv("http://127.0.0.1:8080", []string{"acme/lib", "acme/conf"})
	if !slices.Contains(env, "GOPRIVATE=github.com/acme/lib,github.com/acme/conf") {
		t.Fatalf("GOPRIVATE missing: %v", env)
	}
	for _, tt := range []struct{ in, want string }{
		{"https://github.com/acme/lib", guestGateway + "/git/acme/lib.git"},
		{"https://github.com/acme/lib.git", guestGateway + "/git/acme/lib.git"},
		{"https://github.com/acme/conf", guestGateway + "/git/acme/conf.git"},
		{"https://github.com/acme/app", "https://github.com/acme/app"},
		{"https://github.com/evil/lib", "https://github.com/evil/lib"},
	} {
		t.Run(tt.in, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command("git", "ls-remote", "--get-url", tt.in)
			cmd.Dir = dir
			cmd.Env = append(append(os.Environ(), "HOME="+dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+filepath.Join(dir, "none")), env...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("git: %v\n%s", err, out)
			}
			if got := strings.TrimSpace(string(out)); got != tt.want {
				t.Fatalf("%s rewritten to %s, want %s", tt.in, got, tt.want)
			}
		})
	}
	if h := moduleHost("https://ghes.example.com/"); h != "ghes.example.com" {
		t.Fatalf("module host of a GitHub Enterprise Server: %s", h)
	}
}
