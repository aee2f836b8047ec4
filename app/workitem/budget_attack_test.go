package workitem_test

import (
	"errors"
	"math"
	"testing"

	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/app/workitem"
)

// TestCostReportAttacks: a runner (it holds the run token) cannot make its run count
// less against the work item's budget than it reported: a cost below 0 or beyond any
// cap is refused, and a second report never lowers the first.
func TestCostReportAttacks(t *testing.T) {
	e := newEnv(t, "version: 1\nbounds: {cost_per_run_usd: 3, cost_per_item_usd: 5}\n")
	it := e.running()
	resp, claims, err := e.exchange(it.run)
	if err != nil || resp.BudgetMicroUSD != 3_000_000 {
		t.Fatalf("exchange: %d, %v", resp.BudgetMicroUSD, err)
	}
	for _, cost := range []int64{-1, -5_000_000, math.MinInt64, math.MaxInt64, wire.MaxCostMicroUSD + 1} {
		err := e.svc.Evidence(e.ctx, claims, wire.Evidence{Digest: evidence, CostMicroUSD: cost})
		var ref *workitem.Refusal
		if !errors.As(err, &ref) {
			t.Fatalf("a report of cost %d: %v; want refused", cost, err)
		}
	}
	e.must(e.svc.Evidence(e.ctx, claims, wire.Evidence{Digest: evidence, CostMicroUSD: 2_500_000}))
	// The same run reports again, lower, with an outcome (which would count nothing).
	e.must(e.svc.Evidence(e.ctx, claims, wire.Evidence{Digest: evidence, CostMicroUSD: 0, Outcome: "failure", Reason: "x"}))
	if got := e.record(it.n).CurrentAttempt().CostMicroUSD; got != 2_500_000 {
		t.Fatalf("after a lower second report the run counts %d; want 2500000", got)
	}
	e.must(e.svc.Evidence(e.ctx, claims, wire.Evidence{Digest: evidence, CostMicroUSD: 2_700_000, Outcome: "failure", Reason: "x"}))
	if got := e.record(it.n).CurrentAttempt().CostMicroUSD; got != 2_700_000 {
		t.Fatalf("after a higher report the run counts %d; want 2700000", got)
	}
}
