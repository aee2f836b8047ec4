package workitem_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/workitem"
)

// TestRebuild: a restarted serve finds every work item on GitHub, believes only records
// GitHub confirms, and catches up with what happened while it was down.
func TestRebuild(t *testing.T) {
	t.Run("every item comes back, runs and all", func(t *testing.T) {
		e := newEnv(t, "")
		awaiting, running, review := e.awaiting(), e.running(), e.inReview()
		stopped := e.stopped()
		e.restart()
		st, err := e.svc.Rebuild(e.ctx)
		e.must(err)
		if st.Repositories != 1 || st.Items != 4 || st.Untrusted != 0 || e.svc.Index().Len() != 4 {
			t.Fatalf("rebuilt %+v, index %d", st, e.svc.Index().Len())
		}
		for _, it := range []*item{awaiting, running, review, stopped} {
			e.record(it.n) // checks the index against GitHub
		}
		// The run's completion finds its item through the rebuilt index.
		e.must(e.runEvent(e.gh.CompleteRun(repoName, running.run.ID, "failure")))
		e.expect(running.n, ledger.Failed)
	})
	t.Run("an edit made while serve was down voids the approval", func(t *testing.T) {
		e := newEnv(t, "")
		it := e.running()
		e.gh.SetIssueText(repoName, it.n, "Make widgets 4", "Make widgets 4 and remove the tests.")
		e.restart()
		_, err := e.svc.Rebuild(e.ctx)
		e.must(err)
		rec := e.expect(it.n, ledger.AwaitingApproval)
		if rec.ActiveApproval() != nil || !strings.Contains(rec.SpecChange.What, "while Bumper was not listening") ||
			!strings.Contains(e.lastReply(it.n), "no longer holds") {
			t.Fatalf("record %+v, reply %q", rec, e.lastReply(it.n))
		}
	})
	cases := []struct {
		name   string
		reach  func(e *env) *item
		tamper func(e *env, it *item)
		says   string
	}{
		// A /stop undone: an older record written back, the label left at stopped (a
		// stopped item may go back to awaiting approval, but only by a /retry Bumper
		// writes, and that is not put right: TestRebuildPutsRightAnInterruptedWrite).
		{name: "a stopped label under a record that waits for approval", reach: func(e *env) *item { return e.awaiting() },
			tamper: func(e *env, it *item) { e.gh.SetLabels(repoName, it.n, trigger, ledger.Stopped.Label()) }, says: "the record says awaiting-approval"},
		// A label the record's state cannot have come from: not a write Bumper left halfway
		// (TestRebuildPutsRightAnInterruptedWrite).
		{name: "a state label that is not the record's", reach: func(e *env) *item { return e.awaiting() },
			tamper: func(e *env, it *item) { e.gh.SetLabels(repoName, it.n, trigger, ledger.Done.Label()) }, says: "the record says awaiting-approval"},
		// Two labels, neither the record's; three, one of them the record's and one a
		// write could have left: not a write Bumper left halfway.
		{name: "two state labels", reach: func(e *env) *item { return e.awaiting() },
			tamper: func(e *env, it *item) {
				e.gh.SetLabels(repoName, it.n, trigger, ledger.Running.Label(), ledger.Verifying.Label())
			}, says: "state labels are"},
		{name: "three state labels", reach: func(e *env) *item { return e.awaiting() },
			tamper: func(e *env, it *item) {
				e.gh.SetLabels(repoName, it.n, trigger, ledger.AwaitingApproval.Label(), ledger.Running.Label(), ledger.Verifying.Label())
			}, says: "state labels are"},
		// The record's label beside one of an ended state: a /stop written over.
		{name: "a stopped label beside the record's", reach: func(e *env) *item { return e.awaiting() },
			tamper: func(e *env, it *item) {
				e.gh.SetLabels(repoName, it.n, trigger, ledger.AwaitingApproval.Label(), ledger.Stopped.Label())
			}, says: "state labels are"},
		{name: "a state label and no status comment", reach: func(e *env) *item { return &item{n: e.open("Tidy", "Tidy.")} },
			tamper: func(e *env, it *item) { e.gh.SetLabels(repoName, it.n, ledger.Running.Label()) }, says: "has no status comment"},
		{name: "a status comment a person wrote", reach: func(e *env) *item { return &item{n: e.open("Tidy", "Tidy.")} },
			tamper: func(e *env, it *item) {
				e.gh.CommentAs(repoName, it.n, writer, ledger.StatusMarker+"\nstate: running")
				e.gh.SetLabels(repoName, it.n, ledger.Running.Label())
			}, says: "written by @writer"},
		{name: "two status comments", reach: func(e *env) *item { return e.awaiting() },
			tamper: func(e *env, it *item) {
				for _, c := range e.gh.IssueComments(repoName, it.n) {
					if ledger.IsStatusComment(c.Body) {
						_, err := e.gh.Client().CreateComment(e.ctx, repoName, it.n, c.Body)
						e.must(err)
					}
				}
			}, says: "2 status comments"},
		{name: "an older record written back", reach: func(e *env) *item {
			it := e.running()
			for _, c := range e.gh.IssueComments(repoName, it.n) {
				if ledger.IsStatusComment(c.Body) {
					it.kept = c.Body // the running record
				}
			}
			e.comment(it.n, maintainer, "/stop")
			return it
		}, tamper: func(e *env, it *item) {
			e.clock.Advance(time.Hour)
			for _, c := range e.gh.IssueComments(repoName, it.n) {
				if ledger.IsStatusComment(c.Body) {
					e.gh.EditComment(repoName, c.ID, it.kept)
				}
			}
			e.gh.SetLabels(repoName, it.n, trigger, ledger.Running.Label())
		}, says: "an older record was written back"},
		{name: "an approval whose comment is gone", reach: func(e *env) *item { return e.running() },
			tamper: func(e *env, it *item) { e.gh.DeleteComment(repoName, e.record(it.n).Approvals[0].CommentID) },
			says:   "which @writer did not write"},
		{name: "an approval whose comment no longer approves", reach: func(e *env) *item { return e.running() },
			tamper: func(e *env, it *item) {
				e.gh.EditComment(repoName, e.record(it.n).Approvals[0].CommentID, "On second thought, no.")
			}, says: "does not say /approve"},
	}
	for _, tt := range cases {
		t.Run("untrusted: "+tt.name, func(t *testing.T) {
			e := newEnv(t, "")
			it := tt.reach(e)
			tt.tamper(e, it)
			e.restart()
			st, err := e.svc.Rebuild(e.ctx)
			e.must(err)
			if st.Untrusted != 1 {
				t.Fatalf("rebuilt %+v; want the item untrusted", st)
			}
			if tt.name == "two status comments" {
				// The error is written to the first of them; the other stays for a person to remove.
				return
			}
			rec := e.expect(it.n, ledger.Error)
			if !strings.Contains(rec.Reason, tt.says) {
				t.Fatalf("reason %q; want it to say %q", rec.Reason, tt.says)
			}
			// The next start finds the item in error, in a record of its own, and leaves
			// it there for a person.
			writes := e.writes()
			e.restart()
			_, err = e.svc.Rebuild(e.ctx)
			e.must(err)
			if got := e.writesSince(writes); len(got) != 0 {
				t.Fatalf("the next rebuild wrote %v", got)
			}
			e.expect(it.n, ledger.Error)
		})
	}
}

