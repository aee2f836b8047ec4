package workitem

import (
	"context"
	"errors"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/workitem/dailycap"
	"github.com/bumperdev/bumper/app/workitem/itembudget"
)

// runBudget is the model budget att is granted at its exchange, in millionths of a
// dollar: what the item's budget allows it (itembudget.Want), within serve's daily caps.
// The policy is the one at the approved base commit, as the runner reads it. When the
// item's budget is spent the exchange is refused and the item fails, saying how much
// was spent by how many runs and what to do; nothing else is lost.
func (s *Service) runBudget(ctx context.Context, gh GitHub, it *item, att *ledger.Attempt) (int64, error) {
	rec := it.rec
	pol, err := s.policyAt(ctx, gh, rec.Repository, rec.BaseCommit)
	if err != nil {
		return 0, err
	}
	want, why := itembudget.Want(rec, att, pol.Bounds.CostPerRunUSD, pol.Bounds.CostPerItemUSD)
	if why != "" {
		att.Outcome, att.EndedAt = "budget", s.now().UTC()
		if rec.State.Active() {
			if err := s.move(ctx, it, ledger.Failed, why); err != nil {
				return 0, err
			}
		}
		if err := s.save(ctx, gh, it, ""); err != nil {
			return 0, err
		}
		return 0, refuse(RefusalBudget, "%s", why)
	}
	grant, err := s.reserveDaily(ctx, rec, att, want)
	var capErr *dailycap.Spent
	if errors.As(err, &capErr) {
		return 0, s.failOnCap(ctx, gh, it, att, capErr)
	}
	return grant, err
}
