package workitem

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bumperdev/bumper/app/command"
	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/reveal"
	"github.com/bumperdev/bumper/app/workitem/approverefusal"
	"github.com/bumperdev/bumper/internal/repoconfig"
)

// DefaultApproveWindow is how long after an edit a bare `/approve` is refused.
const DefaultApproveWindow = 10 * time.Minute

// setSpec records the issue's current text: its revision, and what the rendered page
// hides from the approver but not from the agent.
func setSpec(rec *ledger.Record, title, body string) {
	rec.SpecRevision = ledger.SpecRevision(title, body)
	rec.SpecNotice = reveal.Render(append(reveal.ScanTitle(title), reveal.Scan(body)...))
}

// noteSpec takes the issue's current text into the record when it differs from the
// recorded one: every approval is voided and a run under way goes back to waiting. by
// is the editor's login, or "" when Bumper did not see the edit happen. It reports
// whether anything changed and whether an approval was voided.
func (s *Service) noteSpec(it *item, is Issue, by, what string) (changed, voided bool) {
	rec := it.rec
	if ledger.SpecRevision(is.Title, is.Body) == rec.SpecRevision {
		return false, false
	}
	from := rec.SpecRevision
	setSpec(rec, is.Title, is.Body)
	rec.SpecChange = &ledger.SpecChange{At: s.now().UTC(), By: by, What: what, From: from}
	who := "someone"
	if by != "" {
		who = "@" + by
	}
	voided = rec.VoidApprovals(fmt.Sprintf("%s edited the issue after approval", who))
	if voided && (rec.State == ledger.Running || rec.State == ledger.Verifying) {
		if a := rec.CurrentAttempt(); a != nil && a.Outcome == "" {
			a.Outcome, a.EndedAt = "voided", s.now().UTC()
		}
		// Running and verifying may always go back to awaiting approval.
		_ = rec.MoveTo(ledger.AwaitingApproval, "the issue was edited after approval")
	}
	return true, voided
}

// specChanged handles a change to the issue's text, seen or found late.
func (s *Service) specChanged(ctx context.Context, gh GitHub, it *item, is Issue, by, what, delivery string) error {
	changed, voided := s.noteSpec(it, is, by, what)
	if !changed {
		return nil
	}
	if err := s.save(ctx, gh, it, delivery); err != nil {
		return err
	}
	if !voided {
		return nil
	}
	who := "Someone"
	if by != "" {
		who = "@" + by
	}
	id := s.opts.Sealer.ShortID(it.rec.TextRevision())
	return s.reply(ctx, gh, it.repo.FullName, it.rec.Issue, fmt.Sprintf("%s edited the issue after it was approved, so the approval "+
		"no longer holds: a run only ever does what was approved. Its new revision is `%s`; a maintainer who has read it can comment `/approve %s`.", who, id, id))
}

// approveRefusal says why this /approve does not approve what is on the issue now, or
// "" when it does (approverefusal.Refusal).
func (s *Service) approveRefusal(rec *ledger.Record, cmd command.Command) string {
	return approverefusal.Refusal(s.opts.Sealer.ShortID(rec.TextRevision()), rec.TextRevision(), rec.SpecChange, cmd.Args, s.now(), s.opts.ApproveWindow)
}

// approvedTextHolds re-reads, at the moment credentials are minted, everything an
// approval binds (the issue's text, the plan, the repository's policy, the approval
// comment itself) and says what no longer matches, or "" when all does. A webhook that
// never arrived (serve was down; GitHub does not redeliver failed deliveries on its own)
// cannot leave an old approval standing.
func (s *Service) approvedTextHolds(ctx context.Context, gh GitHub, it *item) (string, error) {
	rec := it.rec
	is, err := gh.Issue(ctx, rec.Repository, rec.Issue)
	if err != nil {
		return "", fmt.Errorf("failed to re-read %s: %w", rec.ID(), err)
	}
	if changed, _ := s.noteSpec(it, is, "", "title or body"); changed {
		return "the issue's title or body changed after approval", nil
	}
	if rec.PlanRevision != "" {
		plan, why, err := s.readPlan(ctx, gh, rec)
		if err != nil {
			return "", err
		}
		if why != "" {
			return why, nil
		}
		if ledger.ContentRevision([]byte(plan)) != rec.PlanRevision {
			return "the plan comment was edited after approval", nil
		}
	}
	pol, err := s.policyAt(ctx, gh, rec.Repository, rec.BaseCommit)
	if isInvalidPolicy(err) {
		return fmt.Sprintf("%s no longer parses (%v)", repoconfig.Path, err), nil
	}
	if err != nil {
		return "", err
	}
	if pol.Revision != rec.PolicyVersion {
		return fmt.Sprintf("the repository's %s changed after approval", repoconfig.Path), nil
	}
	a := rec.ActiveApproval()
	if a == nil {
		return "no approval holds", nil
	}
	c, err := gh.Comment(ctx, rec.Repository, a.CommentID)
	if errors.Is(err, ErrNotFound) {
		return fmt.Sprintf("@%s's approval comment was deleted", a.By), nil
	}
	if err != nil {
		return "", fmt.Errorf("failed to re-read the approval of %s: %w", rec.ID(), err)
	}
	if !strings.EqualFold(c.Author, a.By) {
		return fmt.Sprintf("the approval points at a comment @%s did not write", a.By), nil
	}
	if cmd, ok := command.Parse(c.Body); !ok || cmd.Kind != command.Approve {
		return fmt.Sprintf("@%s's approval comment was edited and no longer says /approve", a.By), nil
	}
	return "", nil
}

// voidAtMint refuses a token exchange whose approval no longer holds, voids it, sends the
// item back to waiting for approval and says so on the issue.
func (s *Service) voidAtMint(ctx context.Context, gh GitHub, it *item, why string) error {
	id := s.opts.Sealer.ShortID(it.rec.TextRevision())
	if err := s.voidAtExchange(ctx, gh, it, why,
		fmt.Sprintf("The current revision is `%s`; a maintainer who has read it can comment `/approve %s`.", id, id)); err != nil {
		return err
	}
	return refuse(RefusalApproval, "%s", why)
}

// voidAtExchange is what a refused token exchange does before it is refused: the
// approval is voided, the item waits for another, and the issue says why, then next
// (what to do).
func (s *Service) voidAtExchange(ctx context.Context, gh GitHub, it *item, why, next string) error {
	rec := it.rec
	rec.VoidApprovals(why)
	if a := rec.CurrentAttempt(); a != nil && a.Outcome == "" {
		a.Outcome, a.EndedAt = "voided", s.now().UTC()
	}
	if rec.State == ledger.Running {
		if err := s.move(ctx, it, ledger.AwaitingApproval, why); err != nil {
			return err
		}
	}
	if err := s.save(ctx, gh, it, ""); err != nil {
		return err
	}
	if err := s.reply(ctx, gh, it.repo.FullName, rec.Issue, fmt.Sprintf("The approval no longer holds: %s, so no credentials were "+
		"minted for the run. %s", why, next)); err != nil {
		return err
	}
	return nil
}
