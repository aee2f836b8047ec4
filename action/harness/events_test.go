package harness

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/internal/hiddenchar"
)

// TestEventTextHidesNothing: a repository's program writes its events file inside the
// VM, and their tool names and summaries reach the audit log and the evidence. It
// hides text in them with every kind of character a reader cannot see: a Hangul filler
// and a combining grapheme joiner (default-ignorable letters and marks, not format
// characters), a variation selector, an unassigned tag character, the object
// replacement character, beside the bidirectional controls and zero-width spaces a
// format check catches. None may come out: each is a space, the one rule of
// internal/hiddenchar.
func TestEventTextHidesNothing(t *testing.T) {
	hidden := "a\u3164b\u034Fc\uFE0Fd\U000E0002e\uFFFCf\u202Eg\u200Bh\u115Fi"
	line, err := json.Marshal(map[string]any{"kind": "tool_call", "tool": "Bash" + hidden, "call_id": hidden,
		"summary": hidden, "status": hidden})
	if err != nil {
		t.Fatal(err)
	}
	var got []Event
	if _, err := ReadEvents(strings.NewReader(string(line)+"\n"), 1, func(e Event) { got = append(got, e) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("events %+v", got)
	}
	e := got[0]
	for name, s := range map[string]string{"tool": e.Tool, "call id": e.CallID, "summary": e.Summary, "status": e.Status} {
		for _, r := range s {
			if hiddenchar.Is(r) {
				t.Errorf("the %s %q holds the hidden character %U", name, s, r)
			}
		}
		if !strings.HasSuffix(s, "a b c d e f g h i") {
			t.Errorf("the %s %q does not show its text with a space for each hidden character", name, s)
		}
	}
}
