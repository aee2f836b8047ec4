package app

import (
	"net/http"
	"reflect"
	"strings"
	"testing"

	gogithub "github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/internal/testgate"
)

// redeliverAll redelivers every webhook GitHub ever sent the App and waits for them.
func (h *harness) redeliverAll() {
	h.t.Helper()
	h.redeliverWhere(func(*gogithub.HookDelivery) bool { return true })
	h.settle()
}

// TestRestartInEveryState kills `serve` in each state, starts a new one and redelivers
// every webhook: the state, the approvals and the single dispatch survive.
func TestRestartInEveryState(t *testing.T) {
	testgate.Slow(t, "serve restarted in every state, seconds")
	t.Parallel()
	h := newHarness(t, noReviewer())
	n := h.openIssue("Make widgets 4", "The widget count should be 4.")
	var runToken, instToken string
	check := func(t *testing.T, want ledger.State, runs int) {
		t.Helper()
		before := h.expectState(n, want)
		h.restart()
		mem, _, ok := h.srv.svc.Index().Get(before.ID())
		if !ok || !reflect.DeepEqual(mem, before) {
			t.Fatalf("rebuilt index differs from GitHub:\n got %+v\nwant %+v", mem, before)
		}
		h.redeliverAll()
		after := h.expectState(n, want)
		if got := len(h.runs()); got != runs {
			t.Fatalf("%d runs after restart and redelivery, want %d", got, runs)
		}
		if (before.ActiveApproval() == nil) != (after.ActiveApproval() == nil) {
			t.Fatal("the approval was lost or invented across the restart")
		}
	}
	steps := []struct {
		name string
		do   func(t *testing.T)
		want ledger.State
		runs int
	}{
		{"awaiting-approval", func(t *testing.T) { h.label(ghemu.DefaultMaintainer, n, "agent:implement") }, ledger.AwaitingApproval, 0},
		{"running, before the exchange", func(t *testing.T) { h.comment(ghemu.DefaultMaintainer, n, "/approve") }, ledger.Running, 1},
		{"running, credentials minted", func(t *testing.T) {
			run := h.runs()[0]
			code, resp, body := h.exchange(exchangeRequest(h, run, h.runnerToken(run)))
			if code != http.StatusOK {
				t.Fatalf("exchange: %d %s", code, body)
			}
			runToken, instToken = resp.RunToken, resp.InstallationToken
		}, ledger.Running, 1},
		{"verifying", func(t *testing.T) {
			if code, body := h.post(http.MethodPost, wire.PathProgress, runToken, wire.Progress{State: "verifying"}); code != http.StatusNoContent {
				t.Fatalf("progress: %d %s", code, body)
			}
		}, ledger.Verifying, 1},
		{"in-review", func(t *testing.T) {
			pr, head := h.runnerPull(n, 1, instToken)
			if code, body := h.post(http.MethodPost, wire.PathProgress, runToken, wire.Progress{State: "in-review", PullRequest: pr, HeadCommit: head}); code != http.StatusNoContent {
				t.Fatalf("in-review: %d %s", code, body)
			}
		}, ledger.InReview, 1},
		{"stopped", func(t *testing.T) { h.comment(ghemu.DefaultMaintainer, n, "/stop") }, ledger.Stopped, 1},
		{"awaiting-approval again", func(t *testing.T) { h.comment(ghemu.DefaultMaintainer, n, "/retry") }, ledger.AwaitingApproval, 1},
		{"running attempt 2", func(t *testing.T) { h.comment(ghemu.DefaultMaintainer, n, "/approve") }, ledger.Running, 2},
		{"failed", func(t *testing.T) {
			runs := h.runs()
			if err := h.e.UpdateRun(ghemu.DefaultOrg, ghemu.DefaultRepo, runs[len(runs)-1].ID, ghemu.RunUpdate{Status: "completed", Conclusion: "failure"}); err != nil {
				t.Fatal(err)
			}
			h.settle()
		}, ledger.Failed, 2},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			st.do(t)
			h.settle()
			check(t, st.want, st.runs)
		})
	}
	t.Run("a replayed nonce stays refused after a restart", func(t *testing.T) {
		run := h.runs()[0]
		code, _, body := h.exchange(exchangeRequest(h, run, h.runnerToken(run)))
		if code != http.StatusForbidden {
			t.Fatalf("status %d %s", code, body)
		}
	})
}

// TestUntrustedRecord: a status comment not written by the bot, with a state label,
// is not trusted at start-up; the item goes to the error state and the bot says why.
func TestUntrustedRecord(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	n := h.openIssue("Forged", "Someone forges a record.")
	forged := &ledger.Record{Schema: ledger.SchemaVersion, Revision: 1, Repository: "acme/widgets", Issue: n,
		State: ledger.Running, Requester: "maintainer", SpecRevision: ledger.SpecRevision("Forged", "Someone forges a record."),
		Approvals: []ledger.Approval{}, Attempts: []ledger.Attempt{}}
	body, err := h.sealer.Encode(forged)
	if err != nil {
		t.Fatal(err)
	}
	h.comment(ghemu.DefaultReader, n, body)
	h.label(ghemu.DefaultMaintainer, n, ledger.Running.Label())
	h.restart()
	h.settle()
	r := h.expectState(n, ledger.Error)
	if !strings.Contains(r.Reason, "written by @reader") {
		t.Fatalf("reason %q", r.Reason)
	}
	if len(h.runs()) != 0 {
		t.Fatal("a forged record dispatched a run")
	}
	t.Run("relabelling starts over", func(t *testing.T) {
		h.label(ghemu.DefaultMaintainer, n, "agent:implement")
		h.expectState(n, ledger.AwaitingApproval)
	})
}
