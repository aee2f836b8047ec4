package app

import (
	"testing"

	gogithub "github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/ghemu"
)

// TestRedeliverFailedDeliveries: serve's sweep asks GitHub again for a failed webhook
// delivery, once per GUID whatever happens next, and leaves alone a delivery that a
// retry already got through.
func TestRedeliverFailedDeliveries(t *testing.T) {
	tests := []struct {
		name string
		// drops is how many issue_comment deliveries in a row fail: the /approve's, then
		// its redeliveries.
		drops int
		// byHand redelivers the dropped /approve before any sweep, as an operator would.
		byHand bool
		// sweeps is how many deliveries each sweep asks for; "restart" between them
		// starts a fresh serve (empty memory).
		sweeps    []int
		restartAt int
		// attempts is how many deliveries the /approve's GUID gets in the end.
		attempts  int
		wantState ledger.State
		wantRuns  int
	}{
		{name: "a dropped /approve still dispatches", drops: 1, sweeps: []int{1, 0}, restartAt: -1,
			attempts: 2, wantState: ledger.Running, wantRuns: 1},
		{name: "a failed redelivery is asked for again", drops: 2,
			sweeps: []int{1, 1, 0}, restartAt: -1, attempts: 3, wantState: ledger.Running, wantRuns: 1},
		{name: "a delivery that keeps failing is asked for three times in all, across sweeps and a restart", drops: 4,
			sweeps: []int{1, 1, 1, 0, 0}, restartAt: 2, attempts: 4, wantState: ledger.AwaitingApproval},
		{name: "a delivery that failed then succeeded is left alone", drops: 1, byHand: true,
			sweeps: []int{0, 0}, restartAt: -1, attempts: 2, wantState: ledger.Running, wantRuns: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			// Whatever failed before serve listened (the emulator's first deliveries) is
			// not this test's business.
			h.settle()
			if _, err := h.srv.redeliver.sweep(h.ctx); err != nil {
				t.Fatalf("first sweep: %v", err)
			}
			h.settle()
			n := h.openIssue("Make widgets 4", "The widget count should be 4.")
			h.label(ghemu.DefaultMaintainer, n, "agent:implement")
			h.expectState(n, ledger.AwaitingApproval)

			h.e.DropDeliveries("issue_comment", tc.drops)
			h.comment(ghemu.DefaultMaintainer, n, "/approve")
			h.expectState(n, ledger.AwaitingApproval)
			if runs := h.runs(); len(runs) != 0 {
				t.Fatalf("%d runs after a dropped /approve", len(runs))
			}
			if tc.byHand {
				if got := h.redeliverWhere(func(d *gogithub.HookDelivery) bool {
					return d.GetEvent() == "issue_comment" && d.GetStatusCode() == 0
				}); got != 1 {
					t.Fatalf("redelivered %d by hand, want 1", got)
				}
				h.settle()
			}
			for i, want := range tc.sweeps {
				if i == tc.restartAt {
					h.restart()
				}
				st, err := h.srv.redeliver.sweep(h.ctx)
				if err != nil {
					t.Fatalf("sweep %d: %v", i+1, err)
				}
				if st.Redelivered != want {
					t.Fatalf("sweep %d asked for %d deliveries (%+v), want %d", i+1, st.Redelivered, st, want)
				}
				h.settle()
			}
			h.expectState(n, tc.wantState)
			if runs := h.runs(); len(runs) != tc.wantRuns {
				t.Fatalf("%d runs, want %d", len(runs), tc.wantRuns)
			}
			if got := h.commentAttempts(); got != tc.attempts {
				t.Fatalf("the /approve was delivered %d times, want %d", got, tc.attempts)
			}
		})
	}
}

// commentAttempts counts the deliveries of the dropped /approve's GUID (the first
// issue_comment delivery that never reached serve), redeliveries included.
func (h *harness) commentAttempts() int {
	h.t.Helper()
	ds, _, err := h.appClient().Apps.ListHookDeliveries(h.ctx, &gogithub.ListCursorOptions{PerPage: 100})
	if err != nil {
		h.t.Fatal(err)
	}
	guid := ""
	for _, d := range ds { // newest first: the last match is the first drop
		if d.GetEvent() == "issue_comment" && d.GetStatusCode() == 0 {
			guid = d.GetGUID()
		}
	}
	n := 0
	for _, d := range ds {
		if guid != "" && d.GetGUID() == guid {
			n++
		}
	}
	return n
}
