package app

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gogithub "github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/app/workitem"
	"github.com/bumperdev/bumper/app/workitem/runidentity"
	"github.com/bumperdev/bumper/ghemu"
)

// replica is a serve of its own beside the harness's, on a shared clock.
type replica struct {
	srv *Server
	hs  *httptest.Server
}

func (h *harness) replica(opts Options) *replica {
	h.t.Helper()
	srv, err := New(h.ctx, h.cfg, opts)
	if err != nil {
		h.t.Fatal(err)
	}
	r := &replica{srv: srv, hs: httptest.NewServer(srv.Handler())}
	h.t.Cleanup(r.hs.Close)
	if _, err := srv.Rebuild(h.ctx); err != nil {
		h.t.Fatal(err)
	}
	return r
}

// commentTo delivers a comment's webhook to one replica and waits for it.
func (h *harness) commentTo(r *replica, who string, n int, body string) {
	h.t.Helper()
	h.e.SetWebhookURL(r.hs.URL + h.cfg.Server.WebhookPath)
	defer h.e.SetWebhookURL(h.hs.URL + h.cfg.Server.WebhookPath)
	if _, _, err := h.user(who).Issues.CreateComment(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, n, &gogithub.IssueComment{Body: &body}); err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(h.ctx, 20*time.Second)
	defer cancel()
	if err := h.e.WaitWebhooks(ctx); err != nil {
		h.t.Fatal(err)
	}
	if err := r.srv.Drain(ctx); err != nil {
		h.t.Fatal(err)
	}
}

// guardRefs lists the refs under refs/bumper/<kind>/.
func (h *harness) guardRefs(kind string) []string {
	h.t.Helper()
	refs, err := h.e.Git().Refs(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for r := range refs {
		if strings.HasPrefix(r, "refs/bumper/"+kind+"/") {
			out = append(out, r)
		}
	}
	return out
}

// TestDispatchRedrive: serve is killed just after it took a dispatch's guard ref; the
// approval is lost and the ref stays. The next /approve meets the ref and is handled
// again once the grace period has passed without a record of the dispatch; two
// replicas that both met it re-drive it together, and exactly one run is dispatched.
func TestDispatchRedrive(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.cfg.Server.DispatchGrace = time.Minute
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }

	n := h.openIssue("Make widgets 4", "The widget count should be 4.")
	h.label(ghemu.DefaultMaintainer, n, "agent:implement")
	killed := errors.New("serve was killed here")
	dying := h.replica(Options{Fault: func(p workitem.FaultPoint) error {
		if p == workitem.FaultAfterDispatchRef {
			return killed
		}
		return nil
	}})
	h.commentTo(dying, ghemu.DefaultMaintainer, n, "/approve")
	dying.hs.Close()
	if refs := h.guardRefs("dispatch"); len(refs) != 1 || len(h.runs()) != 0 {
		t.Fatalf("after the kill: guard refs %v, %d runs", refs, len(h.runs()))
	}
	h.expectState(n, ledger.AwaitingApproval)

	b := h.replica(Options{Now: clock})
	c := h.replica(Options{Now: clock})
	h.commentTo(b, ghemu.DefaultMaintainer, n, "/approve")
	h.commentTo(c, ghemu.DefaultMaintainer, n, "/approve")
	if len(h.runs()) != 0 {
		t.Fatal("a replica dispatched over a guard ref it did not take")
	}
	if got, err := b.srv.Redrive(h.ctx); got != 0 || err != nil {
		t.Fatalf("re-drove %d before the grace period passed (%v)", got, err)
	}
	now.Add(int64(time.Minute))
	var wg sync.WaitGroup
	for _, r := range []*replica{b, c} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got, err := r.srv.Redrive(h.ctx); got != 1 || err != nil {
				t.Errorf("re-drove %d (%v), want the one pending dispatch", got, err)
			}
		}()
	}
	wg.Wait()
	h.settle()
	if runs := h.runs(); len(runs) != 1 {
		t.Fatalf("%d runs after two replicas re-drove the dispatch, want exactly 1", len(runs))
	}
	rec := h.expectState(n, ledger.Running)
	if len(rec.Attempts) != 1 || rec.Attempts[0].RunID != h.runs()[0].ID || len(h.guardRefs("redrive")) != 1 {
		t.Fatalf("attempts %+v, re-drive refs %v", rec.Attempts, h.guardRefs("redrive"))
	}
	if a := rec.ActiveApproval(); a == nil || a.By != ghemu.DefaultMaintainer {
		t.Fatalf("the re-driven dispatch holds no approval: %+v", rec.Approvals)
	}
}

// killedAt labels an issue and has a replica that dies at point handle its /approve.
func killedAt(t *testing.T, point workitem.FaultPoint) (*harness, int) {
	h := newHarness(t, nil)
	h.cfg.Server.DispatchGrace = time.Minute
	n := h.openIssue("Make widgets 4", "The widget count should be 4.")
	h.label(ghemu.DefaultMaintainer, n, "agent:implement")
	dying := h.replica(Options{Fault: func(p workitem.FaultPoint) error {
		if p == point {
			return errors.New("serve was killed here")
		}
		return nil
	}})
	h.commentTo(dying, ghemu.DefaultMaintainer, n, "/approve")
	dying.hs.Close()
	h.expectState(n, ledger.AwaitingApproval)
	return h, n
}

