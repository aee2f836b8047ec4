package workitem

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/app/authz"
	"github.com/bumperdev/bumper/app/command"
	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/logkey"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/app/workitem/pullmatch"
	"github.com/bumperdev/bumper/internal/repoconfig"
)

// CommentEvent is an issue_comment "created" webhook, translated. Edited comments never
// reach the service: an edit must not approve.
type CommentEvent struct {
	Delivery   string
	Repo       Repo
	Issue      Issue // as the payload has it: current title and body
	CommentID  int64
	Author     string
	AuthorType string
	Body       string
	// IsPull marks a comment on a pull request: /stop, /retry and /status there act on
	// the work item whose pull request it is.
	IsPull bool
}

// itemOfPull is pullmatch.Item for an event that names the pull request by number
// alone (a comment, a check run): one this replica's index does not know is read from
// GitHub, unless its author is known (author) and is not the App.
func (s *Service) itemOfPull(ctx context.Context, gh GitHub, repo string, number int, author string) (int, bool, error) {
	if n, ok := pullmatch.ByNumber(s.idx.ByRepository(repo), number); ok {
		return n, true, nil
	}
	bot, err := s.botLogin(ctx)
	if err != nil || (author != "" && !strings.EqualFold(author, bot)) {
		return 0, false, err
	}
	pr, err := gh.PullRequest(ctx, repo, number)
	if errors.Is(err, ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("failed to read pull request #%d: %w", number, err)
	}
	n, ok := pullmatch.Item(s.idx.ByRepository(repo), repo, bot, number, pullmatch.Got{HeadRepo: pr.HeadRepo, Author: pr.Author, HeadRef: pr.HeadRef})
	return n, ok, nil
}

// HandleComment runs the command a comment gives, if any.
func (s *Service) HandleComment(ctx context.Context, gh GitHub, ev CommentEvent) error {
	cmd, ok := command.Parse(ev.Body)
	if !ok {
		return nil
	}
	bot, err := s.botLogin(ctx)
	if err != nil {
		return err
	}
	if strings.EqualFold(ev.Author, bot) {
		return nil
	}
	if (cmd.Kind == command.Revise || cmd.Kind == command.Steer) && authz.IsBot(ev.Author, ev.AuthorType) {
		// Their words would reach the agent, and a bot's never do, allowed_bots or not.
		return nil
	}
	repo, n := ev.Repo.FullName, ev.Issue.Number
	where := n // replies go where the command was given
	if ev.IsPull {
		issue, ok, err := s.itemOfPull(ctx, gh, repo, n, ev.Issue.Author)
		if err != nil || !ok {
			// Not a Bumper pull request: its commands are someone else's business.
			return err
		}
		n = issue
	}
	defer s.lock(ledger.ID(repo, n))()
	var it *item
	if ev.IsPull {
		it, err = s.load(ctx, gh, ev.Repo, n)
	} else {
		it, err = s.loadIssue(ctx, gh, ev.Repo, ev.Issue)
	}
	if errors.Is(err, errUntrusted) {
		if ev.IsPull {
			// The record is the issue's: the issue's own events mark it, never a comment
			// whose payload describes the pull request.
			return nil
		}
		return s.markUntrusted(ctx, gh, ev.Repo, ev.Issue, it.commentID, err, "")
	}
	if err != nil {
		return err
	}
	if it != nil && it.stored.Handled(ev.Delivery) {
		return nil
	}
	if ev.IsPull && (it == nil || it.rec.PullRequest != where) {
		return nil // a branch named as the item's work branch, not its pull request
	}
	pol, err := s.policy(ctx, gh, repo)
	if err != nil && !isInvalidPolicy(err) {
		return err
	}
	if err != nil {
		return s.reply(ctx, gh, repo, where, fmt.Sprintf("Bumper cannot act: the repository's configuration is invalid (%v).", err))
	}
	if no, err := s.allowed(ctx, gh, repo, ev.Author, ev.AuthorType, pol); err != nil {
		return err
	} else if no != nil {
		if no.bot {
			return nil
		}
		zerolog.Ctx(ctx).Info().Str(logkey.User, ev.Author).Str(logkey.Command, cmd.Name).Str(logkey.Reason, no.why).Msg("refused a command")
		return s.reply(ctx, gh, repo, where, fmt.Sprintf("Sorry @%s, only %s can give Bumper commands here; %s. Nothing was changed.",
			ev.Author, who(pol), no.why))
	}
	if cmd.Kind == command.Help || cmd.Kind == command.Unknown {
		return s.reply(ctx, gh, repo, where, command.HelpText)
	}
	if it == nil {
		return s.reply(ctx, gh, repo, where, fmt.Sprintf("There is no Bumper work item on this issue. Label it `%s` to start one.", s.opts.TriggerLabel))
	}
	switch cmd.Kind {
	case command.Approve:
		if ev.IsPull {
			// An approval binds to the issue's text, which the approver reads there.
			return s.reply(ctx, gh, repo, where, fmt.Sprintf("Approvals are given on the issue: comment `/approve` on #%d, where the text it binds to is shown.", n))
		}
		return s.approve(ctx, gh, it, ev, pol, cmd)
	case command.Stop:
		if it.rec.State.Terminal() {
			return s.reply(ctx, gh, repo, where, fmt.Sprintf("Nothing to stop: the work item is %s.", it.rec.State))
		}
		return s.stop(ctx, gh, it, fmt.Sprintf("@%s asked to stop", ev.Author), ev.Delivery)
	case command.Retry:
		return s.retry(ctx, gh, it, ev.Author, ev.Delivery, pol)
	case command.Status:
		return s.reply(ctx, gh, repo, where, s.opts.Sealer.Summary(it.rec))
	case command.Revise:
		if !ev.IsPull {
			msg := "`/revise` is given on the work item's pull request, once there is one."
			if it.rec.PullRequest != 0 {
				msg = fmt.Sprintf("`/revise` is given on the work item's pull request: comment it on #%d.", it.rec.PullRequest)
			}
			return s.reply(ctx, gh, repo, where, msg)
		}
		return s.revise(ctx, gh, it, ev, cmd)
	case command.Steer:
		return s.steer(ctx, gh, it, ev, cmd, where)
	}
	return nil
}

