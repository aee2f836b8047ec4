package credentials

import (
	"strings"
	"testing"
)

// TestGrantAttacks: a repository tries to get a credential it was not granted, by its
// name, case, or a repository string that is not owner/name. Every one is refused.
func TestGrantAttacks(t *testing.T) {
	h, err := Load(hostFile(t, goodFile, 0o600, 0o400))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		repo  string
		names []string
	}{
		{"tools", []string{"npm-corp"}},            // no name: "tools" + "/*"
		{"tools/", []string{"npm-corp"}},           // empty name
		{"tools/*", []string{"npm-corp"}},          // the pattern itself
		{"tools/a/b", []string{"npm-corp"}},        // three parts
		{"acme/web/", []string{"npm-corp"}},        // trailing slash
		{"acme/web ", []string{"npm-corp"}},        // trailing space
		{" acme/web", []string{"npm-corp"}},        // leading space
		{"acme/web\n", []string{"npm-corp"}},       // line break
		{"acme/../acme/web", []string{"npm-corp"}}, // climbing
		{"acme/api", []string{"NPM-CORP"}},         // case in the name
		{"acme/api", []string{"npm-corp "}},        // space in the name
		{"acme/web", []string{"npm-corp", "npm-corp-x"}},
		{"acme/api", []string{"npm-corp", "npm-corp"}},
		{"", []string{"npm-corp"}},
		{"/web", []string{"npm-corp"}},
		{"acme/web", []string{"*"}},
	} {
		t.Run(strings.ReplaceAll(tc.repo, "/", "|"), func(t *testing.T) {
			if got, err := h.Grant(tc.repo, tc.names); err == nil {
				t.Fatalf("Grant(%q, %q) granted %d credentials", tc.repo, tc.names, len(got))
			}
		})
	}
}
