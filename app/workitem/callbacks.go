package workitem

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/logkey"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/repoconfig"
	"github.com/bumperdev/bumper/internal/textcut"
	"github.com/rs/zerolog"
)

// Progress moves the work item as its run reports steps.
func (s *Service) Progress(ctx context.Context, c wire.RunClaims, p wire.Progress) error {
	defer s.lock(c.WorkItem.String())()
	gh, it, err := s.current(ctx, c)
	if err != nil {
		return err
	}
	to, err := ledger.ParseState(p.State)
	if err != nil {
		return refuse(RefusalState, "%v", err)
	}
	rec := it.rec
	var pol repoconfig.Config // read when a writing run hands its pull request over
	switch {
	case c.Stage == StagePlan && to == ledger.AwaitingApproval:
		if strings.TrimSpace(p.Plan) == "" {
			return refuse(RefusalStage, "a plan run must post its plan")
		}
		rec.PlanRevision = ledger.ContentRevision([]byte(p.Plan))
		if n := len(s.planComment(rec, p.Plan)); n > ledger.MaxCommentBytes {
			// Refused here, where the run hears why, rather than by GitHub, after which
			// the item would wait for a plan that never comes.
			return refuse(RefusalInvalidReport, "the plan, shown for approval, takes %d bytes; a GitHub comment holds %d: write a shorter plan", n, ledger.MaxCommentBytes)
		}
	case wire.WritingStage(c.Stage) && to == ledger.Verifying:
	case wire.WritingStage(c.Stage) && (to == ledger.Reviewing || to == ledger.InReview):
		// The pull request is open. A review run judges it next; the run that wrote the
		// change hands it to humans itself only where the repository turned its reviewer
		// off, and otherwise only a review run's verdict does.
		if pol, err = s.policyAt(ctx, gh, rec.Repository, rec.BaseCommit); isInvalidPolicy(err) {
			return refuse(RefusalPolicy, "%v", err)
		} else if err != nil {
			return err // a failed read: serve's 5xx, which the runner repeats
		}
		switch {
		case to == ledger.Reviewing && !pol.ReviewerOn():
			return refuse(RefusalStage, "the repository's reviewer is off (reviewer: false): a %s run reports in-review with its pull request", c.Stage)
		case to == ledger.InReview && pol.ReviewerOn():
			return refuse(RefusalStage, "the repository's reviewer is on: a %s run reports reviewing with its pull request, and only the review run's verdict moves it to in-review", c.Stage)
		}
		if err := s.takePull(ctx, gh, it, p.PullRequest, p.HeadCommit); err != nil {
			return err
		}
	default:
		return refuse(RefusalStage, "a %s run cannot report %s", c.Stage, p.State)
	}
	if err := ledger.Transition(rec.State, to); err != nil {
		return refuse(RefusalState, "%v", err)
	}
	rec.SlotWait = nil // the run's next step: it no longer waits for a VM
	if err := s.move(ctx, it, to, p.Message); err != nil {
		return err
	}
	switch to {
	case ledger.Reviewing:
		if err := s.dispatch(ctx, gh, it, StageReview); err != nil {
			return err
		}
	case ledger.InReview:
		if err := s.next(ctx, gh, it, pol); err != nil {
			return err
		}
	}
	if to == ledger.AwaitingApproval {
		// The plan goes up first so the record can point at it: the token exchange
		// re-reads it from there.
		id, err := gh.CreateComment(ctx, rec.Repository, rec.Issue, s.planComment(rec, p.Plan))
		if err != nil {
			return fmt.Errorf("failed to post the plan of %s: %w", rec.ID(), err)
		}
		rec.PlanComment = id
	}
	return s.save(ctx, gh, it, "")
}

