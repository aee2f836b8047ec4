package workitem

import (
	"context"
	"fmt"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/repoconfig"
)

// The conversation on the pull request: rounds that answer writers' reviews and /revise
// (revise.go, reviewtask.go), keep the pull request mergeable (update.go), and the
// /steer words for a working run (steer.go). This file holds what they share.

// The conversation's stages, as the wire names them.
const (
	StageRevise = wire.StageRevise
	StageUpdate = wire.StageUpdate
)

// roundGate says why no round may push to the pull request now, or "" when one may: a
// person pushed to its branch (Bumper stands down until a writer comments /revise), the
// issue's approval no longer holds, or a person approved the pull request (Bumper never
// pushes under a person's approval, which GitHub keeps across new commits unless the
// branch dismisses stale approvals; a person who approved asks for changes with a
// "Request changes" review, which replaces their approval).
func (s *Service) roundGate(ctx context.Context, gh GitHub, rec *ledger.Record) (string, error) {
	if h := rec.HumanPush; h != nil {
		return fmt.Sprintf("@%s pushed to `%s`, so Bumper stands down from it: a writer who wants Bumper to go on from `%.12s` comments `/revise` on the pull request", h.By, rec.WorkBranch, h.Head), nil
	}
	if rec.ActiveApproval() == nil {
		return "the issue's approval no longer holds (it changed after it was approved): no run starts until a maintainer approves it again", nil
	}
	who, err := s.humanApproval(ctx, gh, rec)
	if err != nil {
		return "", err
	}
	if who != "" {
		return fmt.Sprintf("@%s approved the pull request, and Bumper does not push under a person's approval: @%s can ask for changes with a review that requests them (it replaces the approval), or the approval can be dismissed", who, who), nil
	}
	return "", nil
}

// next starts what waits once the pull request is back in review, one run at a time:
// a revise round for the words collected meanwhile, else a fix round for a required
// check that failed, else an update for a base branch that moved. A pull request with
// GitHub's update of its branch in flight waits for it.
func (s *Service) next(ctx context.Context, gh GitHub, it *item, pol repoconfig.Config) error {
	rec := it.rec
	if rec.State != ledger.InReview || rec.Updating != nil {
		return nil
	}
	if len(rec.Pending) > 0 {
		if err := s.startRevise(ctx, gh, it, pol); err != nil || rec.State != ledger.InReview {
			return err
		}
	}
	if err := s.maybeFix(ctx, gh, it, pol); err != nil || rec.State != ledger.InReview {
		return err
	}
	if rec.BaseMoved != "" {
		// Whether GitHub had finished computing the merge or not, the item moves on: a
		// base still unsettled is looked at again at the next event.
		if _, err := s.maybeUpdate(ctx, gh, it, pol); err != nil {
			return err
		}
	}
	return nil
}
