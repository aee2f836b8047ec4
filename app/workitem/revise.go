package workitem

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/app/authz"
	"github.com/bumperdev/bumper/app/command"
	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/logkey"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/app/workitem/agentwords"
	"github.com/bumperdev/bumper/app/workitem/pullmatch"
	"github.com/bumperdev/bumper/app/workitem/roundreply"
	"github.com/bumperdev/bumper/internal/repoconfig"
	"github.com/bumperdev/bumper/internal/revision"
)

// ReviewEvent is a pull_request_review webhook, translated. GitHub sends one
// "submitted" for every review, a single inline comment and a reply in a thread
// included (each is a review of its own, in state commented): it is the one event a
// round starts from, and a review's inline comments are read from GitHub with it.
type ReviewEvent struct {
	Delivery string
	Action   string // submitted, edited, dismissed
	Repo     Repo
	Number   int
	HeadRef  string // the pull request's branch
	// Review is the review as the payload has it; State upper-cased, as the REST API
	// writes it.
	Review ReviewInfo
}

// HandleReview takes a person's review of a work item's pull request: one that requests
// changes or comments, by someone who may give commands, on the head Bumper pushed,
// starts a revise round, or waits for the next one while a run works. Approvals start
// nothing (they stop rounds: see roundGate). Reviews by readers and by bots start
// nothing and get no reply: a review is written for the pull request's people, not
// asked of Bumper (a reader's /revise, which is, gets the commands' refusal).
func (s *Service) HandleReview(ctx context.Context, gh GitHub, ev ReviewEvent) error {
	rv := ev.Review
	if ev.Action == "submitted" && rv.State == "APPROVED" {
		return s.clearGates(ctx, gh, ev)
	}
	if ev.Action == "dismissed" {
		return s.restoreGates(ctx, gh, ev)
	}
	if ev.Action != "submitted" || (rv.State != "CHANGES_REQUESTED" && rv.State != "COMMENTED") {
		return nil
	}
	n, log, ok, err := s.reviewOf(ctx, ev, "review starts nothing")
	if !ok || err != nil {
		return err
	}
	defer s.lock(ledger.ID(ev.Repo.FullName, n))()
	it, err := s.load(ctx, gh, ev.Repo, n)
	if err != nil || it == nil {
		return err
	}
	if it.stored.Handled(ev.Delivery) || it.rec.PullRequest != ev.Number {
		return nil
	}
	pol, ok, err := s.reviewersPolicy(ctx, gh, it, rv, log, "review starts nothing")
	if !ok || err != nil {
		return err
	}
	if pol.Bounds.ReviewRounds == 0 {
		return nil // the repository turned revise rounds off; reviews are for its people
	}
	return s.askRound(ctx, gh, it, pol, roundAsk{
		input:    ledger.Input{Kind: wire.ReviewKindReview, ID: rv.ID, Digest: agentwords.Digest(rv.Body)},
		what:     fmt.Sprintf("@%s's review", rv.User),
		head:     rv.CommitID,
		delivery: ev.Delivery,
	})
}

// roundAsk is a writer's request for a revise round: their review or /revise.
type roundAsk struct {
	input ledger.Input
	what  string // "@writer's review", for the replies
	// head is the commit a review was of; "" for a /revise, which is about the pull
	// request as it is.
	head     string
	delivery string
	// dirty: the record changed already (a /revise took the branch back), and is saved
	// whatever happens to the ask.
	dirty bool
}

