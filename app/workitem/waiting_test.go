package workitem_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/app/workitem"
)

// slotLine is what the status comment says while a run waits for a VM slot.
const slotLine = "waiting for a VM slot on the runner host (since "

// TestWaitingForSlot: a run that waits for a VM slot on its runner host says so, and the
// status comment shows it, since when serve heard it, without moving the item; it clears
// when the run says it has its slot, and when it reports its next step. A repeated note
// writes nothing, and a run whose item is over cannot note anything.
func TestWaitingForSlot(t *testing.T) {
	e := newEnv(t, "")
	it := e.granted()
	e.clock.Advance(3 * time.Minute)
	at := e.clock.Now().UTC().Format("15:04 MST")

	e.must(e.svc.Waiting(e.ctx, it.claims, wire.Waiting{Waiting: true}))
	body := e.statusBody(it.n)
	if !strings.Contains(body, slotLine+at+")") {
		t.Fatalf("the status comment does not say the run waits since %s:\n%s", at, body)
	}
	if r := e.record(it.n); r.State != ledger.Running || r.SlotWait == nil {
		t.Fatalf("record = %s, %+v; want running, waiting", r.State, r.SlotWait)
	}
	rev := e.record(it.n).Revision
	e.clock.Advance(time.Minute)
	e.must(e.svc.Waiting(e.ctx, it.claims, wire.Waiting{Waiting: true}))
	if r := e.record(it.n); r.Revision != rev {
		t.Fatalf("a repeated note wrote the record again (revision %d, was %d)", r.Revision, rev)
	}
	if !strings.Contains(e.statusBody(it.n), slotLine+at+")") {
		t.Fatal("a repeated note moved the time the run began to wait")
	}

	e.must(e.svc.Waiting(e.ctx, it.claims, wire.Waiting{Waiting: false}))
	if body := e.statusBody(it.n); strings.Contains(body, slotLine) {
		t.Fatalf("the note stayed once the run had its slot:\n%s", body)
	}

	// Waiting again, then the next step clears it.
	e.must(e.svc.Waiting(e.ctx, it.claims, wire.Waiting{Waiting: true}))
	if !strings.Contains(e.statusBody(it.n), slotLine) {
		t.Fatal("the second wait is not shown")
	}
	e.must(e.svc.Progress(e.ctx, it.claims, wire.Progress{State: "verifying"}))
	if body := e.statusBody(it.n); strings.Contains(body, slotLine) || e.record(it.n).SlotWait != nil {
		t.Fatalf("the note stayed after the run reported its next step:\n%s", body)
	}

	e.comment(it.n, writer, "/stop")
	err := e.svc.Waiting(e.ctx, it.claims, wire.Waiting{Waiting: true})
	var ref *workitem.Refusal
	if !errors.As(err, &ref) {
		t.Fatalf("a stopped item's run noted a wait: %v", err)
	}
	if strings.Contains(e.statusBody(it.n), slotLine) {
		t.Fatal("a stopped item says its run waits")
	}
}

// TestWaitingScope: every stage's run token may note a wait, and only that.
func TestWaitingScope(t *testing.T) {
	for _, st := range wire.Stages() {
		scope := wire.ScopesOf(st)
		if !strings.Contains(strings.Join(scope, " "), wire.ScopeWaiting) {
			t.Errorf("a %s run's token cannot note a wait: %v", st, scope)
		}
	}
}