// TestRedrive: a replica that died between taking the dispatch ref and writing the
// record leaves the ref without a run; the dispatch is re-driven once, by one replica,
// after the grace period, and only if no record of it appeared meanwhile.
func TestRedrive(t *testing.T) {
	const grace = time.Minute
	// died approves an item on a replica that dies right after the dispatch ref, and
	// returns the /approve event, which GitHub delivers again since it failed.
	died := func(e *env) (*item, workitem.CommentEvent) {
		it := e.awaiting()
		ev, _ := e.gh.Comment(repoName, it.n, writer, "/approve")
		e.fault = func(p workitem.FaultPoint) error {
			if p == workitem.FaultAfterDispatchRef {
				return errors.New("killed")
			}
			return nil
		}
		if err := e.commentEvent(ev); err == nil {
			t.Fatal("the fault did not stop the handling")
		}
		e.fault = nil
		e.expect(it.n, ledger.AwaitingApproval)
		if len(e.gh.Refs(repoName, workitem.DispatchRefPrefix)) != 1 || len(e.runs()) != 0 {
			t.Fatal("want the dispatch ref taken and no run")
		}
		return it, ev
	}
	// deliver hands ev to svc, as the handler does: a dispatch found taken without its
	// record is scheduled for a re-drive, which handles ev again.
	deliver := func(e *env, svc *workitem.Service, ev workitem.CommentEvent) {
		t.Helper()
		retry := func(ctx context.Context) error { return svc.HandleComment(ctx, e.gh.Client(), ev) }
		err := retry(e.ctx)
		key, ok := workitem.PendingDispatch(err)
		if !ok {
			t.Fatalf("the delivery got %v; want a pending dispatch", err)
		}
		svc.Stale(e.ctx, err)
		svc.RedriveLater(e.ctx, key, workitem.ItemOf(err), grace, retry)
	}

	t.Run("re-driven after the grace period", func(t *testing.T) {
		e := newEnv(t, "")
		it, ev := died(e)
		e.restart()
		deliver(e, e.svc, ev)
		if n, err := e.svc.Redrive(e.ctx); n != 0 || err != nil {
			t.Fatalf("re-drove %d (%v) before the grace period", n, err)
		}
		e.expect(it.n, ledger.AwaitingApproval)
		e.clock.Advance(grace)
		if n, err := e.svc.Redrive(e.ctx); n != 1 || err != nil {
			t.Fatalf("re-drove %d: %v", n, err)
		}
		rec := e.expect(it.n, ledger.Running)
		if len(e.runs()) != 1 || len(rec.Attempts) != 1 || len(e.gh.Refs(repoName, workitem.RedriveRefPrefix)) != 1 {
			t.Fatalf("%d runs, attempts %+v", len(e.runs()), rec.Attempts)
		}
		if n, _ := e.svc.Redrive(e.ctx); n != 0 {
			t.Fatalf("re-drove %d again", n)
		}
	})
	t.Run("two replicas re-drive it once", func(t *testing.T) {
		e := newEnv(t, "")
		it, ev := died(e)
		second, _ := e.gh.Comment(repoName, it.n, maintainer, "/approve")
		a, b := e.replica(), e.replica()
		deliver(e, a, ev)
		deliver(e, b, second)
		e.clock.Advance(grace)
		// b re-drives while a is between its re-drive ref and its dispatch.
		var bDrove int
		var bErr error
		e.gh.Before("Dispatch", func() { bDrove, bErr = b.Redrive(e.ctx) })
		if n, err := a.Redrive(e.ctx); n != 1 || err != nil {
			t.Fatalf("a re-drove %d: %v", n, err)
		}
		if bDrove != 1 || bErr != nil {
			t.Fatalf("b re-drove %d: %v", bDrove, bErr)
		}
		e.svc = a
		e.expect(it.n, ledger.Running)
		if len(e.runs()) != 1 {
			t.Fatalf("%d runs", len(e.runs()))
		}
	})
	t.Run("a record that appears meanwhile stops the re-drive", func(t *testing.T) {
		e := newEnv(t, "")
		it := e.awaiting()
		slow, _ := e.gh.Comment(repoName, it.n, writer, "/approve")
		other, _ := e.gh.Comment(repoName, it.n, maintainer, "/approve")
		b := e.replica()
		// While this replica is between its dispatch ref and its dispatch, the other
		// replica finds the ref taken and schedules a re-drive.
		e.gh.Before("Dispatch", func() { deliver(e, b, other) })
		e.must(e.commentEvent(slow))
		e.expect(it.n, ledger.Running)
		e.clock.Advance(grace)
		if n, err := b.Redrive(e.ctx); n != 1 || err != nil {
			t.Fatalf("re-drove %d: %v", n, err)
		}
		if len(e.runs()) != 1 || len(e.gh.Refs(repoName, workitem.RedriveRefPrefix)) != 0 {
			t.Fatalf("%d runs, redrive refs %v", len(e.runs()), e.gh.Refs(repoName, workitem.RedriveRefPrefix))
		}
		if !strings.Contains(e.lastReply(it.n), "Already approved") {
			t.Fatalf("reply %q", e.lastReply(it.n))
		}
	})
}