// Waiting notes that the current attempt's run waits for a VM slot on its runner host,
// or no longer does: the status comment says so, since when serve heard it. The state
// stays as it is, and a note that changes nothing writes nothing.
func (s *Service) Waiting(ctx context.Context, c wire.RunClaims, w wire.Waiting) error {
	defer s.lock(c.WorkItem.String())()
	gh, it, err := s.current(ctx, c)
	if err != nil {
		return err
	}
	rec := it.rec
	if !rec.State.Active() {
		return refuse(RefusalState, "the %s run is over (the work item is %s): nothing waits", c.Stage, rec.State)
	}
	att := rec.CurrentAttempt().Number
	waits := rec.SlotWait != nil && rec.SlotWait.Attempt == att
	switch {
	case w.Waiting == waits:
		return nil
	case w.Waiting:
		rec.SlotWait = &ledger.SlotWait{Attempt: att, Since: s.now().UTC()}
	default:
		rec.SlotWait = nil
	}
	return s.save(ctx, gh, it, "")
}

// Evidence records an attempt's evidence bundle digest and figures.
func (s *Service) Evidence(ctx context.Context, c wire.RunClaims, e wire.Evidence) error {
	if !ledger.IsRevision(e.Digest) {
		return refuse(RefusalInvalidReport, "evidence digest %q: want sha256: and all 64 lower-case hex digits", e.Digest)
	}
	if e.AuditHead != "" && !ledger.IsRevision(e.AuditHead) {
		return refuse(RefusalInvalidReport, "audit head %q: want sha256: and all 64 lower-case hex digits of the audit chain's last line", e.AuditHead)
	}
	if c.Stage == StagePlan {
		return refuse(RefusalStage, "a plan run has no evidence to report; it posts its plan")
	}
	if e.Outcome != "" && !slices.Contains(wire.RunOutcomes, e.Outcome) {
		return refuse(RefusalInvalidReport, "outcome %q: want one of %s", e.Outcome, strings.Join(wire.RunOutcomes, ", "))
	}
	if e.CostMicroUSD < 0 || e.CostMicroUSD > wire.MaxCostMicroUSD {
		return refuse(RefusalInvalidReport, "cost_micro_usd %d: want 0 to %d", e.CostMicroUSD, int64(wire.MaxCostMicroUSD))
	}
	if len(e.Reason) > wire.MaxReason || !utf8.ValidString(e.Reason) {
		return refuse(RefusalInvalidReport, "reason: want valid UTF-8 of at most %d bytes", wire.MaxReason)
	}
	if err := checkSteerReports(e.Steers); err != nil {
		return err
	}
	defer s.lock(c.WorkItem.String())()
	gh, it, err := s.current(ctx, c)
	if err != nil {
		return err
	}
	if e.PullRequest > 0 {
		if err := s.takePull(ctx, gh, it, e.PullRequest, e.HeadCommit); err != nil {
			return err
		}
	}
	att := it.rec.CurrentAttempt()
	// A repeated report never lowers what the run counts (against the work item's
	// budget and the day's): the runner repeats one it is unsure was heard, and a
	// higher figure adds what it adds.
	spent := max(e.CostMicroUSD-att.CostMicroUSD, 0)
	att.EvidenceDigest, att.ImageDigest, att.CostMicroUSD = e.Digest, e.ImageDigest, att.CostMicroUSD+spent
	if err := s.settleDaily(ctx, it.rec, att, spent); err != nil {
		// The run's hold stays in the day's counter: it counts against the cap, never
		// for it.
		zerolog.Ctx(ctx).Warn().Err(err).Str(logkey.WorkItem, it.rec.ID()).Msg("failed to settle a run's cost in the day's counters")
	}
	// Every attempt keeps its reason in the status record, whose JSON must stay within
	// GitHub's comment limit whatever the reasons hold (a "<" takes six bytes there).
	att.RunOutcome, att.RunReason = e.Outcome, cutReason(e.Reason)
	if e.AuditHead != "" {
		it.rec.AuditHead = e.AuditHead
	}
	it.rec.SlotWait = nil
	if wire.WritingStage(c.Stage) {
		if err := s.steersDelivered(ctx, gh, it.rec, e.Steers); err != nil {
			return err
		}
	}
	if err := s.save(ctx, gh, it, ""); err != nil {
		return err
	}
	if spent > 0 {
		s.observer().Spend(spent)
	}
	return nil
}

