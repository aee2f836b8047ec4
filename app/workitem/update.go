package workitem

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/logkey"
	"github.com/bumperdev/bumper/app/workitem/pullmatch"
	"github.com/bumperdev/bumper/app/workitem/verdictpost"
	"github.com/bumperdev/bumper/internal/repoconfig"
	"github.com/bumperdev/bumper/internal/revision"
)

// Keeping the pull request mergeable: when its base branch moves, a pull request that
// now conflicts gets an update round (stage update: the runner merges the base's new
// head into the branch in the VM, and the agent resolves the conflicts); one that is
// only behind, where the base branch's protection requires branches to be up to date,
// is updated by GitHub (update-branch), with no VM. Both count against
// bounds.update_rounds.

// PushEvent is a push webhook, translated: a branch moved.
type PushEvent struct {
	Delivery string
	Repo     Repo
	Ref      string // refs/heads/<branch>
	After    string
	Deleted  bool
	Sender   string
}

// mergeableReads bounds how often the App reads a pull request while GitHub computes
// whether it merges (it does so in the background after either branch moved); the
// waits between the reads double from mergeableWait.
const (
	mergeableReads = 5
	mergeableWait  = time.Second
)

// errMergeUnknown is GitHub not having said whether a pull request merges after
// mergeableReads reads.
var errMergeUnknown = errors.New("GitHub has not computed whether the pull request merges")

