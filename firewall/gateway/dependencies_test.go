package gateway

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/firewall/audit"
)

// TestDependencyConfig: a configuration that would serve a dependency with the wrong
// token, or the run's repository as a dependency, is refused when the gateway is built.
func TestDependencyConfig(t *testing.T) {
	al, err := audit.Open(filepath.Join(t.TempDir(), "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer al.Close()
	tests := []struct {
		name    string
		gitBase string
		deps    []string
		token   string
		wantErr string
	}{
		{"two", "https://github.com", []string{"octo/lib", "octo/conf"}, "ghs_dep", ""},
		{"none", "https://github.com", nil, "", ""},
		{"no git gateway", "", []string{"octo/lib"}, "ghs_dep", "git gateway is off"},
		{"no token", "https://github.com", []string{"octo/lib"}, "", "no dependency token"},
		{"the run's token", "https://github.com", []string{"octo/lib"}, "ghs_run", "is the run's token"},
		{"the run's repository", "https://github.com", []string{"OCTO/Demo"}, "ghs_dep", "run's own repository"},
		{"twice", "https://github.com", []string{"octo/lib", "Octo/Lib"}, "ghs_dep", "listed twice"},
		{"not owner/name", "https://github.com", []string{"octo/lib/x"}, "ghs_dep", "not owner/name"},
		{"dot dot", "https://github.com", []string{"octo/.."}, "ghs_dep", "not owner/name"},
		{"with .git", "https://github.com", []string{"octo/lib.git"}, "ghs_dep", "not owner/name"},
		{"a pattern", "https://github.com", []string{"octo/*"}, "ghs_dep", "not owner/name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{GitBase: tt.gitBase, Token: "ghs_run", Repository: "octo/demo", Dependencies: tt.deps, DependencyToken: tt.token, Audit: al}
			if tt.gitBase == "" {
				cfg.AnthropicBase, cfg.AnthropicKey = "https://api.anthropic.com", "k"
			}
			g, err := New(cfg)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				g.Close()
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("got %v; want an error saying %q", err, tt.wantErr)
			}
		})
	}
}
