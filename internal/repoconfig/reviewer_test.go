package repoconfig

import (
	"strings"
	"testing"
)

func TestReviewer(t *testing.T) {
	const claude = "harness:\n  name: claude-code\n  version: 2.1.328\n"
	for _, tc := range []struct {
		name, file string
		on         bool
		harness    string
		min        float64
		err        string
	}{
		{name: "absent: on, the repository's harness", file: claude, on: true, harness: HarnessClaudeCode, min: DefaultMinConfidence},
		{name: "true", file: claude + "reviewer: true\n", on: true, harness: HarnessClaudeCode, min: DefaultMinConfidence},
		{name: "false", file: claude + "reviewer: false\n", on: false, harness: HarnessClaudeCode, min: DefaultMinConfidence},
		{name: "its own harness and threshold", file: claude + "reviewer:\n  harness:\n    name: command\n    command: sh review.sh\n  min_confidence: 0.5\n",
			on: true, harness: HarnessCommand, min: 0.5},
		{name: "a threshold only", file: "reviewer:\n  min_confidence: 1\n", on: true, min: 1},
		{name: "a threshold above 1", file: "reviewer:\n  min_confidence: 1.5\n", err: "reviewer.min_confidence is 1.5"},
		{name: "a negative threshold", file: "reviewer:\n  min_confidence: -0.1\n", err: "reviewer.min_confidence"},
		{name: "a misspelt key", file: "reviewer:\n  min_konfidence: 0.9\n", err: "reviewer.min_konfidence is not a reviewer setting"},
		{name: "a misspelt harness key", file: "reviewer:\n  harness:\n    name: command\n    comand: x\n", err: "reviewer.harness.comand"},
		{name: "a floating harness version", file: "reviewer:\n  harness:\n    name: codex\n    version: latest\n", err: "pin an exact release"},
		{name: "a harness without a name", file: "reviewer:\n  harness:\n    version: 1.2.3\n", err: "reviewer.harness.name is missing"},
		{name: "a word", file: "reviewer: sometimes\n", err: "want true, false or a mapping"},
		{name: "a list", file: "reviewer: [a]\n", err: "want true, false or a mapping"},
		{name: "fix rounds past the bound", file: "bounds:\n  fix_rounds: 11\n", err: "bounds.fix_rounds is 11"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse([]byte("version: 1\n" + tc.file))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.ReviewerOn() != tc.on || p.ReviewerHarness().Name != tc.harness || p.Reviewer.MinConfidence != tc.min {
				t.Fatalf("on %v, harness %q, min %v", p.ReviewerOn(), p.ReviewerHarness().Name, p.Reviewer.MinConfidence)
			}
		})
	}
	if d := Default(); !d.ReviewerOn() || d.Reviewer.MinConfidence != DefaultMinConfidence || d.Bounds.FixRounds != 2 {
		t.Fatalf("default reviewer %+v, fix rounds %d", d.Reviewer, d.Bounds.FixRounds)
	}
}
