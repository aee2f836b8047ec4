package workitem

import (
	"context"
	"fmt"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/app/command"
	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/logkey"
	"github.com/bumperdev/bumper/app/wire"
)

// A writer's /steer: words for the agent that works now. The record keeps a reference
// to the comment until a run reports it delivered (Evidence.Steers); a run that writes
// code gets the steers given before it was dispatched with its task (Task.Steers), and
// those given while it works through its should-stop poll (ShouldStop.Steers). Review
// runs get none: a reviewer judges with a fresh context nobody steers.

// maxSteerReports bounds the steers one evidence report may speak of.
const maxSteerReports = 64

// steer keeps a writer's /steer for the run that works now or the next one, and says so
// where it was given. It is answered in every case, never silently dropped.
func (s *Service) steer(ctx context.Context, gh GitHub, it *item, ev CommentEvent, cmd command.Command, where int) error {
	rec := it.rec
	say := func(msg string) error { return s.reply(ctx, gh, rec.Repository, where, msg) }
	switch {
	case cmd.Text == "":
		return say("Nothing to pass on: write `/steer` followed by what the agent should know, such as `/steer keep the public API as it is`.")
	case len(cmd.Text) > wire.MaxSteerText:
		return say(fmt.Sprintf("Not passed on: a steer holds at most %d bytes, and this one has %d. Say it shorter, or in the issue before approving it.", wire.MaxSteerText, len(cmd.Text)))
	case rec.State == ledger.Done || rec.State == ledger.Error:
		return say(fmt.Sprintf("Nothing is planned for this work item (it is %s), so this steer is not kept.", rec.State))
	case rec.HasSteer(ev.CommentID):
		return nil // a redelivery
	case len(rec.Steers) >= ledger.MaxSteers:
		return say(fmt.Sprintf("Not kept: %d steers wait to reach a run already, as many as Bumper keeps. Once a run has them, steer again.", ledger.MaxSteers))
	}
	at, working := s.now().UTC(), 0
	if a := rec.CurrentAttempt(); a != nil && a.Outcome == "" && wire.WritingStage(a.Stage) && (rec.State == ledger.Running || rec.State == ledger.Verifying) {
		working = a.Number
	}
	rec.Steers = append(rec.Steers, ledger.SteerRef{ID: ev.CommentID, By: ev.Author, At: at, For: working})
	s.steers.Remember(wire.Steer{ID: ev.CommentID, Author: ev.Author, CreatedAt: at, Text: cmd.Text}, true)
	msg, err := s.steerReply(ctx, gh, rec)
	if err != nil {
		return err
	}
	it.replyAfterSave(where, msg)
	zerolog.Ctx(ctx).Info().Str(logkey.WorkItem, rec.ID()).Str(logkey.User, ev.Author).Msg("kept a steer")
	return s.save(ctx, gh, it, ev.Delivery)
}

// steerReply says where a steer goes from here.
func (s *Service) steerReply(ctx context.Context, gh GitHub, rec *ledger.Record) (string, error) {
	a := rec.CurrentAttempt()
	working := a != nil && a.Outcome == "" && (rec.State == ledger.Running || rec.State == ledger.Verifying)
	switch {
	case working && wire.WritingStage(a.Stage):
		pol, err := s.policyAt(ctx, gh, rec.Repository, rec.BaseCommit)
		if err != nil && !isInvalidPolicy(err) {
			return "", err
		}
		if pol.Harness.Name == "codex" {
			return fmt.Sprintf("Kept for the next run: the %s run under way (attempt %d) uses codex, which cannot take words while it works.", a.Stage, a.Number), nil
		}
		return fmt.Sprintf("Passed on to the %s run under way (attempt %d): its agent gets it before its next step. If the run ends first, the next run gets it.", a.Stage, a.Number), nil
	case rec.State == ledger.Reviewing:
		return "No run that writes code works now: a review run judges the pull request, and nobody steers a reviewer. Kept for the next round, if one starts.", nil
	case rec.State == ledger.InReview:
		return "No run works now. Kept for the next round on the pull request (a review asking for changes, `/revise`, a failing required check or a conflict with the base branch starts one).", nil
	case rec.State == ledger.AwaitingApproval || rec.State == ledger.Requested || rec.State == ledger.Planning:
		return "No run works now. Kept for the run an approval starts.", nil
	case rec.State == ledger.Failed || rec.State == ledger.Stopped:
		return fmt.Sprintf("Nothing is planned: the work item is %s. Kept for the run that starts if a maintainer comments `/retry` and approves again.", rec.State), nil
	default:
		return "No run works now. Kept for the next run.", nil
	}
}

// steersFor are the kept steers for a run of attempt att, oldest first: those given
// while it worked (working: through should-stop), or the others, given before (with its
// task).
func (s *Service) steersFor(ctx context.Context, gh GitHub, rec *ledger.Record, att *ledger.Attempt, working bool) ([]wire.Steer, error) {
	if att == nil || !wire.WritingStage(att.Stage) {
		return nil, nil
	}
	return s.steers.For(ctx, words{gh: gh, rec: rec}, rec, att.Number, working)
}

// steersDelivered takes a run's report of its steers (agentwords.Steers.Delivered).
func (s *Service) steersDelivered(ctx context.Context, gh GitHub, rec *ledger.Record, reports []wire.SteerDelivery) error {
	return s.steers.Delivered(ctx, words{gh: gh, rec: rec}, rec, reports)
}

// checkSteerReports refuses a report of steers that cannot be a run's.
func checkSteerReports(reports []wire.SteerDelivery) error {
	if len(reports) > maxSteerReports {
		return refuse(RefusalInvalidReport, "the report speaks of %d steers; a run is given at most %d", len(reports), maxSteerReports)
	}
	for _, d := range reports {
		if d.ID < 1 || len(d.Note) > wire.MaxReason {
			return refuse(RefusalInvalidReport, "a steer report names no steer, or its note passes %d bytes", wire.MaxReason)
		}
	}
	return nil
}