// HandlePush follows pushes to the base branches of work items' pull requests: a pull
// request in review is looked at now; one a run works on, once it is back in review.
// Pushes to a work branch arrive as pull_request synchronize (HandlePull).
//
// The items are those this replica knows of and those whose pull requests GitHub lists
// into the branch: replicas behind one load balancer each see some of the webhooks, so
// this one may never have seen the run report the pull request, and a push it alone
// receives must not pass the item by.
func (s *Service) HandlePush(ctx context.Context, gh GitHub, ev PushEvent) error {
	branch, ok := strings.CutPrefix(ev.Ref, "refs/heads/")
	if _, _, work := WorkBranch(branch); !ok || work || ev.Deleted || !revision.IsObjectID(ev.After) {
		return nil
	}
	seen, base := map[int]bool{}, branch == ev.Repo.DefaultBranch
	recs := s.idx.ByRepository(ev.Repo.FullName)
	for _, rec := range recs {
		base = base || rec.BaseBranch == branch
		if rec.PullRequest != 0 && rec.BaseBranch == branch && !rec.State.Terminal() {
			seen[rec.Issue] = true
		}
	}
	var errs []error
	if base { // items start on the default branch: no other is any item's base
		bot, err := s.botLogin(ctx)
		var pulls []Pull
		if err == nil {
			pulls, err = gh.OpenPulls(ctx, ev.Repo.FullName, branch)
		}
		if err != nil {
			// The items known are still looked at; the delivery fails, so that the rest
			// are when it is handled again.
			errs = append(errs, fmt.Errorf("failed to list the pull requests into %s: %w", branch, err))
		}
		for _, p := range pulls {
			if n, ok := pullmatch.Item(recs, ev.Repo.FullName, bot, p.Number, pullmatch.Got{HeadRepo: p.HeadRepo, Author: p.Author, HeadRef: p.HeadRef}); ok {
				seen[n] = true
			}
		}
	}
	for _, n := range slices.Sorted(maps.Keys(seen)) {
		if err := s.baseMovedOn(ctx, gh, ev, branch, n); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// baseMovedOn notes the base's new head on one work item and, if its pull request is in
// review, looks at whether it still merges.
func (s *Service) baseMovedOn(ctx context.Context, gh GitHub, ev PushEvent, branch string, issue int) error {
	defer s.lock(ledger.ID(ev.Repo.FullName, issue))()
	it, err := s.load(ctx, gh, ev.Repo, issue)
	if errors.Is(err, errUntrusted) {
		return nil // the issue's own events mark it
	}
	if err != nil || it == nil {
		return err
	}
	rec := it.rec
	if it.stored.Handled(ev.Delivery) || rec.PullRequest == 0 || rec.BaseBranch != branch || rec.State.Terminal() {
		return nil
	}
	rec.BaseMoved = ev.After
	if rec.State != ledger.InReview || rec.Updating != nil {
		// One run at a time: the update waits for the pull request to be back in review.
		return s.save(ctx, gh, it, ev.Delivery)
	}
	pol, err := s.policyAt(ctx, gh, rec.Repository, rec.BaseCommit)
	if isInvalidPolicy(err) {
		pol = repoconfig.Default()
	} else if err != nil {
		return err
	}
	settled, err := s.maybeUpdate(ctx, gh, it, pol)
	if err != nil {
		return err
	}
	if !settled {
		// The delivery fails, so that it is handled again (serve's redelivery sweep)
		// once GitHub knows.
		return fmt.Errorf("pull request #%d of %s: %w after %d reads", rec.PullRequest, rec.ID(), errMergeUnknown, mergeableReads)
	}
	return s.save(ctx, gh, it, ev.Delivery)
}

// mergeability reads the pull request until GitHub has computed whether it merges,
// at most mergeableReads times; settled is false when it had not by then.
func (s *Service) mergeability(ctx context.Context, gh GitHub, rec *ledger.Record) (pr Pull, settled bool, err error) {
	wait := mergeableWait
	for i := 0; ; i++ {
		pr, err = gh.PullRequest(ctx, rec.Repository, rec.PullRequest)
		if err != nil {
			return Pull{}, false, fmt.Errorf("failed to read pull request #%d: %w", rec.PullRequest, err)
		}
		if pr.Mergeable != nil || pr.State != "open" {
			return pr, true, nil
		}
		if i+1 == mergeableReads {
			return pr, false, nil
		}
		if err := s.opts.Wait(ctx, wait); err != nil {
			return Pull{}, false, err
		}
		wait *= 2
	}
}

// maybeUpdate keeps a pull request in review mergeable after its base moved
// (rec.BaseMoved): a conflict starts an update round; a branch only behind, where the
// base's protection requires up-to-date branches (or GitHub says behind), is updated by
// GitHub. settled is false when GitHub had not computed the merge yet: BaseMoved stays
// for the next look.
func (s *Service) maybeUpdate(ctx context.Context, gh GitHub, it *item, pol repoconfig.Config) (settled bool, err error) {
	rec := it.rec
	to := rec.BaseMoved
	if rec.State != ledger.InReview || to == "" || rec.Updating != nil {
		return true, nil
	}
	if h := rec.HumanPush; h != nil {
		rec.BaseMoved = ""
		rec.Reason = fmt.Sprintf("%s moved to %.12s, but Bumper stands down from the pull request: @%s pushed to `%s`", rec.BaseBranch, to, h.By, rec.WorkBranch)
		return true, nil
	}
	pr, settled, err := s.mergeability(ctx, gh, rec)
	if err != nil || !settled {
		return settled, err
	}
	if pr.State != "open" || pr.HeadSHA != rec.PullHead {
		// Closed, or pushed to by someone: those events decide.
		rec.BaseMoved = ""
		return true, nil
	}
	conflicts := !*pr.Mergeable
	need := conflicts || pr.MergeableState == "behind"
	if !need {
		if need, err = gh.UpToDateRequired(ctx, rec.Repository, rec.BaseBranch); err != nil {
			return true, fmt.Errorf("failed to read the protection of %s: %w", rec.BaseBranch, err)
		}
	}
	rec.BaseMoved = ""
	if !need {
		return true, nil
	}
	if conflicts {
		// GitHub judged the merge against the base's head now, perhaps past this push (pushes
		// in a row): the round merges that head, one round for all; unread, the push's.
		if head, err := gh.BranchHead(ctx, rec.Repository, rec.BaseBranch); err == nil && revision.IsCommitID(head) {
			to = head
		}
	}
	what := fmt.Sprintf("%s moved to %.12s", rec.BaseBranch, to)
	if conflicts {
		what += fmt.Sprintf(" and pull request #%d conflicts with it", rec.PullRequest)
	} else {
		what += fmt.Sprintf(" and pull request #%d must be up to date with it to merge", rec.PullRequest)
	}
	used, bound := rec.RoundsUsed(StageUpdate), pol.Bounds.UpdateRounds
	why, err := s.roundGate(ctx, gh, rec)
	switch {
	case err != nil:
		return true, err
	case why != "":
		rec.Reason = fmt.Sprintf("%s, but no update starts: %s", what, why)
		return true, nil
	case bound == 0:
		rec.Reason = fmt.Sprintf("%s, but this repository turned updates off (bounds.update_rounds: 0); it is left to people", what)
		return true, nil
	case used >= bound:
		rec.Reason = fmt.Sprintf("%s, but the %d update(s) bounds.update_rounds allows on a pull request are used; it is left to people", what, bound)
		return true, nil
	}
	if conflicts {
		if err := s.move(ctx, it, ledger.Running, fmt.Sprintf("%s: update round %d of %d", what, used+1, bound)); err != nil {
			return true, err
		}
		if err := s.dispatch(ctx, gh, it, StageUpdate); err != nil {
			return true, err
		}
		if a := rec.CurrentAttempt(); a != nil && a.Stage == StageUpdate && a.Outcome == "" {
			a.UpdateTo = to
			zerolog.Ctx(ctx).Info().Str(logkey.WorkItem, rec.ID()).Int(logkey.Attempt, a.Number).Msg("dispatched an update round")
		}
		return true, nil
	}
	files, err := gh.PullFiles(ctx, rec.Repository, rec.PullRequest)
	if err != nil {
		return true, fmt.Errorf("failed to list the files of pull request #%d: %w", rec.PullRequest, err)
	}
	err = gh.UpdateBranch(ctx, rec.Repository, rec.PullRequest, rec.PullHead)
	if errors.Is(err, ErrUnprocessable) {
		// The head moved meanwhile, or GitHub found nothing to merge: the events of the
		// push decide.
		zerolog.Ctx(ctx).Info().Err(err).Str(logkey.WorkItem, rec.ID()).Msg("GitHub did not update the pull request's branch")
		return true, nil
	}
	if err != nil {
		return true, fmt.Errorf("failed to update the branch of pull request #%d: %w", rec.PullRequest, err)
	}
	rec.Updating = &ledger.BranchUpdate{From: rec.PullHead, To: to, Diff: verdictpost.DiffDigest(files), At: s.now().UTC()}
	rec.BranchUpdates++
	rec.Reason = fmt.Sprintf("%s: GitHub merges it into %s (update %d of %d, no VM)", what, rec.WorkBranch, used+1, bound)
	zerolog.Ctx(ctx).Info().Str(logkey.WorkItem, rec.ID()).Int(logkey.Pull, rec.PullRequest).Msg("asked GitHub to update the pull request's branch")
	return true, nil
}

// branchUpdated takes the head GitHub's update of the branch pushed (the App's own push,
// as a synchronize webhook): the bumper/verdict check must be on it. When the pull
// request's diff is what it was, the merge changed nothing the reviewer judged, and the
// verdict is carried over to the new head; otherwise a review run judges it.
func (s *Service) branchUpdated(ctx context.Context, gh GitHub, it *item, head string) error {
	rec := it.rec
	u := rec.Updating
	rec.Updating = nil
	files, err := gh.PullFiles(ctx, rec.Repository, rec.PullRequest)
	if err != nil {
		return fmt.Errorf("failed to list the files of pull request #%d: %w", rec.PullRequest, err)
	}
	rec.PullHead = head
	pol, err := s.policyAt(ctx, gh, rec.Repository, rec.BaseCommit)
	if isInvalidPolicy(err) {
		pol = repoconfig.Default()
	} else if err != nil {
		return err
	}
	v := rec.Verdict
	switch {
	case verdictpost.DiffDigest(files) == u.Diff && v != nil && v.Head == u.From:
		id, err := gh.CreateCheckRun(ctx, rec.Repository, checkRunOf(verdictpost.Carried(v, u, head)))
		if err != nil {
			return fmt.Errorf("failed to post %s on %.12s: %w", CheckVerdict, head, err)
		}
		v.Head, v.CheckRunID = head, id
		rec.Reason = fmt.Sprintf("GitHub merged %.12s of %s into the branch; the diff is unchanged, so the verdict on %.12s stands for %.12s", u.To, rec.BaseBranch, u.From, head)
	case pol.ReviewerOn():
		if err := s.move(ctx, it, ledger.Reviewing, fmt.Sprintf("GitHub merged %.12s of %s into the branch and the pull request's diff changed: a review run judges %.12s", u.To, rec.BaseBranch, head)); err != nil {
			return err
		}
		return s.dispatch(ctx, gh, it, StageReview)
	default:
		rec.Reason = fmt.Sprintf("GitHub merged %.12s of %s into the branch (now %.12s)", u.To, rec.BaseBranch, head)
	}
	return s.next(ctx, gh, it, pol)
}
