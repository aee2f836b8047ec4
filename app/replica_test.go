package app

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	gogithub "github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/ghemu"
)

// redeliverWhere redelivers the original deliveries that match (redelivering
// redeliveries would only repeat them), following every page, and counts them.
func (h *harness) redeliverWhere(match func(d *gogithub.HookDelivery) bool) int {
	h.t.Helper()
	app := h.appClient()
	opts := &gogithub.ListCursorOptions{PerPage: 100}
	n := 0
	for {
		ds, resp, err := app.Apps.ListHookDeliveries(h.ctx, opts)
		if err != nil {
			h.t.Fatal(err)
		}
		for _, d := range ds {
			if d.GetRedelivery() || !match(d) {
				continue
			}
			var accepted *gogithub.AcceptedError
			if _, _, err := app.Apps.RedeliverHookDelivery(h.ctx, d.GetID()); err != nil && !errors.As(err, &accepted) {
				h.t.Fatal(err)
			}
			n++
		}
		if resp.Cursor == "" {
			return n
		}
		opts.Cursor = resp.Cursor
	}
}

// TestReplicasDispatchOnce: a second replica, whose view predates the approval, gets
// the same /approve; it reads the record back before acting (or, had the record not
// shown the dispatch yet, the dispatch ref would make it stand down), and one run goes.
func TestReplicasDispatchOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	n := h.openIssue("Make widgets 4", "The widget count should be 4.")
	h.label(ghemu.DefaultMaintainer, n, "agent:implement")

	b, err := New(h.ctx, h.cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	bs := httptest.NewServer(b.Handler())
	defer bs.Close()
	if _, err := b.Rebuild(h.ctx); err != nil {
		t.Fatal(err)
	}
	h.comment(ghemu.DefaultMaintainer, n, "/approve")
	h.expectState(n, ledger.Running)

	h.e.SetWebhookURL(bs.URL + h.cfg.Server.WebhookPath)
	if got := h.redeliverWhere(func(d *gogithub.HookDelivery) bool { return d.GetEvent() == "issue_comment" }); got < 1 {
		t.Fatalf("%d comment deliveries, want at least 1", got)
	}
	ctx, cancel := context.WithTimeout(h.ctx, 20*time.Second)
	defer cancel()
	if err := h.e.WaitWebhooks(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	h.e.SetWebhookURL(h.hs.URL + h.cfg.Server.WebhookPath)
	if runs := h.runs(); len(runs) != 1 {
		t.Fatalf("%d runs after the second replica saw /approve, want 1", len(runs))
	}
	h.expectState(n, ledger.Running)
	// The second replica's copy predates the approval; it reads the record back before
	// acting (a conditional request), so it holds GitHub's, or none.
	if rec, _, ok := b.svc.Index().Get(ledger.ID("acme/widgets", n)); ok && rec.State != ledger.Running {
		t.Fatalf("the second replica kept a stale copy of the item: %s", rec.State)
	}
}

// TestInstallationIndexes: an `installation` webhook makes a server that has not
// rebuilt index the installation's repositories.
func TestInstallationIndexes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	n := h.openIssue("Make widgets 4", "The widget count should be 4.")
	h.label(ghemu.DefaultMaintainer, n, "agent:implement")

	fresh, err := New(h.ctx, h.cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fs := httptest.NewServer(fresh.Handler())
	defer fs.Close()
	h.e.SetWebhookURL(fs.URL + h.cfg.Server.WebhookPath)
	if got := h.redeliverWhere(func(d *gogithub.HookDelivery) bool { return d.GetEvent() == "installation" }); got != 1 {
		t.Fatalf("%d installation deliveries, want 1", got)
	}
	ctx, cancel := context.WithTimeout(h.ctx, 20*time.Second)
	defer cancel()
	if err := h.e.WaitWebhooks(ctx); err != nil {
		t.Fatal(err)
	}
	if err := fresh.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	h.e.SetWebhookURL(h.hs.URL + h.cfg.Server.WebhookPath)
	rec, _, ok := fresh.svc.Index().Get(ledger.ID("acme/widgets", n))
	if !ok || rec.State != ledger.AwaitingApproval {
		t.Fatalf("the installation webhook did not index the item: %+v %v", rec, ok)
	}
}
