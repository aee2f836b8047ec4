package workitem

import (
	"context"
	"fmt"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
)

// PauseState is serve's kill switch: Paused stops every dispatch and exchange; runs in
// flight stop at their next should-stop poll unless Finish lets them end on their own.
type PauseState struct {
	Paused, Finish bool
}

// The two things that pause work, as the status comment names them.
const (
	PausedByServe      = "serve's configuration (bumper.paused)"
	PausedByRepository = "the repository's .github/bumper.yml (paused: true)"
)

// pausedBy names what pauses new work in repo now: serve's configuration, or the
// repository's file at its default branch head; "" when nothing does. A file that does
// not parse pauses nothing here: the checks that read it refuse on their own.
func (s *Service) pausedBy(ctx context.Context, gh GitHub, repo string) (string, error) {
	if s.opts.Pause != nil && s.opts.Pause().Paused {
		return PausedByServe, nil
	}
	pol, err := s.policy(ctx, gh, repo)
	if isInvalidPolicy(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	s.pauses.Put(repo, pol.Paused, s.now())
	if pol.Paused {
		return PausedByRepository, nil
	}
	return "", nil
}

// stopPaused is pausedBy for a run's should-stop poll: serve's switch at once, the
// repository's as read within policycache.PauseTTL; "" also when the pause lets runs
// finish.
func (s *Service) stopPaused(ctx context.Context, gh GitHub, repo string) (string, error) {
	if s.opts.Pause != nil {
		if p := s.opts.Pause(); p.Paused {
			if p.Finish {
				return "", nil
			}
			return PausedByServe, nil
		}
	}
	if paused, ok := s.pauses.Get(repo, s.now()); ok {
		if paused {
			return PausedByRepository, nil
		}
		return "", nil
	}
	return s.pausedBy(ctx, gh, repo)
}

// hold sets the item aside while by pauses it, keeping its approval: a round on its
// pull request gives the pull request back to people (in review); an implement run
// waits in awaiting-approval and is dispatched again once unpaused (Resume); a plan run
// fails, to be retried. att, when given, is the run that stops. The caller saves.
func (s *Service) hold(ctx context.Context, it *item, att *ledger.Attempt, by string) error {
	rec := it.rec
	why := "paused by " + by + ": nothing starts until it is unpaused"
	if att != nil && att.Outcome == "" {
		att.Outcome, att.EndedAt = "paused", s.now().UTC()
	}
	switch {
	case rec.PullRequest != 0 && (rec.State == ledger.Running || rec.State == ledger.Verifying || rec.State == ledger.Reviewing):
		return s.move(ctx, it, ledger.InReview, why)
	case rec.State == ledger.Running || rec.State == ledger.Verifying:
		rec.Paused = by
		return s.move(ctx, it, ledger.AwaitingApproval, why+"; the approval stands and the run starts then")
	case rec.State == ledger.Planning:
		return s.move(ctx, it, ledger.Failed, why+"; /retry once it is")
	case rec.State == ledger.AwaitingApproval && rec.ActiveApproval() != nil:
		rec.Paused, rec.Reason = by, why+"; the approval stands and the run starts then"
	}
	return nil
}

// Resume dispatches every work item a pause held, now that nothing pauses it: serve's
// switch turned off (SIGHUP), or a repository's file. An item whose approval lapsed
// meanwhile waits for a new one, as any would. It returns how many it dispatched.
func (s *Service) Resume(ctx context.Context) (int, error) {
	var n int
	var errs []error
	for _, rec := range s.idx.ByState(ledger.AwaitingApproval) {
		if rec.Paused == "" {
			continue
		}
		ok, err := s.resume(ctx, rec.Repository, rec.Issue)
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			n++
		}
	}
	if len(errs) > 0 {
		return n, fmt.Errorf("failed to resume %d paused work items: %w", len(errs), errs[0])
	}
	return n, nil
}

func (s *Service) resume(ctx context.Context, repo string, issue int) (bool, error) {
	defer s.lock(ledger.ID(repo, issue))()
	gh, it, err := s.runItem(ctx, wire.WorkItem{Repository: repo, Issue: issue})
	if err != nil {
		return false, err
	}
	rec := it.rec
	if rec.Paused == "" || rec.State != ledger.AwaitingApproval {
		return false, nil
	}
	if by, err := s.pausedBy(ctx, gh, repo); err != nil || by != "" {
		return false, err
	}
	rec.Paused = ""
	if rec.ActiveApproval() == nil {
		rec.Reason = "unpaused; the approval lapsed meanwhile: approve again"
		return false, s.save(ctx, gh, it, "")
	}
	if err := s.move(ctx, it, ledger.Running, "unpaused: the approved run starts"); err != nil {
		return false, err
	}
	if err := s.dispatch(ctx, gh, it, StageImplement); err != nil {
		return false, err
	}
	return true, s.save(ctx, gh, it, "")
}
