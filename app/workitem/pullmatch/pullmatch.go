// Package pullmatch says whether a pull request is the one a work item's run opened:
// from the base repository itself (not a fork), opened by the App (the runner opens it
// with the installation token), on the attempt's work branch, with the commit the run
// reported pushing as its head; and which work item an event on a pull request may
// concern (Item).
package pullmatch

import (
	"fmt"
	"strings"

	"github.com/bumperdev/bumper/app/ledger"
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

// Item is the work item a pull request of repo may be the pull request of, among recs
// (the repository's records as one replica's index holds them): the one whose record
// names it, else, for a pull request from repo itself, the one its work branch names.
// Replicas behind one load balancer each see some of the webhooks, so one may never
// have seen the run report its pull request; a renamed branch is known by number. A
// branch's name proves nothing (a writer can name a branch so): the caller checks that
// the item's record names this pull request.
func Item(recs []*ledger.Record, repo string, number int, headRepo, headRef string) (int, bool) {
	for _, rec := range recs {
		if rec.PullRequest == number && number != 0 {
			return rec.Issue, true
		}
	}
	if !strings.EqualFold(headRepo, repo) {
		return 0, false
	}
	n, _, ok := ledger.ParseWorkBranch(headRef)
	return n, ok
}