// askRound starts a revise round for a writer's review or /revise, or keeps it for the
// next round while a run works on the pull request (never two at once), or says why
// neither happens. The reply goes on the pull request.
func (s *Service) askRound(ctx context.Context, gh GitHub, it *item, pol repoconfig.Config, ask roundAsk) error {
	rec := it.rec
	no := func(why string) error {
		msg := fmt.Sprintf("No revise round starts for %s: %s.", ask.what, why)
		if !ask.dirty {
			return s.reply(ctx, gh, rec.Repository, rec.PullRequest, msg)
		}
		it.replyAfterSave(rec.PullRequest, msg)
		return s.save(ctx, gh, it, ask.delivery)
	}
	used, bound := rec.RoundsUsed(StageRevise), pol.Bounds.ReviewRounds
	switch {
	case rec.State.Terminal():
		return no(fmt.Sprintf("the work item is %s", rec.State))
	case bound == 0:
		return no(fmt.Sprintf("this repository turned revise rounds off (`bounds.review_rounds: 0` in %s)", repoconfig.Path))
	case rec.HumanPush != nil:
		return no(fmt.Sprintf("@%s pushed to `%s`, so Bumper stands down from it. To have Bumper go on from there (keeping their commits), comment `/revise` on this pull request",
			rec.HumanPush.By, rec.WorkBranch))
	case ask.head != "" && ask.head != rec.PullHead:
		return no(fmt.Sprintf("it reviews `%.12s`, but the head Bumper pushed and works from is `%.12s`. Review the pull request's current head, or comment `/revise` with what to change", ask.head, rec.PullHead))
	case used >= bound:
		return no(fmt.Sprintf("the %d revise round(s) this repository allows on a pull request (`bounds.review_rounds`) are used. The pull request is left to people", bound))
	case slices.ContainsFunc(rec.Pending, ask.input.Same), answering(rec, ask.input):
		return nil // a redelivery
	case len(rec.Pending) >= ledger.MaxPending:
		return no(fmt.Sprintf("%d reviews and `/revise` comments wait for the next round already, as many as it takes. Ask again once that round has started", ledger.MaxPending))
	}
	rec.Pending = append(rec.Pending, ask.input)
	if rec.State != ledger.InReview || rec.Updating != nil {
		// A run works on the pull request (or GitHub is updating its branch): this waits
		// for the round that starts once it is back in review.
		it.replyAfterSave(rec.PullRequest, fmt.Sprintf("Bumper is working on this pull request now (%s); %s is kept for the next revise round, round %d of %d, which starts from the head this work ends with.",
			workNow(rec), ask.what, used+1, bound))
		return s.save(ctx, gh, it, ask.delivery)
	}
	if err := s.startRevise(ctx, gh, it, pol); err != nil {
		return err
	}
	return s.save(ctx, gh, it, ask.delivery)
}

// workNow says what runs on the pull request, for a reply.
func workNow(rec *ledger.Record) string {
	a := rec.CurrentAttempt()
	switch {
	case rec.Updating != nil:
		return "GitHub is merging the base branch into it"
	case a == nil:
		return string(rec.State)
	case a.Stage == StageReview:
		return fmt.Sprintf("a review run, attempt %d, judges it", a.Number)
	default:
		return fmt.Sprintf("a %s run, attempt %d", a.Stage, a.Number)
	}
}

