package workitem

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/logkey"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/app/workitem/pullmatch"
	"github.com/bumperdev/bumper/internal/mdcode"
	"github.com/bumperdev/bumper/internal/repoconfig"
	"github.com/bumperdev/bumper/internal/revision"
)

// RunEvent is a workflow_run or workflow_job webhook about a run, translated.
type RunEvent struct {
	Delivery     string
	Repo         Repo
	RunID        int64
	WorkflowPath string
	Status       string // queued, in_progress, completed
	Conclusion   string
	Runner       string
}

// HandleRun moves a work item as its run progresses. Runs Bumper did not dispatch (any
// other workflow, or a run unknown to the ledger) are ignored.
func (s *Service) HandleRun(ctx context.Context, gh GitHub, ev RunEvent) error {
	if ev.WorkflowPath != "" && ev.WorkflowPath != ".github/workflows/"+s.opts.Workflow {
		return nil
	}
	if _, ok, err := s.findRun(ctx, gh, ev.Repo, ev.RunID); err != nil || !ok {
		return err
	}
	if err := s.handleRun(ctx, gh, ev); err != nil {
		return err
	}
	// A run that was queued, started or ended moves the queue of the others waiting
	// for a runner.
	return s.refreshQueue(ctx, gh, ev.Repo.FullName)
}

// handleRun is HandleRun's change to the run's own work item.
func (s *Service) handleRun(ctx context.Context, gh GitHub, ev RunEvent) error {
	id, ok := s.itemByRun(ev.Repo.FullName, ev.RunID)
	if !ok {
		return nil
	}
	w, err := wire.ParseWorkItem(id)
	if err != nil {
		return err
	}
	defer s.lock(id)()
	it, err := s.load(ctx, gh, ev.Repo, w.Issue)
	if err != nil || it == nil {
		return err
	}
	var att *ledger.Attempt
	for i := range it.rec.Attempts {
		if it.rec.Attempts[i].RunID == ev.RunID {
			att = &it.rec.Attempts[i]
		}
	}
	if att == nil {
		return nil
	}
	current := att.Number == len(it.rec.Attempts)
	changed := false
	if ev.Runner != "" && att.Runner != ev.Runner {
		att.Runner, changed = ev.Runner, true
		if att.RunnerAt.IsZero() {
			att.RunnerAt = s.now().UTC()
		}
		it.rec.Queue = nil
	}
	if ev.Status == "completed" && att.Outcome == "" {
		att.Outcome, att.EndedAt, changed = ev.Conclusion, s.now().UTC(), true
		// A run of an earlier attempt (one that handed its pull request on) finishing
		// changes only its own line of the record.
		if current {
			if err := s.runEnded(ctx, gh, it, att.Number, ev.Conclusion); err != nil {
				return err
			}
		}
	}
	if !changed {
		return nil
	}
	return s.save(ctx, gh, it, ev.Delivery)
}

