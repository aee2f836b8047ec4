package app

import (
	"net/http"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/runnerapi"
	"github.com/bumperdev/bumper/app/wire"
)

// TestWaitingAttacks: the waiting call-back, as an attacker holding some run token would
// try it. A token without the waiting scope (one minted before the call-back existed, or
// cut down), one of another attempt, one signed with another key, and none at all are
// refused and change nothing; the waiting scope opens only this call-back (a review run's
// token still cannot report progress); the run's own token notes its wait and the status
// comment shows it until the run says it has its slot.
func TestWaitingAttacks(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	n, resp := h.granted("Make widgets 4", "The widget count should be 4.")
	own, err := runnerapi.NewRunTokens([]byte(testRunTokenKey), nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := h.record(n)
	claims := wire.RunClaims{WorkItem: wire.WorkItem{Repository: rec.Repository, Issue: n}, Revision: rec.Attempts[0].Revision,
		Attempt: 1, Stage: wire.StageImplement}
	sign := func(c wire.RunClaims) string {
		tok, _, err := own.Sign(c)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	other, err := runnerapi.NewRunTokens([]byte(strings.Repeat("k", 32)), nil)
	if err != nil {
		t.Fatal(err)
	}
	narrow := claims
	narrow.Scope = []string{wire.ScopeProgress, wire.ScopeEvidence, wire.ScopeTask, wire.ScopeShouldStop}
	later := claims
	later.Attempt, later.Scope = 2, wire.ScopesOf(wire.StageImplement)
	forged := claims
	forged.Scope = wire.ScopesOf(wire.StageImplement)
	forgedToken, _, err := other.Sign(forged)
	if err != nil {
		t.Fatal(err)
	}
	attacks := []struct {
		name, token, says string
	}{
		{"a token without the waiting scope", sign(narrow), "does not allow"},
		{"a token of an attempt that is not current", sign(later), "attempt"},
		{"a token signed with another key", forgedToken, "run token"},
		{"no token", "", "run token"},
	}
	for _, a := range attacks {
		code, body := h.post(http.MethodPost, wire.PathWaiting, a.token, wire.Waiting{Waiting: true})
		if code != http.StatusForbidden || !strings.Contains(string(body), a.says) {
			t.Errorf("%s: %d %s; want 403 saying %q", a.name, code, body, a.says)
		}
	}
	if r := h.record(n); r.SlotWait != nil || strings.Contains(h.statusComment(n).GetBody(), "VM slot") {
		t.Fatalf("a refused call-back noted a wait: %+v", r.SlotWait)
	}

	review := claims
	review.Stage, review.Scope = wire.StageReview, wire.ScopesOf(wire.StageReview)
	if code, body := h.post(http.MethodPost, wire.PathProgress, sign(review), wire.Progress{State: "verifying"}); code != http.StatusForbidden {
		t.Fatalf("a review run's token (with the waiting scope) reported progress: %d %s", code, body)
	}

	if code, body := h.post(http.MethodPost, wire.PathWaiting, resp.RunToken, wire.Waiting{Waiting: true}); code != http.StatusNoContent {
		t.Fatalf("the run's own note: %d %s", code, body)
	}
	if body := h.statusComment(n).GetBody(); !strings.Contains(body, "waiting for a VM slot on the runner host (since ") {
		t.Fatalf("the status comment does not say the run waits:\n%s", body)
	}
	if code, body := h.post(http.MethodPost, wire.PathWaiting, resp.RunToken, wire.Waiting{Waiting: false}); code != http.StatusNoContent {
		t.Fatalf("the run's slot: %d %s", code, body)
	}
	if strings.Contains(h.statusComment(n).GetBody(), "VM slot") {
		t.Fatal("the note stayed once the run had its slot")
	}
	h.settle()
	h.expectState(n, ledger.Running)
}