// startRevise dispatches a revise round answering every pending input, from the pull
// request's head, if the pull request is in review and nothing stops a round; the
// round's reply (what it takes, what it leaves out, what the taken text hides) goes on
// the pull request after the caller saves. Inputs that cannot start a round are dropped,
// saying why: a writer asks again once the reason is gone.
func (s *Service) startRevise(ctx context.Context, gh GitHub, it *item, pol repoconfig.Config) error {
	rec := it.rec
	if rec.State != ledger.InReview || len(rec.Pending) == 0 {
		return nil
	}
	drop := func(why string) error {
		it.replyAfterSave(rec.PullRequest, fmt.Sprintf("No revise round starts for the %d review(s) or `/revise` comment(s) waiting: %s.", len(rec.Pending), why))
		zerolog.Ctx(ctx).Info().Str(logkey.WorkItem, rec.ID()).Str(logkey.Reason, why).Msg("dropped the inputs waiting for a revise round")
		rec.Pending = nil
		return nil
	}
	why, err := s.roundGate(ctx, gh, rec)
	if err != nil {
		return err
	}
	if why != "" {
		return drop(why)
	}
	used, bound := rec.RoundsUsed(StageRevise), pol.Bounds.ReviewRounds
	if used >= bound {
		return drop(fmt.Sprintf("the %d revise round(s) this repository allows on a pull request (`bounds.review_rounds`) are used; the pull request is left to people", bound))
	}
	r, err := s.readInputs(ctx, gh, rec, pol, rec.Pending, true)
	if err != nil {
		return err
	}
	if len(r.Review) == 0 {
		it.replyAfterSave(rec.PullRequest, roundreply.Text(roundreply.Round{Number: used + 1, Bound: bound, Head: rec.PullHead, Branch: rec.WorkBranch, Review: r.Review, LeftOut: r.LeftOut, Waiting: r.Waiting, Texts: r.Texts, Started: false}))
		rec.Pending = nil
		return nil
	}
	if err := s.move(ctx, it, ledger.Running, fmt.Sprintf("revise round %d of %d on %.12s, answering %d comment(s)", used+1, bound, rec.PullHead, len(r.Review))); err != nil {
		return err
	}
	if err := s.dispatch(ctx, gh, it, StageRevise); err != nil {
		return err
	}
	a := rec.CurrentAttempt()
	if a == nil || a.Stage != StageRevise || a.Outcome != "" {
		return nil // the dispatch failed: dispatch said so and handed the pull request back
	}
	a.Inputs, rec.Pending = r.Inputs, r.Rest
	it.replyAfterSave(rec.PullRequest, roundreply.Text(roundreply.Round{Number: used + 1, Bound: bound, Head: rec.PullHead, Branch: rec.WorkBranch, Review: r.Review, LeftOut: r.LeftOut, Waiting: r.Waiting, Texts: r.Texts, Started: true}))
	zerolog.Ctx(ctx).Info().Str(logkey.WorkItem, rec.ID()).Int(logkey.Attempt, a.Number).Int(logkey.Pull, rec.PullRequest).Msg("dispatched a revise round")
	return nil
}

// revise runs a writer's /revise on the work item's pull request: its text is asked
// for as a round; after a person's push, it first takes the branch back at its head, so
// that the next round goes on from there with their commits kept.
func (s *Service) revise(ctx context.Context, gh GitHub, it *item, ev CommentEvent, cmd command.Command) error {
	rec := it.rec
	pol, err := s.policyAt(ctx, gh, rec.Repository, rec.BaseCommit)
	if isInvalidPolicy(err) {
		return s.reply(ctx, gh, rec.Repository, rec.PullRequest, fmt.Sprintf("No revise round starts: the approved %s no longer parses (%v).", repoconfig.Path, err))
	}
	if err != nil {
		return err
	}
	resumed := ""
	if h := rec.HumanPush; h != nil && rec.State.Active() {
		return s.reply(ctx, gh, rec.Repository, rec.PullRequest, fmt.Sprintf("Bumper takes `%s` back only once the pull request is back in review (%s now); comment `/revise` again then.",
			rec.WorkBranch, workNow(rec)))
	}
	if h := rec.HumanPush; h != nil && !rec.State.Terminal() {
		pr, err := gh.PullRequest(ctx, rec.Repository, rec.PullRequest)
		if err != nil {
			return fmt.Errorf("failed to read pull request #%d: %w", rec.PullRequest, err)
		}
		if pr.State != "open" || !strings.EqualFold(pr.HeadRepo, rec.Repository) || pr.HeadRef != rec.WorkBranch || !revision.IsObjectID(pr.HeadSHA) {
			return s.reply(ctx, gh, rec.Repository, rec.PullRequest, fmt.Sprintf("Bumper cannot take `%s` back: pull request #%d is %s, on %s:%s.", rec.WorkBranch, rec.PullRequest, pr.State, pr.HeadRepo, pr.HeadRef))
		}
		resumed = fmt.Sprintf("@%s took `%s` back for Bumper at `%.12s`, after @%s's push: rounds go on from there, and keep the commits on it", ev.Author, rec.WorkBranch, pr.HeadSHA, h.By)
		rec.PullHead, rec.HumanPush, rec.Updating, rec.Reason = pr.HeadSHA, nil, nil, resumed
	}
	if cmd.Text == "" {
		switch {
		case resumed != "" && len(rec.Pending) == 0:
			it.replyAfterSave(rec.PullRequest, upperFirst(resumed)+". Review the pull request, or comment `/revise` with what to change, to start a round.")
		case len(rec.Pending) > 0 && rec.State == ledger.InReview:
			if resumed != "" {
				it.replyAfterSave(rec.PullRequest, upperFirst(resumed)+".")
			}
			if err := s.startRevise(ctx, gh, it, pol); err != nil {
				return err
			}
		case resumed == "":
			return s.reply(ctx, gh, rec.Repository, rec.PullRequest, "Nothing to revise: comment `/revise` followed by what to change, or review the pull request with comments.")
		}
		return s.save(ctx, gh, it, ev.Delivery)
	}
	if resumed != "" {
		it.replyAfterSave(rec.PullRequest, upperFirst(resumed)+".")
	}
	return s.askRound(ctx, gh, it, pol, roundAsk{input: ledger.Input{Kind: wire.ReviewKindRevise, ID: ev.CommentID},
		what: fmt.Sprintf("@%s's `/revise`", ev.Author), delivery: ev.Delivery, dirty: resumed != ""})
}

