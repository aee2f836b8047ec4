package approverefusal

import (
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/app/ledger"
)

func TestChangedParts(t *testing.T) {
	tests := []struct {
		changed []string
		want    string
	}{
		{nil, "title or body"},
		{[]string{"labels"}, "title or body"},
		{[]string{"body"}, "body"},
		{[]string{"title", "state", "body"}, "title and body"},
	}
	for _, tt := range tests {
		if got := ChangedParts(tt.changed); got != tt.want {
			t.Errorf("ChangedParts(%q) = %q, want %q", tt.changed, got, tt.want)
		}
	}
}

func TestRefusal(t *testing.T) {
	const current, full = "0123456789ab", "0123456789abcdef"
	now := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	recent := &ledger.SpecChange{At: now.Add(-90 * time.Second), By: "mallory", What: "body"}
	unseen := &ledger.SpecChange{At: now.Add(-time.Hour), What: "title or body"}
	tests := []struct {
		name   string
		change *ledger.SpecChange
		args   []string
		want   string // "" for none; else a part of the refusal
	}{
		{"bare, never edited", nil, nil, ""},
		{"bare, edited long ago", unseen, nil, ""},
		{"bare, edited within the window", recent, nil, "The body changed 1m30s ago (@mallory), so a bare `/approve` could approve"},
		{"names the short id", recent, []string{current}, ""},
		{"names it in backticks, upper case", recent, []string{"`0123456789AB`"}, ""},
		{"names the full revision", recent, []string{full}, ""},
		{"names another", unseen, []string{"ffff"}, "`ffff` is not the current revision of this issue; the current one is `0123456789ab`: the title or body changed 1h0m0s ago (an edit Bumper did not see as it happened)"},
		{"names another, never edited", nil, []string{"ffff"}, "the current one is `0123456789ab`. Read the issue again"},
		{"an argument echoed short and inert", nil, []string{"a\x00b`" + strings.Repeat("x", 100)}, "`ab" + strings.Repeat("x", 76) + "` is not"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Refusal(current, full, tt.change, tt.args, now, 10*time.Minute)
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Fatalf("Refusal = %q, want %q", got, tt.want)
			}
		})
	}
}
