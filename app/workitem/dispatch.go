package workitem

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/logkey"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/app/workitem/dailycap"
	"github.com/bumperdev/bumper/app/workitem/redrive"
	"github.com/bumperdev/bumper/app/workitem/runidentity"
)

// The stages a run is dispatched for (the workflow's `stage` input), as the wire names
// them.
const (
	StagePlan      = wire.StagePlan
	StageImplement = wire.StageImplement
	StageFix       = wire.StageFix
	StageReview    = wire.StageReview
)

// DispatchRefPrefix holds the refs that make dispatches exactly-once.
const DispatchRefPrefix = "refs/bumper/dispatch/"

// ExchangeRefPrefix holds the refs that make each nonce single-use across replicas.
const ExchangeRefPrefix = "refs/bumper/exchange/"

// ErrDispatchedElsewhere means another replica (or an earlier life of this one) already
// made this dispatch; the caller stands down and leaves the record to it.
var ErrDispatchedElsewhere = errors.New("this dispatch was already made")

// dispatchedElsewhere names the work item whose dispatch was made elsewhere; pending
// is the dispatch key when the record did not show the dispatch (see PendingDispatch).
type dispatchedElsewhere struct{ item, pending string }

func (e *dispatchedElsewhere) Error() string {
	return fmt.Sprintf("%s: %v", e.item, ErrDispatchedElsewhere)
}

func (e *dispatchedElsewhere) Unwrap() error { return ErrDispatchedElsewhere }

// Stale drops from the index the work item an ErrDispatchedElsewhere names, so the next
// event reads its record from GitHub again instead of acting on this replica's old copy.
func (s *Service) Stale(ctx context.Context, err error) {
	var de *dispatchedElsewhere
	if errors.As(err, &de) {
		s.idx.Delete(de.item)
		zerolog.Ctx(ctx).Info().Str(logkey.WorkItem, de.item).Msg("another replica moved the work item; reloading it next time")
	}
}

// DispatchKey names one dispatch: the work item's issue, the approval revision and the
// attempt. The same key is never dispatched twice.
func DispatchKey(issue int, revision string, attempt int) string {
	rev := strings.TrimPrefix(revision, "sha256:")
	return fmt.Sprintf("%d-%s-%d", issue, rev, attempt)
}

// redriveLookback is how far back a re-drive looks for the run of the dispatch it takes
// over: a replica's restart and the grace period take minutes, not a day.
const redriveLookback = 24 * time.Hour

// dispatch starts the next attempt's run. The dispatch ref is created first: only the
// caller that creates it dispatches. One that takes over a dispatch whose replica died
// (a re-drive) first looks for the run that replica may have started, and adopts it.
func (s *Service) dispatch(ctx context.Context, gh GitHub, it *item, stage wire.Stage) (err error) {
	defer s.observeDispatch(stage, it, len(it.rec.Attempts), &err)
	rec := it.rec
	n := len(rec.Attempts) + 1
	if n > ledger.MaxAttempts {
		return s.move(ctx, it, ledger.Failed, fmt.Sprintf("the work item has had the %d runs its record can hold; open a new issue to go on", ledger.MaxAttempts))
	}
	if by, err := s.pausedBy(ctx, gh, it.repo.FullName); err != nil {
		return err
	} else if by != "" {
		return s.hold(ctx, it, nil, by)
	}
	if err := s.mayDispatchToday(ctx, rec, n == 1); err != nil {
		var capErr *dailycap.Spent
		if !errors.As(err, &capErr) {
			return err
		}
		// The item fails, its status saying which cap and when it resets; there is no
		// caller to refuse.
		var ref *Refusal
		if err := s.failOnCap(ctx, gh, it, nil, capErr); !errors.As(err, &ref) {
			return err
		}
		return nil
	}
	rev := rec.ApprovalRevision()
	key := DispatchKey(rec.Issue, rev, n)
	created, err := gh.CreateRef(ctx, it.repo.FullName, DispatchRefPrefix+key, rec.BaseCommit)
	if err != nil {
		return fmt.Errorf("failed to claim dispatch %s: %w", key, err)
	}
	redriving := false
	if !created {
		if redrive.Of(ctx) != key {
			zerolog.Ctx(ctx).Info().Str(logkey.WorkItem, rec.ID()).Str(logkey.Dispatch, key).Msg("dispatch already made; standing down")
			// The record has no attempt n (else this would be attempt n+1): the dispatch is
			// in flight elsewhere, or its replica died. Either way, someone looks again later.
			return &dispatchedElsewhere{item: rec.ID(), pending: key}
		}
		// The guard ref outlived its grace period without a record of its dispatch: its
		// replica died after taking it. One replica takes the key over.
		if created, err = gh.CreateRef(ctx, it.repo.FullName, RedriveRefPrefix+key, rec.BaseCommit); err != nil {
			return fmt.Errorf("failed to claim the re-drive of %s: %w", key, err)
		}
		if !created {
			zerolog.Ctx(ctx).Info().Str(logkey.WorkItem, rec.ID()).Str(logkey.Dispatch, key).Msg("another replica re-drives this dispatch; standing down")
			return &dispatchedElsewhere{item: rec.ID()}
		}
		zerolog.Ctx(ctx).Warn().Str(logkey.WorkItem, rec.ID()).Str(logkey.Dispatch, key).Msg("re-driving a dispatch whose replica died after taking its guard ref")
		redriving = true
	}
	if s.opts.Fault != nil {
		if err := s.opts.Fault(FaultAfterDispatchRef); err != nil {
			return err
		}
	}
	// The key names no repository; the nonce's input does, so repositories never share one.
	nonce := s.opts.Sealer.DispatchNonce(it.repo.FullName + "/" + key)
	att := ledger.Attempt{Number: n, Stage: stage, Revision: rev, NonceHash: runidentity.HashNonce(nonce), StartedAt: s.now().UTC()}
	var runID int64
	if redriving {
		// The replica that died may have dispatched before it recorded: its run, under the
		// attempt's title and carrying this nonce, is adopted, so the attempt runs once.
		bot, err := s.botLogin(ctx)
		if err != nil {
			return err
		}
		if runID, err = gh.RunByTitle(ctx, it.repo.FullName, wire.RunName(rec.ID(), n, stage), bot, s.now().Add(-redriveLookback)); err != nil {
			return fmt.Errorf("failed to look for the run of dispatch %s: %w", key, err)
		}
	}
	log, done := zerolog.Ctx(ctx).Warn, "adopted the run a replica dispatched before it died"
	if runID == 0 {
		log, done = zerolog.Ctx(ctx).Info, "dispatched a run"
		if runID, err = s.dispatchRun(ctx, gh, it, att, n, nonce); runID == 0 {
			return err
		}
	}
	att.RunID = runID
	rec.Attempts = append(rec.Attempts, att)
	if err := s.idx.PutDispatch(ledger.Dispatch{Key: key, ItemID: rec.ID(), RunID: runID}); err != nil {
		return err
	}
	log().Str(logkey.WorkItem, rec.ID()).Int(logkey.Attempt, n).Int64(logkey.RunID, runID).
		Str(logkey.Stage, string(stage)).Msg(done)
	return nil
}

