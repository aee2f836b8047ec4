// Package pullmatch says whether a pull request is the one a work item's run opened:
// from the base repository itself (not a fork), opened by the App (the runner opens it
// with the installation token), on the attempt's work branch, with the commit the run
// reported pushing as its head.
package pullmatch

import (
	"fmt"
	"strings"
)

// Want is what the pull request must be: the work item's repository, the App's bot
// login, the attempt's work branch and the head the run reported ("" when none).
type Want struct{ Repository, Bot, Branch, Head string }

// Got is the pull request as GitHub has it.
type Got struct{ HeadRepo, Author, HeadRef, HeadSHA string }

// Mismatch says why got cannot be the pull request want describes, or "" when it can.
func Mismatch(want Want, got Got) string {
	switch {
	case !strings.EqualFold(got.HeadRepo, want.Repository):
		return fmt.Sprintf("its head is in %s, not in %s", got.HeadRepo, want.Repository)
	case !strings.EqualFold(got.Author, want.Bot):
		return fmt.Sprintf("it was opened by @%s, not by Bumper", got.Author)
	case got.HeadRef != want.Branch:
		return fmt.Sprintf("its branch is %s, not %s", got.HeadRef, want.Branch)
	case want.Head == "":
		return "the run has reported no head commit"
	case got.HeadSHA != want.Head:
		return fmt.Sprintf("its head is %.12s, not the run's commit %.12s", got.HeadSHA, want.Head)
	}
	return ""
}
