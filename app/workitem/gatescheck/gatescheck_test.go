package gatescheck

import (
	"strings"
	"testing"
)

// TestClearAndRestore: a clearance and its dismissal keep the runner's findings below
// whatever they add, once, however often the check is written again; ClearedBy names
// only the review that cleared it; a summary past GitHub's limit is cut to it.
func TestClearAndRestore(t *testing.T) {
	const findings = "- **review** protected_paths at `.claude/settings.json`"
	_, cleared := Cleared("maintainer", 7, findings)
	_, restored := Restored("maintainer", 7, cleared)
	_, again := Cleared("second", 9, restored)
	for _, c := range []struct {
		name, summary, head string
	}{
		{"cleared", cleared, "Approved by `maintainer` in review 7"},
		{"restored", restored, "The approval by `maintainer` (review 7)"},
		{"cleared again", again, "Approved by `second` in review 9"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !strings.HasPrefix(c.summary, c.head) || !strings.HasSuffix(c.summary, "\n\n"+findings) || strings.Count(c.summary, "\n\n") != 1 {
				t.Errorf("summary %q", c.summary)
			}
			if Findings(c.summary) != findings {
				t.Errorf("Findings = %q", Findings(c.summary))
			}
		})
	}
	for _, c := range []struct {
		who  string
		id   int64
		want bool
	}{{"maintainer", 7, true}, {"maintainer", 8, false}, {"second", 7, false}} {
		if got := ClearedBy(cleared, c.who, c.id); got != c.want {
			t.Errorf("ClearedBy(%s, %d) = %v", c.who, c.id, got)
		}
	}
	if ClearedBy(restored, "maintainer", 7) {
		t.Error("a restored check counts as cleared")
	}
	if _, long := Cleared("maintainer", 7, strings.Repeat("x", 2*MaxSummary)); len(long) > MaxSummary {
		t.Errorf("summary of %d bytes, past GitHub's %d", len(long), MaxSummary)
	}
}
