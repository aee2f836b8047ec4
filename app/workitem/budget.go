package workitem

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/bumperdev/bumper/app/ledger"
)

// microUSD is dollars in millionths, as the records and the wire count them.
func microUSD(usd float64) int64 { return int64(math.Round(usd * 1e6)) }

// dollars writes millionths of a dollar to the cent.
func dollars(micro int64) string { return fmt.Sprintf("$%.2f", float64(micro)/1e6) }

// charged is what one attempt counts against the work item's budget: its cost as its
// runner reported it, or, when it was granted a budget and never reported (a crash, a
// kill), that whole budget, which the proxy may have spent. An attempt that never
// reached its exchange counts nothing.
func charged(a *ledger.Attempt) int64 {
	if a.RunOutcome != "" || a.CostMicroUSD > 0 {
		return a.CostMicroUSD
	}
	return a.ReservedMicroUSD
}

// itemSpent is what the work item's attempts other than skip count against its
// budget, and how many of them count anything.
func itemSpent(rec *ledger.Record, skip *ledger.Attempt) (spent int64, runs int) {
	for i := range rec.Attempts {
		a := &rec.Attempts[i]
		if a == skip {
			continue
		}
		if c := charged(a); c > 0 {
			spent, runs = spent+c, runs+1
		}
	}
	return spent, runs
}

// runBudget is the model budget att is granted at its exchange, in millionths of a
// dollar: the least of the policy's bounds.cost_per_run_usd and what its
// bounds.cost_per_item_usd leaves after the item's other runs (every stage counts:
// attempts, retries, fix, review, revise and update rounds); 0 when neither caps it.
// The policy is the one at the approved base commit, as the runner reads it. When the
// item's budget is spent the exchange is refused and the item fails, saying how much
// was spent by how many runs and what to do; nothing else is lost.
func (s *Service) runBudget(ctx context.Context, gh GitHub, it *item, att *ledger.Attempt) (int64, error) {
	rec := it.rec
	pol, err := s.policyAt(ctx, gh, rec.Repository, rec.BaseCommit)
	if err != nil {
		return 0, err
	}
	runCap, itemCap := microUSD(pol.Bounds.CostPerRunUSD), microUSD(pol.Bounds.CostPerItemUSD)
	want := runCap
	if itemCap > 0 {
		spent, runs := itemSpent(rec, att)
		left := itemCap - spent
		if left <= 0 {
			noun := "runs"
			if runs == 1 {
				noun = "run"
			}
			why := fmt.Sprintf("the work item's model budget is spent: %s of bounds.cost_per_item_usd %s, by %d %s; "+
				"raise it in .github/bumper.yml (which asks for a new approval) or close the issue", dollars(spent), dollars(itemCap), runs, noun)
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
		if want == 0 || left < want {
			want = left
		}
	}
	grant, err := s.reserveDaily(ctx, rec, att, want)
	var capErr *capSpent
	if errors.As(err, &capErr) {
		return 0, s.failOnCap(ctx, gh, it, att, capErr)
	}
	return grant, err
}