// runEnded decides what a finished run means for its work item.
func (s *Service) runEnded(ctx context.Context, gh GitHub, it *item, attempt int, conclusion string) error {
	rec := it.rec
	if !rec.State.Active() {
		return nil
	}
	if rec.State == ledger.Planning {
		if conclusion == "success" && rec.PlanRevision != "" {
			return nil
		}
		return s.move(ctx, it, ledger.Failed, fmt.Sprintf("the plan run ended (%s) without posting a plan", conclusion))
	}
	a := rec.CurrentAttempt()
	if rec.State == ledger.Reviewing && a != nil && a.Number == attempt && a.Stage == StageReview {
		// The review run ended without posting its verdict (it would have moved the item
		// on): late, killed or broken, which is never a pass.
		why := fmt.Sprintf("the review run (attempt %d) ended (%s) without a verdict", attempt, conclusion)
		if a.RunReason != "" {
			why += "; the runner says: " + oneLine(a.RunReason)
		}
		return s.reviewMissing(ctx, gh, it, why)
	}
	pol, err := s.policy(ctx, gh, it.repo.FullName)
	switch {
	case isInvalidPolicy(err):
		pol = repoconfig.Default()
	case err != nil:
		return err
	}
	if a != nil && a.Number == attempt && wire.RoundStage(a.Stage) && rec.PullRequest != 0 {
		// A round that did not deliver leaves its pull request as it was: humans get it
		// back, and what waits (words collected meanwhile, a failed check, a moved base)
		// starts the next round if the bounds allow.
		why := fmt.Sprintf("%s round (attempt %d) ended (%s) without a new head", a.Stage, attempt, conclusion)
		if a.RunReason != "" {
			why += ": " + mdcode.Span(oneLine(a.RunReason))
		}
		if err := s.move(ctx, it, ledger.InReview, why); err != nil {
			return err
		}
		if a.Stage == StageRevise {
			it.replyAfterSave(rec.PullRequest, fmt.Sprintf("The revise round (attempt %d) ended (%s) without a new commit; the pull request is as it was. Its run's log says why.", attempt, conclusion))
		}
		return s.next(ctx, gh, it, pol)
	}
	used := rec.AttemptsOfStage(StageImplement)
	reason := fmt.Sprintf("attempt %d ended (%s) before a pull request was ready", attempt, conclusion)
	if a := rec.CurrentAttempt(); a != nil && a.Number == attempt && a.RunReason != "" {
		// The runner's words, shown as text: they may quote the repository or the agent.
		reason = fmt.Sprintf("attempt %d ended (%s): the runner says %s", attempt, a.RunOutcome, mdcode.Span(strings.Join(strings.Fields(a.RunReason), " ")))
	}
	reason += fmt.Sprintf("; %d of %d attempts used", used, pol.Bounds.Attempts)
	if used >= pol.Bounds.Attempts {
		reason += "; the attempt bound is reached"
	} else {
		reason += "; a maintainer can comment /retry"
	}
	zerolog.Ctx(ctx).Info().Str(logkey.WorkItem, rec.ID()).Int(logkey.Attempt, attempt).Str(logkey.Conclusion, conclusion).Msg("run ended")
	return s.move(ctx, it, ledger.Failed, reason)
}

// itemByRun finds the work item a run belongs to: from the dispatch index, else from
// the records (after a restart the dispatch index is rebuilt from them).
func (s *Service) itemByRun(repo string, runID int64) (string, bool) {
	if d, ok := s.idx.DispatchByRun(runID); ok {
		return d.ItemID, true
	}
	for _, rec := range s.idx.ByRepository(repo) {
		for _, a := range rec.Attempts {
			if a.RunID == runID {
				return rec.ID(), true
			}
		}
	}
	return "", false
}

// findRun is itemByRun that, for a run of Bumper's workflow this replica's index does
// not know, reads the repository's items whose runs may be under way from GitHub: another
// replica may have dispatched it (each sees only some of the webhooks), and its end must
// not be lost for that.
func (s *Service) findRun(ctx context.Context, gh GitHub, repo Repo, runID int64) (string, bool, error) {
	if id, ok := s.itemByRun(repo.FullName, runID); ok {
		return id, true, nil
	}
	for _, st := range []ledger.State{ledger.Planning, ledger.Running, ledger.Verifying, ledger.Reviewing} {
		issues, err := gh.IssuesWithLabel(ctx, repo.FullName, st.Label())
		if err != nil {
			return "", false, fmt.Errorf("failed to list the %s issues of %s: %w", st.Label(), repo.FullName, err)
		}
		for _, is := range issues {
			it, err := s.loadLocked(ctx, gh, repo, is.Number)
			if err != nil && !errors.Is(err, errUntrusted) {
				return "", false, err
			}
			if it == nil || it.rec == nil {
				continue
			}
			for _, a := range it.rec.Attempts {
				if a.RunID == runID {
					return it.rec.ID(), true, nil
				}
			}
		}
	}
	return "", false, nil
}

// loadLocked is load under the item's lock.
func (s *Service) loadLocked(ctx context.Context, gh GitHub, repo Repo, number int) (*item, error) {
	defer s.lock(ledger.ID(repo.FullName, number))()
	return s.load(ctx, gh, repo, number)
}

// PullEvent is a pull_request webhook, translated.
type PullEvent struct {
	Delivery string
	Action   string // opened, synchronize, closed
	Repo     Repo
	Number   int
	HeadRef  string // branch name
	// HeadRepo is the head repository's owner/name: a fork's differs from Repo's.
	HeadRepo string
	Author   string // who opened the pull request
	Merged   bool
	Sender   string
	// After is the branch's new head (synchronize).
	After string
}

