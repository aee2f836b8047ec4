package workitem_test

import (
	"testing"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
)

// TestItemBudgetAcrossStages: bounds.cost_per_item_usd counts every run of the work
// item, whatever its stage: the implement run, its review run and the fix round after
// CI failed are each granted what the item's budget leaves after the others.
func TestItemBudgetAcrossStages(t *testing.T) {
	e := newEnv(t, "version: 1\nbounds: {cost_per_run_usd: 3, cost_per_item_usd: 5}\n")
	grant := func(it *item, want int64, what string) {
		t.Helper()
		resp, claims, err := e.exchange(it.run)
		if err != nil || resp.BudgetMicroUSD != want {
			t.Fatalf("%s: budget %d, %v; want %d", what, resp.BudgetMicroUSD, err, want)
		}
		it.claims = claims
	}

	it := e.running()
	grant(it, 3_000_000, "the implement run") // its own cap
	e.must(e.svc.Evidence(e.ctx, it.claims, wire.Evidence{Digest: evidence, CostMicroUSD: 2_000_000}))
	e.must(e.svc.Progress(e.ctx, it.claims, wire.Progress{State: "verifying"}))
	e.pushPull(it)
	e.must(e.svc.Progress(e.ctx, it.claims, wire.Progress{State: "reviewing", PullRequest: it.pr, HeadCommit: it.head}))
	e.expect(it.n, ledger.Reviewing)

	it.run = e.lastRun()
	grant(it, 3_000_000, "the review run") // $3 left of $5: its own cap
	e.must(e.svc.Evidence(e.ctx, it.claims, wire.Evidence{Digest: evidence, CostMicroUSD: 500_000}))
	e.must(e.svc.Verdict(e.ctx, it.claims, wire.Verdict{Document: approveVerdict, HeadCommit: it.head}))
	e.expect(it.n, ledger.InReview)

	e.must(e.checkEvent(e.ciFails(it)))
	e.expect(it.n, ledger.Running)
	it.run = e.lastRun()
	grant(it, 2_500_000, "the fix round") // $5 − $2 − $0.50
}