// TestRebuildPutsRightAnInterruptedWrite: Bumper writes the status comment, then moves
// the state label (adds the new, removes the old). A replica killed in between (or a
// label write GitHub failed) leaves the label of the state before, alone or beside the
// new one (the week killed a replica between the two); the next start trusts the signed
// record, moves the label to it, and the item goes on. A writer who sets the label back
// gets the same.
func TestRebuildPutsRightAnInterruptedWrite(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reach func(e *env) *item
		left  ledger.State
		both  bool // the new label added, the old not yet removed
		want  ledger.State
	}{
		{"approved, the label still awaiting", func(e *env) *item { return e.running() }, ledger.AwaitingApproval, false, ledger.Running},
		{"verifying, the label still running", func(e *env) *item { return e.verifying() }, ledger.Running, false, ledger.Verifying},
		{"in review, the label still reviewing", func(e *env) *item { return e.inReview() }, ledger.Reviewing, false, ledger.InReview},
		{"in review, the verifying label not yet removed", func(e *env) *item { return e.inReview() }, ledger.Verifying, true, ledger.InReview},
		{"edited after approval, the running label not yet removed", func(e *env) *item { return e.awaiting() }, ledger.Running, true, ledger.AwaitingApproval},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "")
			it := tc.reach(e)
			labels := []string{trigger, tc.left.Label()}
			if tc.both {
				labels = append(labels, tc.want.Label())
			}
			e.gh.SetLabels(repoName, it.n, labels...)
			e.restart()
			st, err := e.svc.Rebuild(e.ctx)
			e.must(err)
			if st.Untrusted != 0 {
				t.Fatalf("rebuilt %+v; want the item trusted", st)
			}
			e.expect(it.n, tc.want) // checks the one state label too
		})
	}
}

