package repoconfig_test

import (
	"testing"

	"github.com/bumperdev/bumper/internal/repoconfig"
)

// TestProtectedPaths: absent keeps the gates' defaults (nil), [] protects nothing, a
// list is read as written.
func TestProtectedPaths(t *testing.T) {
	tests := []struct {
		name, doc string
		rules     int
		isNil     bool
	}{
		{"absent", "version: 1\n", 0, true},
		{"null", "version: 1\nprotected_paths: ~\n", 0, true},
		{"empty", "version: 1\nprotected_paths: []\n", 0, false},
		{"two rules", "version: 1\nprotected_paths:\n  - paths: [\".github/**\", \"**/CLAUDE.md\"]\n    action: review\n  - paths: [\"deploy/**/*.tf\"]\n    action: block\n", 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := repoconfig.Parse([]byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			if (p.ProtectedPaths == nil) != tt.isNil || len(p.ProtectedPaths) != tt.rules {
				t.Fatalf("ProtectedPaths = %#v", p.ProtectedPaths)
			}
		})
	}
}
