package repoconfig_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/bumperdev/bumper/internal/repoconfig"
	"github.com/bumperdev/bumper/internal/repoconfig/repoconfigtest"
)

// TestSchemaStrings: the schema's patterns read the file's strings as the parser does.
// Strings made at random from the pieces each syntax is made of (a fixed seed, so a
// failure repeats) go into a document, and the parser and the schema must agree on it,
// or disagree only as a named row of TestSchemaRefuses or TestSchemaStricter.
func TestSchemaStrings(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 600
	}
	stray := func(s string, perr error) string {
		// internal/hostpattern trims blanks, and brackets at both ends of an address.
		if perr == nil && (s != strings.TrimSpace(s) || strings.ContainsAny(s, "[]")) {
			return "a stray bracket after an address"
		}
		return ""
	}
	glob := func(s string, perr error) string {
		if perr != nil && strings.Contains(perr.Error(), "not a valid pattern") {
			return cannotGlob
		}
		return ""
	}
	host := []string{"a", "f", "g", "x", "X", "0", "1", "9", "2", "5", "6", ".", ":", "::", "[", "]", "*", "*.", "-", "_", ",",
		"255", "256", "65535", "65536", "ffff", "0x", "00", "A", "G", " ", "%", "/"}
	path := []string{"a", "b.sh", ".", "..", "/", "/", "~", "*", "?", "[", "]", "-", ".git", ".GIT", ".gi", "\\", " ", "\t",
		"\u00a0", "home", "agent", "/home/agent", "**", "x", "é", "\u0085", "~/", "//", "home/"}
	for _, tc := range []struct {
		name     string
		alphabet []string
		doc      func(s string) map[string]any
		known    func(s string, perr error) string
	}{
		{"allowlist", host, func(s string) map[string]any { return map[string]any{"allowlist": []string{s}} }, stray},
		{"environment.allow", host, func(s string) map[string]any {
			return map[string]any{"environment": map[string]any{"setup": "s.sh", "allow": []string{s}}}
		}, stray},
		{"environment.setup", path, func(s string) map[string]any { return map[string]any{"environment": map[string]any{"setup": s}} }, nil},
		{"environment.inputs", path, func(s string) map[string]any {
			return map[string]any{"environment": map[string]any{"setup": "s.sh", "inputs": []string{s}}}
		}, glob},
		{"environment.cache_paths", path, func(s string) map[string]any {
			return map[string]any{"environment": map[string]any{"setup": "s.sh", "cache_paths": []string{s}}}
		}, nil},
		{"environment.packages", []string{"a", "b", "0", "+", ".", "-", "=", ":", "/", "A", "é", " "}, func(s string) map[string]any {
			return map[string]any{"environment": map[string]any{"packages": []string{s}}}
		}, nil},
		{"github_api", []string{"GET", "HEAD", "POST", "get", " ", " ", "\t", "/", "repos", "*", "**", "\u3000", "x"}, func(s string) map[string]any {
			return map[string]any{"github_api": []string{s}}
		}, nil},
		{"dependencies.repositories", []string{"a", "Z", "0", "-", ".", "..", "_", "/", "*", "%", " ", ".git", ".GIT", "é"}, func(s string) map[string]any {
			return map[string]any{"dependencies": map[string]any{"repositories": []string{s}}}
		}, nil},
		{"verification", []string{"a", " ", "\t", "\x00", "\u00a0", "\u3000", "\n", "x"}, func(s string) map[string]any {
			return map[string]any{"verification": []string{s}}
		}, nil},
		{"harness.command", []string{"a", " ", "\t", "\x00", "\u00a0", "\u3000", "\n", "x"}, func(s string) map[string]any {
			return map[string]any{"harness": map[string]any{"name": "command", "command": s}}
		}, nil},
		{"harness.model", []string{"a", "A", "0", ".", "_", ":", "/", "-", " ", "é"}, func(s string) map[string]any {
			return map[string]any{"harness": map[string]any{"name": "codex", "version": "0.171.0", "model": s}}
		}, nil},
		{"harness.version", []string{"0", "1", "12", ".", "-", "+", "a", "v", "latest", "LATEST", " "}, func(s string) map[string]any {
			return map[string]any{"harness": map[string]any{"name": "claude-code", "version": s}}
		}, nil},
		{"bounds.wall_time", []string{"0", "1", "12", ".", "h", "m", "s", "ms", "us", "µs", "μs", "ns", "-", "+", " ", "d", "x"}, func(s string) map[string]any {
			return map[string]any{"bounds": map[string]any{"wall_time": s}}
		}, func(s string, perr error) string {
			if perr == nil && strings.HasPrefix(s, "-") {
				return "a negative zero"
			}
			return ""
		}},
		{"approvers.min_permission", []string{"write", "Write", "maintain", "ADMIN", "read", "triage", "w", " ", "x"}, func(s string) map[string]any {
			return map[string]any{"approvers": map[string]any{"min_permission": s}}
		}, func(s string, perr error) string {
			if perr == nil && s != strings.TrimSpace(s) {
				return "blanks around a level"
			}
			return ""
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(len(tc.name))))
			failures := 0
			for range n {
				var b strings.Builder
				for k := rng.IntN(8); k >= 0; k-- {
					b.WriteString(tc.alphabet[rng.IntN(len(tc.alphabet))])
				}
				s := b.String()
				m := tc.doc(s)
				m["version"] = 1
				raw, err := yaml.Marshal(m)
				if err != nil {
					t.Fatal(err)
				}
				_, perr := repoconfig.Parse(raw)
				serr := repoconfigtest.Validate(raw)
				if (perr == nil) == (serr == nil) || tc.known != nil && tc.known(s, perr) != "" {
					continue
				}
				if failures++; failures <= 10 {
					t.Errorf("%q: the parser and the schema disagree\nparser: %v\nschema: %v", s, orAccepts(perr), orAccepts(serr))
				}
			}
		})
	}
}
