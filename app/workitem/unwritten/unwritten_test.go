package unwritten

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/app/ledger"
)

// TestNote: the reply says what was not written and why as far as Bumper can tell, and
// quotes nothing of the error it was given.
func TestNote(t *testing.T) {
	secret := errors.New("<!-- an issue's words --> 422 body")
	tests := []struct {
		name    string
		what    Part
		created bool
		err     error
		refused bool
		want    []string
	}{
		{"a label", StateLabel, false, secret, false, []string{"could not move this issue's `bumper:…` label to `bumper:running`.", "status comment is up to date"}},
		{"the first status comment, too long", StatusComment, true, fmt.Errorf("encode: %w", ledger.ErrTooLong), false,
			[]string{"(it would be longer than a GitHub comment may be), so there is no work item", "the `agent:implement` label again"}},
		{"an update GitHub refused", StatusComment, false, secret, true,
			[]string{"status comment (GitHub refused its content: HTTP 422)", "(it would now be `running`) is not recorded", "re-reads the issue"}},
		{"an update, no reason known", StatusComment, false, secret, false, []string{"could not update this work item's status comment, so"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Note(tt.what, tt.created, ledger.Running, tt.err, tt.refused, "agent:implement")
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("Note = %q, want it to say %q", got, w)
				}
			}
			if strings.Contains(got, "issue's words") || strings.Contains(got, "422 body") {
				t.Errorf("Note quotes the error: %q", got)
			}
		})
	}
}