// WorkBranch parses a Bumper work branch name, bumper/<issue>-<attempt>.
func WorkBranch(ref string) (issue, attempt int, ok bool) { return ledger.ParseWorkBranch(ref) }

// HandlePull follows the pull request of a work item: merging ends the work item, closing
// without merge stops it. A pull request is the work item's only once the runner that
// opened it has reported it and the App has checked it (see takePull); a branch name
// alone proves nothing, since anyone can open a pull request from a fork's branch named
// bumper/<issue>-<attempt>.
func (s *Service) HandlePull(ctx context.Context, gh GitHub, ev PullEvent) error {
	// By number first: a renamed work branch's pull request is still the item's.
	n, ok := pullmatch.Named(s.idx.ByRepository(ev.Repo.FullName), ev.Number, ev.HeadRef)
	if !ok {
		return nil
	}
	defer s.lock(ledger.ID(ev.Repo.FullName, n))()
	it, err := s.load(ctx, gh, ev.Repo, n)
	if err != nil || it == nil {
		return err
	}
	if it.stored.Handled(ev.Delivery) {
		return nil
	}
	if it.rec.PullRequest == 0 || it.rec.PullRequest != ev.Number {
		// Once checked, the number is the pull request's identity in the repository:
		// later pushes by maintainers to its branch do not make it someone else's.
		zerolog.Ctx(ctx).Info().Str(logkey.WorkItem, it.rec.ID()).Int(logkey.Pull, ev.Number).Str(logkey.User, ev.Author).Str(logkey.HeadRepo, ev.HeadRepo).
			Str(logkey.Reason, "not the pull request the run reported and the App checked").Msg("pull request is not the work item's; ignored")
		return nil
	}
	if ev.Action == "synchronize" {
		return s.pushed(ctx, gh, it, ev)
	}
	if ev.Action != "closed" {
		// opened, reopened: the runner reports its pull request itself.
		zerolog.Ctx(ctx).Debug().Str(logkey.WorkItem, it.rec.ID()).Str(logkey.Action, ev.Action).Msg("pull request event needs no change")
		return nil
	}
	if it.rec.State.Terminal() {
		return nil
	}
	to, reason := ledger.Stopped, fmt.Sprintf("@%s closed pull request #%d without merging", ev.Sender, ev.Number)
	if ev.Merged {
		to, reason = ledger.Done, fmt.Sprintf("pull request #%d was merged", ev.Number)
	}
	if err := s.move(ctx, it, to, reason); err != nil {
		return nil
	}
	return s.save(ctx, gh, it, ev.Delivery)
}

// pushed follows a push to the work branch. Bumper's own pushes (a round's) come back
// as webhooks and change nothing, but for GitHub's update of the branch the App asked
// for, whose new head they bring; anyone else's makes the branch theirs: Bumper does not
// push there again (until a writer comments /revise), says so, and stops a round under
// way.
func (s *Service) pushed(ctx context.Context, gh GitHub, it *item, ev PullEvent) error {
	rec := it.rec
	bot, err := s.botLogin(ctx)
	if err != nil {
		return err
	}
	if ev.After == "" || ev.After == rec.PullHead || rec.State.Terminal() {
		return nil
	}
	if strings.EqualFold(ev.Sender, bot) {
		if u := rec.Updating; u != nil && u.From == rec.PullHead && rec.State == ledger.InReview && rec.HumanPush == nil {
			if err := s.branchUpdated(ctx, gh, it, ev.After); err != nil {
				return err
			}
			return s.save(ctx, gh, it, ev.Delivery)
		}
		return nil
	}
	if rec.HumanPush != nil {
		return nil
	}
	rec.HumanPush = &ledger.HumanPush{By: ev.Sender, At: s.now().UTC(), Head: ev.After}
	rec.Updating = nil
	zerolog.Ctx(ctx).Info().Str(logkey.WorkItem, rec.ID()).Str(logkey.User, ev.Sender).Msg("a human pushed to the work branch; Bumper stands down from it")
	if a := rec.CurrentAttempt(); a != nil && wire.RoundStage(a.Stage) && (rec.State == ledger.Running || rec.State == ledger.Verifying) {
		if err := s.move(ctx, it, ledger.InReview, fmt.Sprintf("@%s pushed to %s during %s round %d; the round is stopped", ev.Sender, rec.WorkBranch, a.Stage, a.Number)); err != nil {
			return err
		}
	}
	it.replyAfterSave(ev.Number, fmt.Sprintf("@%s pushed to `%s`, so this pull request is yours now: Bumper will not push to this branch again, and no round will start on its own. "+
		"Its reviewer's verdict and evidence stay as they were, for the commits Bumper pushed. A writer who wants Bumper to go on from `%.12s` (keeping these commits) comments `/revise` on this pull request.",
		ev.Sender, rec.WorkBranch, ev.After))
	return s.save(ctx, gh, it, ev.Delivery)
}