// answering reports whether the current attempt answers the input already.
func answering(rec *ledger.Record, in ledger.Input) bool {
	a := rec.CurrentAttempt()
	return a != nil && slices.ContainsFunc(a.Inputs, in.Same)
}

// findingsInput queues Bumper's reviewer's findings for a revise round when the
// repository asks for that (reviewer.revise_on_findings): a failing verdict with
// findings, whose review the App posted with body.
func findingsInput(rec *ledger.Record, pol repoconfig.Config, o verdictOutcome) {
	if !pol.Reviewer.ReviseOnFindings || o.Rec.Passed || o.Rec.Findings == 0 || o.Rec.ReviewID == 0 || pol.Bounds.ReviewRounds == 0 ||
		len(rec.Pending) >= ledger.MaxPending || rec.HumanPush != nil {
		return
	}
	rec.Pending = append(rec.Pending, ledger.Input{Kind: wire.ReviewKindFinding, ID: o.Rec.ReviewID, Digest: agentwords.Digest(o.posted.Body)})
}

// reviewOf is the work item a review is on, with a logger naming who wrote it; ok is
// false when the review is on no work item's pull request, or a bot wrote it (Bumper's
// own reviewer included): a bot's words never start a round and its approval clears
// nothing. what ends the debug line that says so.
func (s *Service) reviewOf(ctx context.Context, ev ReviewEvent, what string) (int, zerolog.Logger, bool, error) {
	rv := ev.Review
	n, ok := pullmatch.Named(s.idx.ByRepository(ev.Repo.FullName), ev.Number, ev.HeadRef)
	if !ok {
		return 0, zerolog.Nop(), false, nil
	}
	bot, err := s.botLogin(ctx)
	if err != nil {
		return 0, zerolog.Nop(), false, err
	}
	log := zerolog.Ctx(ctx).With().Str(logkey.User, rv.User).Int(logkey.Pull, ev.Number).Logger()
	if strings.EqualFold(rv.User, bot) || authz.IsBot(rv.User, rv.UserType) {
		log.Debug().Msg("a bot's " + what)
		return 0, log, false, nil
	}
	return n, log, true, nil
}

// reviewersPolicy reads the item's approved policy and checks that the review's author
// may give commands under it. ok is false, with the reason logged as "what", when the
// policy does not parse or the author may not: the review then does nothing.
func (s *Service) reviewersPolicy(ctx context.Context, gh GitHub, it *item, rv ReviewInfo, log zerolog.Logger, what string) (repoconfig.Config, bool, error) {
	pol, err := s.policyAt(ctx, gh, it.rec.Repository, it.rec.BaseCommit)
	if isInvalidPolicy(err) {
		log.Info().Err(err).Msg("a " + what + ": the approved policy does not parse")
		return pol, false, nil
	}
	if err != nil {
		return pol, false, err
	}
	if no, err := s.allowed(ctx, gh, it.rec.Repository, rv.User, rv.UserType, pol); err != nil {
		return pol, false, err
	} else if no != nil {
		log.Info().Str(logkey.Reason, no.why).Msg("a " + what + ": its author may not give commands")
		return pol, false, nil
	}
	return pol, true, nil
}

// upperFirst capitalizes a sentence that starts a reply.
func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