// redriveAfterGrace has a live replica meet the dead one's guard ref through the next
// /approve and re-drive the dispatch once the grace period has passed.
func redriveAfterGrace(t *testing.T, h *harness, n int) *ledger.Record {
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	b := h.replica(Options{Now: func() time.Time { return time.Unix(0, now.Load()) }})
	h.commentTo(b, ghemu.DefaultMaintainer, n, "/approve")
	now.Add(int64(time.Minute))
	if got, err := b.srv.Redrive(h.ctx); got != 1 || err != nil {
		t.Fatalf("re-drove %d (%v), want the one pending dispatch", got, err)
	}
	h.settle()
	return h.expectState(n, ledger.Running)
}

// writerDispatches has a writer dispatch the runner workflow themselves with inputs.
func writerDispatches(t *testing.T, h *harness, inputs map[string]any) {
	if _, err := h.user(ghemu.DefaultMaintainer).Actions.CreateWorkflowDispatchEventByFileName(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo,
		ghemu.DefaultWorkflow, gogithub.CreateWorkflowDispatchEventRequest{Ref: "main", Inputs: inputs}); err != nil {
		t.Fatal(err)
	}
}

// TestDispatchRedriveAdoptsTheRun: serve is killed just after it dispatched a run and
// before it recorded it; the run is there, with the attempt's nonce, and nothing says so
// but its title (the workflow's run-name). The replica that re-drives the dispatch finds
// the run by its title and adopts it: one run for the attempt, recorded with its ID and
// the nonce it carries, so its exchange holds.
func TestDispatchRedriveAdoptsTheRun(t *testing.T) {
	t.Parallel()
	h, n := killedAt(t, workitem.FaultAfterDispatch)
	runs := h.runs()
	if len(runs) != 1 {
		t.Fatalf("after the kill: %d runs, want the one dispatched", len(runs))
	}
	rec := redriveAfterGrace(t, h, n)
	if got := h.runs(); len(got) != 1 {
		t.Fatalf("%d runs after the re-drive, want the first adopted", len(got))
	}
	if len(rec.Attempts) != 1 || rec.Attempts[0].RunID != runs[0].ID {
		t.Fatalf("attempts %+v, want attempt 1 with run %d", rec.Attempts, runs[0].ID)
	}
	if got := runidentity.HashNonce(runs[0].Inputs[wire.DispatchInputNonce]); got != rec.Attempts[0].NonceHash {
		t.Fatalf("the adopted run's nonce hashes to %s, the record holds %s: its exchange would be refused", got, rec.Attempts[0].NonceHash)
	}
}

// TestDispatchRedriveAdoptsNoWritersRun attacks the adoption: serve dies after taking a
// dispatch's guard ref, before dispatching, and a writer dispatches the runner workflow
// themselves with the attempt's inputs (its title the re-drive looks for) and a nonce of
// their own. The re-drive must not take the writer's run for the App's: it dispatches the
// attempt, and records the App's run.
func TestDispatchRedriveAdoptsNoWritersRun(t *testing.T) {
	t.Parallel()
	h, n := killedAt(t, workitem.FaultAfterDispatchRef)
	writerDispatches(t, h, map[string]any{wire.DispatchInputWorkItem: fmt.Sprintf("%s/%s#%d", ghemu.DefaultOrg, ghemu.DefaultRepo, n),
		wire.DispatchInputAttempt: "1", wire.DispatchInputStage: wire.StageImplement, wire.DispatchInputNonce: "mine"})
	writers := h.runs()
	if len(writers) != 1 {
		t.Fatalf("%d runs, want the writer's", len(writers))
	}
	rec := redriveAfterGrace(t, h, n)
	if runs := h.runs(); len(runs) != 2 || len(rec.Attempts) != 1 || rec.Attempts[0].RunID == writers[0].ID {
		t.Fatalf("runs %d, attempts %+v: the writer's run %d was adopted", len(runs), rec.Attempts, writers[0].ID)
	}
}

// TestDispatchRedriveWriterCopiesTheAppsNonce attacks it again: serve dies after
// dispatching, and a writer, who can read the App's run's inputs (its nonce among them),
// copies them into a dispatch of their own, newer than the App's run, with the same
// title. The re-drive adopts the App's run, not the writer's (whose exchange the run-ID
// check refuses anyway).
func TestDispatchRedriveWriterCopiesTheAppsNonce(t *testing.T) {
	t.Parallel()
	h, n := killedAt(t, workitem.FaultAfterDispatch)
	apps := h.runs()
	if len(apps) != 1 {
		t.Fatalf("%d runs, want the App's", len(apps))
	}
	in := map[string]any{}
	for k, v := range apps[0].Inputs {
		in[k] = v
	}
	writerDispatches(t, h, in)
	if rec := redriveAfterGrace(t, h, n); len(rec.Attempts) != 1 || rec.Attempts[0].RunID != apps[0].ID {
		t.Errorf("attempts %+v, want the App's run %d adopted", rec.Attempts, apps[0].ID)
	}
}