// dispatchRun dispatches attempt att (number n, with nonce) and returns its run ID; 0
// with nil when the dispatch failed and the item took the failure (the attempt recorded
// as such), 0 with an error otherwise.
func (s *Service) dispatchRun(ctx context.Context, gh GitHub, it *item, att ledger.Attempt, n int, nonce string) (int64, error) {
	rec, stage := it.rec, att.Stage
	inputs := map[string]string{wire.DispatchInputWorkItem: rec.ID(), wire.DispatchInputAttempt: strconv.Itoa(n),
		wire.DispatchInputNonce: nonce, wire.DispatchInputStage: string(stage)}
	runID, err := gh.Dispatch(ctx, it.repo.FullName, s.opts.Workflow, rec.BaseBranch, inputs)
	if err != nil {
		// The ref is taken, so this attempt number is spent: record it as failed so that
		// /retry dispatches a new one.
		att.Outcome, att.EndedAt = ledger.OutcomeDispatchFailed, s.now().UTC()
		rec.Attempts = append(rec.Attempts, att)
		reason := fmt.Sprintf("the dispatch of %s failed: %v", s.opts.Workflow, err)
		if stage == StageReview {
			// The pull request is there: humans get it, with the check saying why no
			// reviewer judged it.
			zerolog.Ctx(ctx).Error().Err(err).Str(logkey.WorkItem, rec.ID()).Msg("review dispatch failed")
			return 0, s.reviewMissing(ctx, gh, it, reason)
		}
		if stage == StageRevise || stage == StageUpdate {
			// The pull request stays as it was: people have it back, and the round is not
			// counted (its run never started).
			zerolog.Ctx(ctx).Error().Err(err).Str(logkey.WorkItem, rec.ID()).Str(logkey.Stage, string(stage)).Msg("round dispatch failed")
			if mErr := s.move(ctx, it, ledger.InReview, reason); mErr != nil {
				return 0, errors.Join(err, mErr)
			}
			if stage == StageRevise {
				it.replyAfterSave(rec.PullRequest, "The revise round could not start: "+reason+". What it was to answer waits for the next round, which the next review or `/revise` starts.")
			}
			return 0, nil
		}
		if mErr := s.move(ctx, it, ledger.Failed, reason); mErr != nil {
			return 0, errors.Join(err, mErr)
		}
		zerolog.Ctx(ctx).Error().Err(err).Str(logkey.WorkItem, rec.ID()).Msg("dispatch failed")
		return 0, nil
	}
	if s.opts.Fault != nil {
		if err := s.opts.Fault(FaultAfterDispatch); err != nil {
			return 0, err
		}
	}
	return runID, nil
}