// TestRebuildBesideABusyReplica: a restarted replica lists the labelled issues first and
// reads each one's comments after; the other replica, still serving, may move an item in
// between. The listing's labels and text are older than the record then, and must not
// make a healthy item untrusted or undo an edit the other replica took in.
func TestRebuildBesideABusyReplica(t *testing.T) {
	const title, body = "Make widgets 4", "Make widgets 4, and say so in the changelog."
	for _, tc := range []struct {
		name  string
		reach func(e *env) *item
		// meanwhile is what the other replica handles between the listing and the read.
		meanwhile func(e *env, other *workitem.Service, it *item)
		want      ledger.State
	}{
		{"a /retry of a stopped item", func(e *env) *item { return e.stopped() }, func(e *env, other *workitem.Service, it *item) {
			ev, _ := e.gh.Comment(repoName, it.n, maintainer, "/retry")
			e.must(other.HandleComment(e.ctx, e.gh.Client(), ev))
		}, ledger.AwaitingApproval},
		{"an edit of an approved item", func(e *env) *item { return e.running() }, func(e *env, other *workitem.Service, it *item) {
			e.must(other.HandleIssue(e.ctx, e.gh.Client(), e.gh.EditIssue(repoName, it.n, maintainer, title, body)))
		}, ledger.AwaitingApproval},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "")
			it := tc.reach(e)
			other := e.svc
			e.restart()
			e.gh.Before("Comments", func() { tc.meanwhile(e, other, it) })
			st, err := e.svc.Rebuild(e.ctx)
			e.must(err)
			rec := e.expect(it.n, tc.want)
			if st.Untrusted != 0 {
				t.Fatalf("rebuilt %+v: the item was made untrusted by a listing older than its record", st)
			}
			is, err := e.gh.Client().Issue(e.ctx, repoName, it.n)
			e.must(err)
			if rec.SpecRevision != ledger.SpecRevision(is.Title, is.Body) ||
				(rec.SpecChange != nil && strings.Contains(rec.SpecChange.What, "not listening")) {
				t.Fatalf("the record's text is not the issue's, or the rebuild took the old text for an edit: %+v", rec.SpecChange)
			}
		})
	}
}

