package app

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gogithub "github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/app/workitem"
	"github.com/bumperdev/bumper/ghemu"
)

// limitsSeed is the default world with the account's ledger repository (.github), where
// the installation's day counters live.
func limitsSeed() *ghemu.Seed {
	seed := ghemu.DefaultSeed()
	seed.Repositories = append(seed.Repositories, ghemu.SeedRepository{Owner: ghemu.DefaultOrg, Name: ".github", DefaultBranch: "main",
		Files: map[string]string{"README.md": "The organisation's defaults.\n"}, Collaborators: map[string]string{}})
	return seed
}

// exchangeAt trades a run's nonce at the serve listening at base.
func (h *harness) exchangeAt(base string, run ghemu.RunInfo) (int, wire.ExchangeResponse, string) {
	h.t.Helper()
	raw, _ := json.Marshal(exchangeRequest(h, run, h.runnerToken(run)))
	resp, err := http.Post(base+wire.PathTokenExchange, "application/json", bytes.NewReader(raw))
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out wire.ExchangeResponse
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, &out); err != nil {
			h.t.Fatal(err)
		}
	}
	return resp.StatusCode, out, string(body)
}

// TestDailyLimits: serve's limits.repo_daily_usd and installation_daily_usd hold across
// work items, restarts and replicas, in counters kept in GitHub. Each run is granted the
// least of its cap and what each day's budget leaves; a run's report settles its hold
// to what it spent; once a cap is spent the next exchange is refused and its item fails,
// saying which cap, how much, and when it resets; after the day changes /retry runs it.
// Two replicas granting at once never grant more than the cap.
func TestDailyLimits(t *testing.T) {
	h := newHarness(t, limitsSeed())
	h.setPolicy("version: 1\nbounds:\n  cost_per_run_usd: 2\n")
	h.cfg.Bumper.Limits = LimitsConfig{RepoDailyUSD: 5, InstallationDailyUSD: 100}
	h.restart()

	// Three items approved together: $2, $2, then the $1 left.
	var runs []ghemu.RunInfo
	for range 3 {
		_, run := h.approved()
		runs = append(runs, run)
	}
	var grants []wire.ExchangeResponse
	for i, want := range []int64{2_000_000, 2_000_000, 1_000_000} {
		code, g, body := h.exchange(exchangeRequest(h, runs[i], h.runnerToken(runs[i])))
		if code != http.StatusOK || g.BudgetMicroUSD != want {
			t.Fatalf("exchange %d: %d budget %d %s; want %d", i+1, code, g.BudgetMicroUSD, body, want)
		}
		grants = append(grants, g)
	}
	// A fourth is not dispatched: the item fails, saying which cap and when.
	n4 := h.openIssue("Make widgets 5", "The widget count should be 5.")
	h.label(ghemu.DefaultMaintainer, n4, "agent:implement")
	h.comment(ghemu.DefaultMaintainer, n4, "/approve")
	r := h.expectState(n4, ledger.Failed)
	if len(h.runs()) != 3 {
		t.Fatalf("%d runs dispatched; the cap was spent after 3", len(h.runs()))
	}
	for _, want := range []string{"limits.repo_daily_usd is spent for today: $5.00 of $5.00", "resets at", "/retry"} {
		if !strings.Contains(r.Reason, want) {
			t.Fatalf("reason %q lacks %q", r.Reason, want)
		}
	}

	// The first run reports $0.50: its hold of $2 becomes $0.50, and $1.50 is free
	// again — after a restart too, since the counter is GitHub's.
	report := wire.Evidence{Digest: ledger.ContentRevision([]byte("evidence")), CostMicroUSD: 500_000, Outcome: "failure", Reason: "the tests failed"}
	if code, body := h.post(http.MethodPost, wire.PathEvidence, grants[0].RunToken, report); code != http.StatusOK {
		t.Fatalf("report: %d %s", code, body)
	}
	h.restart()

	// Two replicas on a shared clock race for what is left: together they grant at most
	// the $1.50 free.
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	a, b := h.replica(Options{Now: clock}), h.replica(Options{Now: clock})
	n5, run5 := h.approved()
	n6, run6 := h.approved()
	var wg sync.WaitGroup
	var granted atomic.Int64
	for i, x := range []struct {
		base string
		run  ghemu.RunInfo
	}{{a.hs.URL, run5}, {b.hs.URL, run6}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if code, g, body := h.exchangeAt(x.base, x.run); code == http.StatusOK {
				granted.Add(g.BudgetMicroUSD)
			} else if !strings.Contains(body, "limits.repo_daily_usd") {
				t.Errorf("replica %d: %d %s", i, code, body)
			}
		}()
	}
	wg.Wait()
	if g := granted.Load(); g <= 0 || g > 1_500_000 {
		t.Fatalf("the replicas granted $%.2f together; $1.50 was left", float64(g)/1e6)
	}
	h.settle()
	_, _ = n5, n6
	// serve's metrics show what the cap leaves, as the replica that granted last held it.
	capLabels := map[string]string{"limit": "limits.repo_daily_usd", "scope": ghemu.DefaultOrg + "/" + ghemu.DefaultRepo}
	left := -1.0
	for _, r := range []*replica{a, b} {
		if v, ok := sample(scrape(t, r.hs.URL), "bumper_cap_remaining_usd", capLabels); ok && (left < 0 || v < left) {
			left = v
		}
	}
	if left < 0 || left > 1.5 {
		t.Fatalf("bumper_cap_remaining_usd %v; want what the day leaves after the race (at most $1.50)", left)
	}
	// The counters are GitHub's: one ref per scope and day.
	if refs := h.guardRefs("spend"); len(refs) != 1 {
		t.Fatalf("the repository's day counters: %v", refs)
	}

	// A writer rewrites today's counter to look unspent: serve grants nothing from a
	// counter it did not write, and says so.
	day := time.Unix(0, now.Load()).UTC().Format(time.DateOnly)
	w := h.user(ghemu.DefaultMaintainer)
	ref, _, err := w.Git.GetRef(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, "bumper/spend/"+day)
	if err != nil {
		t.Fatal(err)
	}
	old, _, err := w.Git.GetCommit(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, ref.GetObject().GetSHA())
	if err != nil {
		t.Fatal(err)
	}
	forged, _, err := w.Git.CreateCommit(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, &gogithub.Commit{
		Message: gogithub.String(`{"day":"` + day + `","spent_micro_usd":0}`), Tree: old.Tree, Parents: []*gogithub.Commit{{SHA: old.SHA}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ref.Object.SHA = forged.SHA
	if _, _, err := w.Git.UpdateRef(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, ref, false); err != nil {
		t.Fatal(err)
	}
	n7 := h.openIssue("Make widgets 7", "The widget count should be 7.")
	h.label(ghemu.DefaultMaintainer, n7, "agent:implement")
	h.comment(ghemu.DefaultMaintainer, n7, "/approve")
	if r := h.expectState(n7, ledger.Failed); !strings.Contains(r.Reason, "was not written by serve") {
		t.Fatalf("after a forged counter: reason %q", r.Reason)
	}

	// The next UTC day: the fourth item's /retry runs, with a fresh budget.
	now.Add(int64(24 * time.Hour))
	h.commentTo(a, ghemu.DefaultMaintainer, n4, "/retry")
	h.commentTo(a, ghemu.DefaultMaintainer, n4, "/approve")
	all := h.runs()
	code, g, body := h.exchangeAt(a.hs.URL, all[len(all)-1])
	if code != http.StatusOK || g.BudgetMicroUSD != 2_000_000 {
		t.Fatalf("the next day's exchange: %d budget %d %s", code, g.BudgetMicroUSD, body)
	}
}

// TestDailyItems: limits.repo_daily_items caps how many work items start in a
// repository per UTC day. An item past it is not dispatched: it fails, saying which
// cap and when it resets. A retry of an item that started today does not count again.
func TestDailyItems(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.cfg.Bumper.Limits = LimitsConfig{RepoDailyItems: 2}
	h.restart()
	n1, run1 := h.approved()
	h.approved()
	n := h.openIssue("A third", "The widget count should be 4.")
	h.label(ghemu.DefaultMaintainer, n, "agent:implement")
	h.comment(ghemu.DefaultMaintainer, n, "/approve")
	r := h.expectState(n, ledger.Failed)
	if !strings.Contains(r.Reason, "limits.repo_daily_items is spent for today: 2 of 2 work items started") || len(h.runs()) != 2 {
		t.Fatalf("reason %q, %d runs", r.Reason, len(h.runs()))
	}
	// The first item's second attempt is no new item.
	if err := h.e.UpdateRun(ghemu.DefaultOrg, ghemu.DefaultRepo, run1.ID, ghemu.RunUpdate{Status: "completed", Conclusion: "failure"}); err != nil {
		t.Fatal(err)
	}
	h.settle()
	h.expectState(n1, ledger.Failed)
	h.comment(ghemu.DefaultMaintainer, n1, "/retry")
	h.comment(ghemu.DefaultMaintainer, n1, "/approve")
	h.expectState(n1, ledger.Running)
}

// TestPauseSwitch: serve's kill switch as a reload of its configuration sets it
// (SetPause, what SIGHUP calls): paused, an approval dispatches nothing and the status
// comment says what paused it; unpaused, the held item is dispatched without a new
// approval.
func TestPauseSwitch(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	if _, err := h.srv.SetPause(h.ctx, workitem.PauseState{Paused: true}); err != nil {
		t.Fatal(err)
	}
	n := h.openIssue("Make widgets 4", "The widget count should be 4.")
	h.label(ghemu.DefaultMaintainer, n, "agent:implement")
	h.comment(ghemu.DefaultMaintainer, n, "/approve")
	r := h.expectState(n, ledger.AwaitingApproval)
	if r.Paused != workitem.PausedByServe || len(h.runs()) != 0 || !strings.Contains(h.statusComment(n).GetBody(), "paused by serve") {
		t.Fatalf("paused %q, %d runs, status:\n%s", r.Paused, len(h.runs()), h.statusComment(n).GetBody())
	}
	resumed, err := h.srv.SetPause(h.ctx, workitem.PauseState{})
	if err != nil || resumed != 1 {
		t.Fatalf("unpausing resumed %d, %v", resumed, err)
	}
	h.settle()
	if r := h.expectState(n, ledger.Running); len(h.runs()) != 1 || r.Paused != "" {
		t.Fatalf("%d runs, paused %q after unpausing", len(h.runs()), r.Paused)
	}
}
