package recordtrust

import (
	"testing"

	"github.com/bumperdev/bumper/app/ledger"
)

// TestInterrupted: which label sets are a write Bumper left halfway (put right at start)
// and which a person looks at, as an attacker who replays an older signed record and
// sets labels would try them: undoing a /stop, or an item that ended, is never put right.
func TestInterrupted(t *testing.T) {
	for _, tc := range []struct {
		name   string
		state  ledger.State
		labels []ledger.State
		from   ledger.State // "" when not an interrupted write
	}{
		{"the old label alone", ledger.Verifying, []ledger.State{ledger.Running}, ledger.Running},
		{"the old label beside the new", ledger.InReview, []ledger.State{ledger.Verifying, ledger.InReview}, ledger.Verifying},
		{"a replayed running record beside stopped", ledger.Running, []ledger.State{ledger.Stopped, ledger.Running}, ""},
		{"a replayed running record under stopped alone", ledger.Running, []ledger.State{ledger.Stopped}, ""},
		{"awaiting approval beside done", ledger.AwaitingApproval, []ledger.State{ledger.Done, ledger.AwaitingApproval}, ""},
		{"awaiting approval beside failed", ledger.AwaitingApproval, []ledger.State{ledger.Failed, ledger.AwaitingApproval}, ""},
		{"awaiting approval beside error", ledger.AwaitingApproval, []ledger.State{ledger.Error, ledger.AwaitingApproval}, ""},
		{"a label the record cannot have come from", ledger.AwaitingApproval, []ledger.State{ledger.InReview}, ""},
		{"two labels, neither the record's", ledger.AwaitingApproval, []ledger.State{ledger.Running, ledger.Verifying}, ""},
		{"three labels", ledger.InReview, []ledger.State{ledger.Running, ledger.Verifying, ledger.InReview}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &LabelError{State: tc.state}
			for _, l := range tc.labels {
				e.Labels = append(e.Labels, l.Label())
			}
			from, ok := e.Interrupted()
			if ok != (tc.from != "") || from != tc.from {
				t.Errorf("Interrupted() = %q, %v; want %q", from, ok, tc.from)
			}
		})
	}
}