// pullMismatch says why a pull request cannot be the current attempt's (pullmatch).
func pullMismatch(rec *ledger.Record, bot string, pr Pull) string {
	att := rec.CurrentAttempt()
	if att == nil {
		return "no run was dispatched"
	}
	want := WorkBranchName(rec.Issue, att.Number)
	if wire.RoundStage(att.Stage) && rec.WorkBranch != "" {
		want = rec.WorkBranch
	}
	return pullmatch.Mismatch(pullmatch.Want{Repository: rec.Repository, Bot: bot, Branch: want, Head: att.HeadCommit},
		pullmatch.Got{HeadRepo: pr.HeadRepo, Author: pr.Author, HeadRef: pr.HeadRef, HeadSHA: pr.HeadSHA})
}

// takePull records the pull request a run reports, after checking on GitHub that it is
// the one the run opened.
func (s *Service) takePull(ctx context.Context, gh GitHub, it *item, number int, head string) error {
	rec := it.rec
	att := rec.CurrentAttempt()
	switch {
	case number < 1:
		return refuse(RefusalInvalidReport, "in-review needs the pull request number")
	case !revision.IsObjectID(head):
		return refuse(RefusalInvalidReport, "the pull request's head commit %q: want the 40-hex commit the run pushed", head)
	case rec.PullRequest != 0 && rec.PullRequest != number:
		return refuse(RefusalInvalidReport, "the work item's pull request is #%d, not #%d", rec.PullRequest, number)
	case att.HeadCommit != "" && att.HeadCommit != head:
		return refuse(RefusalInvalidReport, "attempt %d already reported head %.12s, not %.12s", att.Number, att.HeadCommit, head)
	}
	pr, err := gh.PullRequest(ctx, rec.Repository, number)
	if errors.Is(err, ErrNotFound) {
		return refuse(RefusalInvalidReport, "pull request #%d does not exist in %s", number, rec.Repository)
	}
	if err != nil {
		return fmt.Errorf("failed to read pull request #%d of %s: %w", number, rec.Repository, err)
	}
	bot, err := s.botLogin(ctx)
	if err != nil {
		return err
	}
	att.HeadCommit = head
	if why := pullMismatch(rec, bot, pr); why != "" {
		att.HeadCommit = ""
		return refuse(RefusalInvalidReport, "pull request #%d is not this run's: %s", number, why)
	}
	rec.PullRequest, rec.WorkBranch, rec.PullHead = number, pr.HeadRef, head
	return nil
}

// CheckRerequest is a check_run "rerequested" webhook: someone pressed Re-run on a
// check of a Bumper pull request.
type CheckRerequest struct {
	Delivery     string
	Repo         Repo
	PullRequests []int
	Sender       string
	SenderType   string
}

// HandleCheckRerequest treats Re-run on a failed work item's pull request as /retry,
// with the same permission check.
func (s *Service) HandleCheckRerequest(ctx context.Context, gh GitHub, ev CheckRerequest) error {
	for _, pr := range ev.PullRequests {
		n, ok, err := s.itemOfPull(ctx, gh, ev.Repo.FullName, pr, "")
		if err != nil || !ok {
			if err != nil {
				return err
			}
			continue
		}
		it, err := s.load(ctx, gh, ev.Repo, n)
		if err != nil && !errors.Is(err, errUntrusted) {
			return err
		}
		if err != nil || it == nil || it.rec.PullRequest != pr {
			continue // a pull request named like the item's branch, not its own
		}
		return s.HandleComment(ctx, gh, CommentEvent{Delivery: ev.Delivery, Repo: ev.Repo,
			Issue: Issue{Number: n, Comments: -1}, Author: ev.Sender, AuthorType: ev.SenderType, Body: "/retry"})
	}
	return nil
}
