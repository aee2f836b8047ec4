package app

import (
	"encoding/json"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/app/workitem"
	"github.com/bumperdev/bumper/ghemu"
)

// dayCounter reads today's counter of the repository as serve wrote it.
func (h *harness) dayCounter() (workitem.DayCounter, string) {
	h.t.Helper()
	day := time.Now().UTC().Format(time.DateOnly)
	w := h.user(ghemu.DefaultMaintainer)
	ref, _, err := w.Git.GetRef(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, "bumper/spend/"+day)
	if err != nil {
		h.t.Fatal(err)
	}
	c, _, err := w.Git.GetCommit(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, ref.GetObject().GetSHA())
	if err != nil {
		h.t.Fatal(err)
	}
	var dc workitem.DayCounter
	if err := json.Unmarshal([]byte(c.GetMessage()), &dc); err != nil {
		h.t.Fatal(err)
	}
	return dc, ref.GetObject().GetSHA()
}

// TestDaySpendReportAttacks: a runner's reports cannot lower what the day spent: a
// negative cost, or one huge enough to wrap the counter, is refused and the run's hold
// stays; a second, lower report does not lower the day; a higher one adds what it adds;
// a repeated report writes nothing to the counter.
func TestDaySpendReportAttacks(t *testing.T) {
	h := newHarness(t, limitsSeed())
	h.setPolicy("version: 1\nbounds:\n  cost_per_run_usd: 2\n")
	h.cfg.Bumper.Limits = LimitsConfig{RepoDailyUSD: 5, InstallationDailyUSD: 100}
	h.restart()

	_, run := h.approved()
	code, g, body := h.exchange(exchangeRequest(h, run, h.runnerToken(run)))
	if code != http.StatusOK || g.BudgetMicroUSD != 2_000_000 {
		t.Fatalf("exchange: %d %d %s", code, g.BudgetMicroUSD, body)
	}
	digest := ledger.ContentRevision([]byte("evidence"))
	for _, cost := range []int64{-10_000_000, math.MaxInt64, math.MinInt64} {
		if code, body := h.post(http.MethodPost, wire.PathEvidence, g.RunToken, wire.Evidence{Digest: digest, CostMicroUSD: cost}); code == http.StatusOK {
			t.Fatalf("a report of %d was taken: %s", cost, body)
		}
		if c, _ := h.dayCounter(); c.SpentMicroUSD != 0 || len(c.Reserved) != 1 || sum(c.Reserved) != 2_000_000 {
			t.Fatalf("after a report of %d the day reads %+v", cost, c)
		}
	}
	report := func(cost int64) {
		t.Helper()
		if code, body := h.post(http.MethodPost, wire.PathEvidence, g.RunToken, wire.Evidence{Digest: digest, CostMicroUSD: cost, Outcome: "failure", Reason: "x"}); code != http.StatusOK {
			t.Fatalf("report %d: %d %s", cost, code, body)
		}
	}
	report(1_500_000)
	if c, _ := h.dayCounter(); c.SpentMicroUSD != 1_500_000 || len(c.Reserved) != 0 {
		t.Fatalf("settled: %+v", c)
	}
	_, before := h.dayCounter()
	report(0)
	report(1_500_000)
	if c, at := h.dayCounter(); c.SpentMicroUSD != 1_500_000 || at != before {
		t.Fatalf("after a lower and a repeated report: %+v (a new write: %v)", c, at != before)
	}
	report(1_800_000)
	if c, _ := h.dayCounter(); c.SpentMicroUSD != 1_800_000 {
		t.Fatalf("after a higher report the day spent %d; want 1800000", c.SpentMicroUSD)
	}
}

func sum(m map[string]int64) (n int64) {
	for _, v := range m {
		n += v
	}
	return n
}
