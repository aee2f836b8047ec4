package workitem_test

import (
	"strings"
	"testing"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/workitem"
)

// TestPause: serve's kill switch. While it is on, an approval dispatches nothing (the
// item waits, approved, saying what paused it), a run in flight is told to stop at its
// next poll (or left to finish, with pause: finish), and its item waits likewise;
// turned off, Resume dispatches every waiting item without a new approval.
func TestPause(t *testing.T) {
	e := newEnv(t, "")
	inFlight := e.granted()
	waiting := e.awaiting()
	runs := len(e.runs())

	e.pause.Store(&workitem.PauseState{Paused: true, Finish: true})
	if stop, err := e.svc.ShouldStop(e.ctx, inFlight.claims); err != nil || stop.Stop {
		t.Fatalf("with pause: finish, a run in flight was told %+v, %v; want to go on", stop, err)
	}
	e.pause.Store(&workitem.PauseState{Paused: true})
	e.comment(waiting.n, maintainer, "/approve")
	r := e.expect(waiting.n, ledger.AwaitingApproval)
	if r.Paused != workitem.PausedByServe || r.ActiveApproval() == nil || !strings.Contains(r.Reason, "paused by serve's configuration") || len(e.runs()) != runs {
		t.Fatalf("approved while paused: paused %q, approval %v, reason %q, %d runs (want %d)", r.Paused, r.ActiveApproval(), r.Reason, len(e.runs()), runs)
	}
	stop, err := e.svc.ShouldStop(e.ctx, inFlight.claims)
	if err != nil || !stop.Stop || !strings.Contains(stop.Reason, "paused by serve's configuration") {
		t.Fatalf("a run in flight was told %+v, %v; want to stop, paused", stop, err)
	}
	if r := e.expect(inFlight.n, ledger.AwaitingApproval); r.Paused == "" || r.ActiveApproval() == nil || r.CurrentAttempt().Outcome != "paused" {
		t.Fatalf("the stopped run's item: paused %q, approval %v, attempt %+v", r.Paused, r.ActiveApproval(), r.CurrentAttempt())
	}
	if n, err := e.svc.Resume(e.ctx); err != nil || n != 0 {
		t.Fatalf("Resume while paused: %d, %v; want nothing", n, err)
	}

	e.pause.Store(&workitem.PauseState{})
	n, err := e.svc.Resume(e.ctx)
	if err != nil || n != 2 {
		t.Fatalf("Resume: %d, %v; want both items dispatched", n, err)
	}
	for _, it := range []*item{inFlight, waiting} {
		if r := e.expect(it.n, ledger.Running); r.Paused != "" {
			t.Fatalf("item %d still marked paused: %q", it.n, r.Paused)
		}
	}
	if len(e.runs()) != runs+2 {
		t.Fatalf("%d runs after Resume, want %d", len(e.runs()), runs+2)
	}
}

// TestPausedRepository: paused: true in the repository's file on its default branch
// holds its approved items the same way, whatever serve's switch says.
func TestPausedRepository(t *testing.T) {
	e := newEnv(t, "version: 1\npaused: true\n")
	it := e.awaiting()
	e.comment(it.n, maintainer, "/approve")
	r := e.expect(it.n, ledger.AwaitingApproval)
	if r.Paused != workitem.PausedByRepository || len(e.runs()) != 0 {
		t.Fatalf("paused %q, %d runs", r.Paused, len(e.runs()))
	}
	if n, err := e.svc.Resume(e.ctx); err != nil || n != 0 {
		t.Fatalf("Resume while the file pauses: %d, %v", n, err)
	}
}
