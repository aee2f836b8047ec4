// Package gatescheck is the bumper/gates check run as the App writes it again over the
// runner's: cleared by a writer's approving review of its commit, and failed again when
// that approval is dismissed. The runner's findings stay below whatever the App adds, so
// a person reads the same list in each.
package gatescheck

import (
	"fmt"
	"strings"

	"github.com/bumperdev/bumper/internal/textcut"
)

// Name is the check run's name.
const Name = "bumper/gates"

// MaxSummary is GitHub's limit on a check run's summary.
const MaxSummary = 65535

// clearedMark is how a cleared check names the approval that cleared it: its summary's
// first paragraph, the findings after it; restoredMark, the dismissal of that approval.
const (
	clearedMark  = "Approved by `%s` in review %d of this commit: a person has read the findings below.\n\n"
	restoredMark = "The approval by `%s` (review %d) that cleared these findings was dismissed: a writer's approving review of this commit clears them again.\n\n"
)

// Cleared is the check's title and summary once approver's review reviewID of its
// commit cleared the findings of summary (the runner's, or an earlier clearance's).
func Cleared(approver string, reviewID int64, summary string) (string, string) {
	head := fmt.Sprintf(clearedMark, approver, reviewID)
	return "Findings approved by a writer's review", head + textcut.Fit(Findings(summary), MaxSummary-len(head), textcut.Ellipsis)
}

// ClearedBy reports whether summary is the clearance approver's review reviewID gave.
func ClearedBy(summary, approver string, reviewID int64) bool {
	return strings.HasPrefix(summary, fmt.Sprintf(clearedMark, approver, reviewID))
}

// Restored is the check's title and summary once approver's review reviewID, which
// cleared summary, was dismissed.
func Restored(approver string, reviewID int64, summary string) (string, string) {
	head := fmt.Sprintf(restoredMark, approver, reviewID)
	return "Findings need a person: the approval that cleared them was dismissed", head + textcut.Fit(Findings(summary), MaxSummary-len(head), textcut.Ellipsis)
}

// Findings is the runner's findings in a summary, without the paragraph a clearance or
// its dismissal put before them.
func Findings(summary string) string {
	if strings.HasPrefix(summary, "Approved by `") || strings.HasPrefix(summary, "The approval by `") {
		if _, rest, ok := strings.Cut(summary, "\n\n"); ok {
			return rest
		}
	}
	return summary
}
