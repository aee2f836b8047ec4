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

// Item is the work item pull request number of repo may be the pull request of, among
// recs (the repository's records as one replica's index holds them): the one whose
// record names it; else, for a pull request the App opened (bot) from repo itself, the
// one its work branch names. Replicas behind one load balancer each see some of the
// webhooks, so one may never have seen the run report the pull request. Only the App's
// own pull requests are looked at by name, so that no one's pull requests (a writer's
// named like work branches, on an item's commit) multiply the work of an event or
// stand in for an item's; the caller still checks that the item's record names this
// pull request.
func Item(recs []*ledger.Record, repo, bot string, number int, got Got) (int, bool) {
	if n, ok := ByNumber(recs, number); ok {
		return n, true
	}
	if bot == "" || !strings.EqualFold(got.HeadRepo, repo) || !strings.EqualFold(got.Author, bot) {
		return 0, false
	}
	n, _, ok := ledger.ParseWorkBranch(got.HeadRef)
	return n, ok
}

// Named is the work item an event whose payload names the pull request's branch (a
// pull_request or pull_request_review webhook) may concern: the index's, else the one
// the branch names, a fork's or a person's included. The handler's check of the
// record decides, and it logs a pull request that is not the item's.
func Named(recs []*ledger.Record, number int, headRef string) (int, bool) {
	if n, ok := ByNumber(recs, number); ok {
		return n, true
	}
	n, _, ok := ledger.ParseWorkBranch(headRef)
	return n, ok
}

// ByNumber is the work item among recs whose record names pull request number.
func ByNumber(recs []*ledger.Record, number int) (int, bool) {
	for _, rec := range recs {
		if rec.PullRequest == number && number != 0 {
			return rec.Issue, true
		}
	}
	return 0, false
}