// cutReason bounds a run's reason (or a review's problem) as the record keeps it: in
// bytes of its JSON encoding, so that the last ledger.KeptDetail attempts of it fit in a
// status comment with every other field at its largest (ledger TestLargestRecordFits).
func cutReason(s string) string { return ledger.Cut(s, ledger.MaxDetail) }

// cutBytes keeps at most n bytes of s (as valid UTF-8), on a character boundary, and
// marks a cut with "…" after them.
func cutBytes(s string, n int) string {
	return textcut.Clip(strings.ToValidUTF8(s, "\uFFFD"), n, textcut.Ellipsis)
}

// MaxRunLife bounds how long a run's token is refreshed: GitHub ends a job after six
// hours whatever it does.
const MaxRunLife = 6 * time.Hour

// Refresh says whether a run may have a new token (nil) or not (a *Refusal): its attempt
// must be current, its work item in a state its stage runs in (an implement run's token
// is not refreshed once its pull request waits for review), and the attempt younger than
// MaxRunLife.
func (s *Service) Refresh(ctx context.Context, c wire.RunClaims) error {
	_, it, err := s.current(ctx, c)
	if err != nil {
		return err
	}
	st := it.rec.State
	var ok bool
	switch c.Stage {
	case StagePlan:
		ok = st == ledger.Planning
	case StageImplement, StageFix, StageRevise, StageUpdate:
		ok = st == ledger.Running || st == ledger.Verifying
	case StageReview:
		ok = st == ledger.Reviewing
	}
	if !ok {
		return refuse(RefusalState, "the %s run is over (the work item is %s): no new token", c.Stage, st)
	}
	if att := it.rec.CurrentAttempt(); s.now().Sub(att.StartedAt) > MaxRunLife {
		return refuse(RefusalState, "attempt %d started more than %v ago: no new token", att.Number, MaxRunLife)
	}
	return nil
}

// ShouldStop tells a run whether to stop: yes once its work item left the active states
// or moved on to another attempt, or a person pushed to the branch a round works on.
// A run that goes on gets the writers' /steer words given since it was dispatched, not
// yet reported delivered.
func (s *Service) ShouldStop(ctx context.Context, c wire.RunClaims) (wire.ShouldStop, error) {
	gh, it, err := s.currentActive(ctx, c)
	var ref *Refusal
	if err != nil {
		if errors.As(err, &ref) {
			return wire.ShouldStop{Stop: true, Reason: err.Error()}, nil
		}
		return wire.ShouldStop{}, err
	}
	if !it.rec.State.Active() {
		return wire.ShouldStop{Stop: true, Reason: fmt.Sprintf("the work item is %s", it.rec.State)}, nil
	}
	if by, err := s.stopPaused(ctx, gh, it.repo.FullName); err != nil {
		return wire.ShouldStop{}, err
	} else if by != "" {
		// Read again under the item's lock: the hold is a write.
		defer s.lock(c.WorkItem.String())()
		if gh, it, err = s.current(ctx, c); err != nil {
			return wire.ShouldStop{Stop: true, Reason: err.Error()}, nil
		}
		if !it.rec.State.Active() {
			return wire.ShouldStop{Stop: true, Reason: "paused by " + by}, nil
		}
		if err := s.hold(ctx, it, it.rec.CurrentAttempt(), by); err != nil {
			return wire.ShouldStop{}, err
		}
		if err := s.save(ctx, gh, it, ""); err != nil {
			return wire.ShouldStop{}, err
		}
		return wire.ShouldStop{Stop: true, Reason: "paused by " + by}, nil
	}
	if h := it.rec.HumanPush; h != nil && wire.RoundStage(c.Stage) {
		return wire.ShouldStop{Stop: true, Reason: fmt.Sprintf("@%s pushed to %s: Bumper does not push there again", h.By, it.rec.WorkBranch)}, nil
	}
	steers, err := s.steersFor(ctx, gh, it.rec, it.rec.CurrentAttempt(), true)
	if err != nil {
		return wire.ShouldStop{}, err
	}
	return wire.ShouldStop{Steers: steers}, nil
}