// approve binds an approval to the current revision and dispatches the run. It approves
// only text the approver had the chance to read: see approveRefusal.
func (s *Service) approve(ctx context.Context, gh GitHub, it *item, ev CommentEvent, pol repoconfig.Config, cmd command.Command) error {
	repo, n, rec := it.repo.FullName, it.rec.Issue, it.rec
	if rec.State != ledger.AwaitingApproval {
		msg := fmt.Sprintf("Nothing to approve: the work item is %s.", rec.State)
		if rec.State.Active() && rec.ActiveApproval() != nil {
			msg = fmt.Sprintf("Already approved: attempt %d is %s.", len(rec.Attempts), rec.State)
		}
		return s.reply(ctx, gh, repo, n, msg)
	}
	if pol.Approvers.DistinctFromRequester && strings.EqualFold(ev.Author, rec.Requester) {
		return s.reply(ctx, gh, repo, n, fmt.Sprintf("Sorry @%s, this repository asks for a second person: the requester cannot approve their own request. Nothing was changed.", ev.Author))
	}
	if used := rec.AttemptsOfStage(StageImplement); used >= pol.Bounds.Attempts {
		if err := s.move(ctx, it, ledger.Failed, fmt.Sprintf("all %d attempts are used", pol.Bounds.Attempts)); err != nil {
			return err
		}
		return s.save(ctx, gh, it, ev.Delivery)
	}
	// The payload carries the issue as it is now. Text that differs from the record's is
	// an edit Bumper did not see (serve was down, or the delivery was lost): it counts as
	// made just now.
	changed, _ := s.noteSpec(it, ev.Issue, "", "title or body")
	if why := s.approveRefusal(rec, cmd); why != "" {
		zerolog.Ctx(ctx).Info().Str(logkey.User, ev.Author).Str(logkey.Reason, why).Msg("refused an approval")
		if changed {
			if err := s.save(ctx, gh, it, ev.Delivery); err != nil {
				return err
			}
		}
		return s.reply(ctx, gh, repo, n, fmt.Sprintf("Sorry @%s, not approved: %s Nothing was started.", ev.Author, why))
	}
	head, err := gh.BranchHead(ctx, repo, rec.BaseBranch)
	if err != nil {
		return fmt.Errorf("failed to read the head of %s: %w", rec.BaseBranch, err)
	}
	rec.BaseCommit, rec.PolicyVersion = head, pol.Revision
	rec.Approvals = append(rec.Approvals, ledger.Approval{Approval: wire.Approval{By: ev.Author, At: s.now().UTC(),
		Revision: rec.ApprovalRevision(), CommentID: ev.CommentID}})
	if err := s.move(ctx, it, ledger.Running, fmt.Sprintf("approved by @%s", ev.Author)); err != nil {
		return err
	}
	if err := s.dispatch(ctx, gh, it, StageImplement); err != nil {
		return err
	}
	return s.save(ctx, gh, it, ev.Delivery)
}

// retry asks for approval again after a failed or stopped run, within the bound.
func (s *Service) retry(ctx context.Context, gh GitHub, it *item, by, delivery string, pol repoconfig.Config) error {
	repo, n, rec := it.repo.FullName, it.rec.Issue, it.rec
	if rec.State != ledger.Failed && rec.State != ledger.Stopped {
		return s.reply(ctx, gh, repo, n, fmt.Sprintf("Nothing to retry: the work item is %s.", rec.State))
	}
	if used := rec.AttemptsOfStage(StageImplement); used >= pol.Bounds.Attempts {
		return s.reply(ctx, gh, repo, n, fmt.Sprintf("Cannot retry: all %d attempts allowed by %s are used.", pol.Bounds.Attempts, repoconfig.Path))
	}
	rec.VoidApprovals("a retry asks for a new approval")
	// The next attempt works on a new branch and opens its own pull request.
	rec.PullRequest, rec.WorkBranch, rec.PullHead, rec.Verdict, rec.HumanPush = 0, "", "", nil, nil
	rec.Pending, rec.BaseMoved, rec.Updating, rec.BranchUpdates = nil, "", nil, 0
	if err := s.move(ctx, it, ledger.AwaitingApproval, fmt.Sprintf("@%s asked for a retry", by)); err != nil {
		return err
	}
	return s.save(ctx, gh, it, delivery)
}
