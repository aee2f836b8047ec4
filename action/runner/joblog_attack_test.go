package runner

import (
	"bytes"
	"strings"
	"testing"
)

// TestAttackerSplitsTokenAtLongLineCut (outside review of #25): a line longer than maxPendingLine
// goes to the job log in pieces, each masked alone. The agent prints a long line whose
// first write ends inside a token, then the rest, with no newline between them: the
// piece is cut before the token, never inside it, so the token is masked whole.
func TestAttackerSplitsTokenAtLongLineCut(t *testing.T) {
	tok := "ghp_" + strings.Repeat("Zq8", 12)
	var job bytes.Buffer
	rec := newRecorder(Config{Log: &job})
	var file bytes.Buffer
	w := rec.logTo(&file, "agent-round-1.log")
	pad := strings.Repeat("a", maxPendingLine-12) + " "
	for _, s := range []string{pad + tok[:11], tok[11:] + " done\n"} {
		if _, err := w.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	_ = w.Close()
	if got := job.String(); strings.Contains(got, tok[4:20]) || !strings.Contains(got, "ghp_******** (40 characters) done") {
		t.Errorf("the job log holds the token, split across the long line's cut: %q", got[max(0, len(got)-200):])
	}
}
