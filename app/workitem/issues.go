package workitem

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/app/authz"
	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/logkey"
	"github.com/bumperdev/bumper/app/workitem/approverefusal"
	"github.com/bumperdev/bumper/internal/repoconfig"
)

// IssueEvent is an `issues` webhook, translated.
type IssueEvent struct {
	Delivery string
	Action   string // labeled, unlabeled, edited, closed, reopened
	Repo     Repo
	Issue    Issue
	Label    string // labeled, unlabeled
	// Changed names what an edit changed ("title", "body"), from the payload's changes.
	Changed    []string
	Sender     string
	SenderType string
}

// HandleIssue applies an issues event.
func (s *Service) HandleIssue(ctx context.Context, gh GitHub, ev IssueEvent) error {
	bot, err := s.botLogin(ctx)
	if err != nil {
		return err
	}
	if strings.EqualFold(ev.Sender, bot) {
		// The App's own label changes come back as webhooks; they change nothing.
		return nil
	}
	defer s.lock(ledger.ID(ev.Repo.FullName, ev.Issue.Number))()
	is := ev.Issue
	if ev.Action == "labeled" && strings.EqualFold(ev.Label, s.opts.TriggerLabel) {
		// The one event that creates a work item looks for its status comment whatever
		// the payload counts: a redelivered label event still says the issue had no
		// comment, and a replica whose index never saw the item would make a second.
		is.Comments = -1
	}
	it, err := s.loadIssue(ctx, gh, ev.Repo, is)
	if errors.Is(err, errUntrusted) {
		if ev.Action == "labeled" && strings.EqualFold(ev.Label, s.opts.TriggerLabel) {
			// Re-labelling is how a human starts over from an untrusted record.
			return s.request(ctx, gh, ev, it.commentID, nil)
		}
		return s.markUntrusted(ctx, gh, ev.Repo, ev.Issue, it.commentID, err, ev.Sender)
	}
	if err != nil {
		return err
	}
	if it != nil && it.stored.Handled(ev.Delivery) {
		return nil
	}
	switch ev.Action {
	case "labeled":
		if !strings.EqualFold(ev.Label, s.opts.TriggerLabel) {
			return nil
		}
		if it != nil && !it.rec.State.Terminal() {
			// Labelling twice gives one work item.
			return nil
		}
		if it != nil && it.rec.State == ledger.Done {
			return s.reply(ctx, gh, ev.Repo.FullName, ev.Issue.Number,
				"This work item is done; open a new issue for further work.")
		}
		var cid int64
		var prev *ledger.Record
		if it != nil {
			cid, prev = it.commentID, it.stored
		}
		return s.request(ctx, gh, ev, cid, prev)
	case "unlabeled":
		if it == nil || !strings.EqualFold(ev.Label, s.opts.TriggerLabel) || it.rec.State.Terminal() {
			return nil
		}
		return s.stop(ctx, gh, it, fmt.Sprintf("@%s removed the %s label", ev.Sender, s.opts.TriggerLabel), ev.Delivery)
	case "closed":
		if it == nil || it.rec.State.Terminal() {
			return nil
		}
		if it.rec.State == ledger.InReview && it.rec.PullRequest != 0 {
			// "Fixes #N" closes the issue when the pull request merges, and the two
			// webhooks come in either order: the pull request's decides.
			return nil
		}
		return s.stop(ctx, gh, it, fmt.Sprintf("@%s closed the issue", ev.Sender), ev.Delivery)
	case "reopened":
		if it == nil || it.rec.State != ledger.Stopped {
			return nil
		}
		// An issue's author may reopen it whatever their permission; that must not undo
		// a maintainer's /stop.
		pol, err := s.policy(ctx, gh, ev.Repo.FullName)
		if isInvalidPolicy(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if no, err := s.allowed(ctx, gh, ev.Repo.FullName, ev.Sender, ev.SenderType, pol); err != nil {
			return err
		} else if no != nil {
			zerolog.Ctx(ctx).Info().Str(logkey.User, ev.Sender).Str(logkey.Reason, no.why).Msg("a reopening did not restart a stopped work item")
			return nil
		}
		if err := s.move(ctx, it, ledger.AwaitingApproval, fmt.Sprintf("@%s reopened the issue", ev.Sender)); err != nil {
			return nil
		}
		return s.save(ctx, gh, it, ev.Delivery)
	case "edited":
		if it == nil {
			return nil
		}
		return s.edited(ctx, gh, it, ev)
	}
	return nil
}

// request starts (or restarts) a work item for a labelling by a writer.
func (s *Service) request(ctx context.Context, gh GitHub, ev IssueEvent, commentID int64, prev *ledger.Record) error {
	// The policy of the default branch at its head, by commit: the same read serves the
	// approval's checks at the base commit later (policies are cached by commit).
	head, err := gh.BranchHead(ctx, ev.Repo.FullName, ev.Repo.DefaultBranch)
	if err != nil {
		return fmt.Errorf("failed to read the head of %s: %w", ev.Repo.DefaultBranch, err)
	}
	pol, err := s.policyAt(ctx, gh, ev.Repo.FullName, head)
	if err != nil && !isInvalidPolicy(err) {
		return err
	}
	if err != nil {
		return s.reply(ctx, gh, ev.Repo.FullName, ev.Issue.Number,
			fmt.Sprintf("Bumper cannot start: the repository's configuration is invalid (%v). Fix %s and label the issue again.", err, repoconfig.Path))
	}
	if bot, err := s.botLogin(ctx); err != nil {
		return err
	} else if ev.Issue.Author != "" && strings.EqualFold(ev.Issue.Author, bot) {
		// The loop breaker: what Bumper's own actions opened (a report, a follow-up) is
		// never work for it, whoever labels it. No answer: the labelling is the only
		// trace, and an answer could be the next link of a loop.
		zerolog.Ctx(ctx).Info().Str(logkey.User, ev.Sender).Str(logkey.Reason, "the App opened the issue").Msg("refused a labelling")
		return nil
	}
	if no, err := s.allowed(ctx, gh, ev.Repo.FullName, ev.Sender, ev.SenderType, pol); err != nil {
		return err
	} else if no != nil {
		zerolog.Ctx(ctx).Info().Str(logkey.User, ev.Sender).Str(logkey.Reason, no.why).Msg("refused a labelling")
		if no.bot {
			return nil // bots get no answer: two bots could otherwise talk forever
		}
		return s.reply(ctx, gh, ev.Repo.FullName, ev.Issue.Number,
			fmt.Sprintf("Sorry @%s, Bumper only starts work labelled by %s; %s. Nothing was changed.", ev.Sender, who(pol), no.why))
	}
	rec := &ledger.Record{Schema: ledger.SchemaVersion, Repository: ev.Repo.FullName, Issue: ev.Issue.Number,
		State: ledger.Requested, Requester: ev.Sender,
		BaseBranch: ev.Repo.DefaultBranch, BaseCommit: head, PolicyVersion: pol.Revision,
		Approvals: []ledger.Approval{}, Attempts: []ledger.Attempt{}}
	setSpec(rec, ev.Issue.Title, ev.Issue.Body)
	it := &item{repo: ev.Repo, commentID: commentID, rec: rec}
	if prev != nil {
		// A restart keeps the history (attempts count against the bound) and the
		// revision counter.
		rec.Revision, rec.Approvals, rec.Attempts = prev.Revision, prev.Approvals, prev.Attempts
		rec.VoidApprovals("the work item was requested again")
		it.stored = prev
	}
	if pol.Plan {
		if err := s.move(ctx, it, ledger.Planning, "a plan run was dispatched"); err != nil {
			return err
		}
		if err := s.dispatch(ctx, gh, it, StagePlan); err != nil {
			return err
		}
	} else if err := s.move(ctx, it, ledger.AwaitingApproval, ""); err != nil {
		return err
	}
	rec.Protection = s.protectionNotice(ctx, gh, rec, pol)
	return s.save(ctx, gh, it, ev.Delivery)
}

// edited voids approvals when the title or body changed.
func (s *Service) edited(ctx context.Context, gh GitHub, it *item, ev IssueEvent) error {
	return s.specChanged(ctx, gh, it, ev.Issue, ev.Sender, approverefusal.ChangedParts(ev.Changed), ev.Delivery)
}

func (s *Service) stop(ctx context.Context, gh GitHub, it *item, reason, delivery string) error {
	if err := s.move(ctx, it, ledger.Stopped, reason); err != nil {
		return nil
	}
	// A stopped item starts again only with a new approval.
	it.rec.VoidApprovals("the work item was stopped: " + reason)
	return s.save(ctx, gh, it, delivery)
}

// refusal says why someone may not act. bot marks a refused bot, which gets no reply:
// two bots must not answer each other forever.
type refusal struct {
	why string
	bot bool
}

// allowed checks a person (or bot) against the repository's policy; a nil refusal
// means allowed.
func (s *Service) allowed(ctx context.Context, gh GitHub, repo, user, userType string, pol repoconfig.Config) (*refusal, error) {
	bot, err := s.botLogin(ctx)
	if err != nil {
		return nil, err
	}
	if authz.IsBot(user, userType) && !authz.BotAllowed(user, bot, pol.AllowedBots) {
		return &refusal{why: "bots act only when the repository's configuration names them", bot: true}, nil
	}
	perm, err := gh.Permission(ctx, repo, user)
	if err != nil {
		return nil, fmt.Errorf("failed to check the permission of %s on %s: %w", user, repo, err)
	}
	if !authz.AtLeast(perm, pol.Approvers.MinPermission) {
		return &refusal{why: fmt.Sprintf("your permission on this repository is %s", perm)}, nil
	}
	return nil, nil
}

func who(pol repoconfig.Config) string {
	return "people with " + pol.Approvers.MinPermission + " (or higher) permission"
}

// markUntrusted moves an item whose record cannot be trusted to the error state, in a
// fresh record that says why; the old one is not carried over.
func (s *Service) markUntrusted(ctx context.Context, gh GitHub, repo Repo, is Issue, commentID int64, cause error, requester string) error {
	zerolog.Ctx(ctx).Warn().Err(cause).Str(logkey.WorkItem, ledger.ID(repo.FullName, is.Number)).Msg("untrusted work item record")
	if requester == "" {
		requester = "unknown"
	}
	rec := &ledger.Record{Schema: ledger.SchemaVersion, Repository: repo.FullName, Issue: is.Number,
		State: ledger.Error, Requester: requester,
		BaseBranch: repo.DefaultBranch, Approvals: []ledger.Approval{}, Attempts: []ledger.Attempt{},
		Reason: "the work item's record cannot be trusted: " + cause.Error()}
	setSpec(rec, is.Title, is.Body)
	it := &item{repo: repo, commentID: commentID, rec: rec}
	for _, l := range is.Labels {
		if st, ok := strings.CutPrefix(l, ledger.LabelPrefix); ok && st != string(ledger.Error) {
			if err := gh.RemoveLabel(ctx, repo.FullName, is.Number, l); err != nil {
				return fmt.Errorf("failed to remove %s: %w", l, err)
			}
		}
	}
	return s.save(ctx, gh, it, "")
}
