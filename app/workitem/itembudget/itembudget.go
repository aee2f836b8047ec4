// Package itembudget is a work item's model budget (the policy's bounds.cost_per_run_usd
// and bounds.cost_per_item_usd): what each of its runs counts against it, and what the
// next run may be granted. Every stage counts: attempts, retries, fix, review, revise
// and update rounds.
package itembudget

import (
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

// spentBy is what the work item's attempts other than skip count against its budget,
// and how many of them count anything.
func spentBy(rec *ledger.Record, skip *ledger.Attempt) (spent int64, runs int) {
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

// Want is the model budget att may be granted, in millionths of a dollar, before
// serve's daily caps: the least of perRunUSD and what perItemUSD leaves after the
// item's other runs; 0 when neither caps it. When the item's budget is spent, why says
// how much was spent by how many runs and what to do.
func Want(rec *ledger.Record, att *ledger.Attempt, perRunUSD, perItemUSD float64) (want int64, why string) {
	runCap, itemCap := microUSD(perRunUSD), microUSD(perItemUSD)
	want = runCap
	if itemCap > 0 {
		spent, runs := spentBy(rec, att)
		left := itemCap - spent
		if left <= 0 {
			noun := "runs"
			if runs == 1 {
				noun = "run"
			}
			return 0, fmt.Sprintf("the work item's model budget is spent: %s of bounds.cost_per_item_usd %s, by %d %s; "+
				"raise it in .github/bumper.yml (which asks for a new approval) or close the issue", dollars(spent), dollars(itemCap), runs, noun)
		}
		if want == 0 || left < want {
			want = left
		}
	}
	return want, ""
}