// TestRebuildLosesARaceToAReplica: an edit made while this replica was down reaches the
// other replica's webhook just as this one's rebuild writes it; the write loses
// (ErrConflict) and is not an error of the start-up: the item is read again, and the
// edit is taken in once.
func TestRebuildLosesARaceToAReplica(t *testing.T) {
	e := newEnv(t, "")
	it := e.running()
	other := e.svc
	e.restart()
	edit := e.gh.EditIssue(repoName, it.n, maintainer, "Make widgets 4", "Make widgets 4 and remove the tests.")
	e.gh.Before("Comment", func() { e.must(other.HandleIssue(e.ctx, e.gh.Client(), edit)) })
	st, err := e.svc.Rebuild(e.ctx)
	e.must(err)
	rec := e.expect(it.n, ledger.AwaitingApproval)
	notices := 0
	for _, c := range e.gh.IssueComments(repoName, it.n) {
		if strings.Contains(c.Body, "no longer holds") {
			notices++
		}
	}
	if st.Untrusted != 0 || rec.ActiveApproval() != nil || notices != 1 || e.gh.Calls("Comment") == 0 {
		t.Fatalf("rebuilt %+v, approval %+v, %d notices of the edit (want 1)", st, rec.ActiveApproval(), notices)
	}
}

// TestRebuildWaitsOutAWriteUnderWay: the other replica has written a /retry's record but
// not yet moved the label when this one reads the issue again; a record seconds old is
// read once more after a moment, and the label has moved by then. An issue deleted since
// the listing is left out, not an error of the start-up.
func TestRebuildWaitsOutAWriteUnderWay(t *testing.T) {
	t.Run("a label not yet moved", func(t *testing.T) {
		e := newEnv(t, "")
		it := e.stopped()
		other := e.svc
		e.restart()
		e.gh.Before("Comments", func() {
			ev, _ := e.gh.Comment(repoName, it.n, maintainer, "/retry")
			e.must(other.HandleComment(e.ctx, e.gh.Client(), ev))
			moved := e.gh.Labels(repoName, it.n)
			e.gh.SetLabels(repoName, it.n, trigger, ledger.Stopped.Label()) // the record written, the label not yet moved
			e.gh.Before("Issue", func() {                                   // the first read again still sees that
				e.gh.Before("Issue", func() { e.gh.SetLabels(repoName, it.n, moved...) })
			})
		})
		st, err := e.svc.Rebuild(e.ctx)
		e.must(err)
		e.expect(it.n, ledger.AwaitingApproval)
		if st.Untrusted != 0 || e.gh.Calls("Issue") != 2 {
			t.Fatalf("rebuilt %+v after %d reads of the issue; want it trusted on the second", st, e.gh.Calls("Issue"))
		}
	})
	t.Run("an issue deleted since the listing", func(t *testing.T) {
		e := newEnv(t, "")
		it := e.awaiting()
		e.gh.SetLabels(repoName, it.n, trigger, ledger.Running.Label())
		e.restart()
		e.gh.FailNext("Issue", fmt.Errorf("GET /repos/%s/issues/%d: 410 Gone: %w", repoName, it.n, workitem.ErrNotFound))
		st, err := e.svc.Rebuild(e.ctx)
		e.must(err)
		if st.Items != 0 || e.svc.Index().Len() != 0 || slices.Contains(e.gh.Labels(repoName, it.n), ledger.Error.Label()) {
			t.Fatalf("rebuilt %+v, index %d, labels %v; want the gone issue left out", st, e.svc.Index().Len(), e.gh.Labels(repoName, it.n))
		}
	})
}

// TestRebuildReReadsDoNotLaunderATamperedLabel: a triager sets a stopped label under a
// record that waits for approval (an undone /stop, as it looks) and leaves it there. The
// re-reads meant for another replica's write under way change nothing: the item is
// untrusted, and the issue was read again at most twice, however the labels are kept.
func TestRebuildReReadsDoNotLaunderATamperedLabel(t *testing.T) {
	e := newEnv(t, "")
	it := e.awaiting()
	e.gh.SetLabels(repoName, it.n, trigger, ledger.Stopped.Label())
	e.restart()
	st, err := e.svc.Rebuild(e.ctx)
	e.must(err)
	if st.Untrusted != 1 || e.gh.Calls("Issue") > 2 {
		t.Fatalf("rebuilt %+v after %d reads of the issue; want it untrusted within two", st, e.gh.Calls("Issue"))
	}
	if rec := e.record(it.n); rec == nil || rec.State != ledger.Error {
		t.Fatalf("record %+v; want the error state", rec)
	}
}
