package workitem_test

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/app/command"
	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/workitem"
)

// TestCommandRefusals gives each command, and the trigger label, where it must not act:
// the bot answers politely (bots get no answer at all), and nothing changes: no record
// write, no label, no run.
func TestCommandRefusals(t *testing.T) {
	awaiting := func(e *env) *item { return e.awaiting() }
	edited := func(e *env) *item {
		it := e.awaiting()
		e.must(e.issueEvent(e.gh.EditIssue(repoName, it.n, maintainer, "Make widgets 4", "The widget count should be 4. Then delete the tests.")))
		return it
	}
	cases := []struct {
		name, policy string
		reach        func(e *env) *item
		act          func(e *env, it *item)
		want         string // the reply; "" for none
	}{
		{name: "a reader's /approve", reach: awaiting, act: say(reader, "/approve"),
			want: "Sorry @reader, only people with write (or higher) permission can give Bumper commands here; your permission on this repository is read."},
		{name: "a triager's /approve", reach: awaiting, act: say(triager, "/approve"), want: "your permission on this repository is triage"},
		{name: "a stranger's /approve", reach: awaiting, act: say("stranger", "/approve"), want: "your permission on this repository is none"},
		{name: "a reader's /stop", reach: func(e *env) *item { return e.running() }, act: say(reader, "/stop"), want: "Sorry @reader"},
		{name: "a reader's /retry", reach: func(e *env) *item { return e.failed() }, act: say(reader, "/retry"), want: "Sorry @reader"},
		{name: "a bot's /approve", reach: awaiting, act: say("helper[bot]", "/approve")},
		{name: "the App's own /approve", reach: awaiting, act: func(e *env, it *item) { e.comment(it.n, e.gh.Bot(), "/approve") }},
		{name: "a writer's /approve where maintainers approve", policy: "version: 1\napprovers:\n  min_permission: maintain\n", reach: awaiting,
			act: say(writer, "/approve"), want: "only people with maintain (or higher) permission"},
		{name: "the requester's own /approve where a second person approves", policy: "version: 1\napprovers:\n  distinct_from_requester: true\n",
			reach: awaiting, act: say(maintainer, "/approve"), want: "the requester cannot approve their own request"},
		{name: "a bare /approve right after an edit", reach: edited, act: say(writer, "/approve"),
			want: "a bare `/approve` could approve text you have not read"},
		{name: "an /approve naming the revision before the edit", reach: func(e *env) *item {
			it := e.awaiting()
			it.kept = e.revisionID(it.n) // what the approver read
			e.must(e.issueEvent(e.gh.EditIssue(repoName, it.n, maintainer, "Make widgets 4", "Then delete the tests.")))
			return it
		}, act: func(e *env, it *item) { e.comment(it.n, writer, "/approve "+it.kept) }, want: "is not the current revision of this issue"},
		{name: "an /approve naming a made-up revision", reach: awaiting, act: say(writer, "/approve 0123456789ab"), want: "`0123456789ab` is not the current revision"},
		{name: "an /approve on the pull request", reach: func(e *env) *item { return e.inReview() },
			act: func(e *env, it *item) { e.comment(it.pr, writer, "/approve") }, want: "Approvals are given on the issue"},
		{name: "an /approve with no work item", reach: func(e *env) *item { return &item{n: e.open("Tidy", "Tidy the README.")} },
			act: say(writer, "/approve"), want: "There is no Bumper work item on this issue. Label it `agent:implement`"},
		{name: "a second /approve", reach: func(e *env) *item { return e.running() }, act: say(maintainer, "/approve"),
			want: "Already approved: attempt 1 is running."},
		{name: "an /approve of a failed item", reach: func(e *env) *item { return e.failed() }, act: say(writer, "/approve"),
			want: "Nothing to approve: the work item is failed."},
		{name: "a /stop of a stopped item", reach: func(e *env) *item { return e.stopped() }, act: say(writer, "/stop"), want: "Nothing to stop"},
		{name: "a /retry of a running item", reach: func(e *env) *item { return e.running() }, act: say(writer, "/retry"),
			want: "Nothing to retry: the work item is running."},
		{name: "a /retry past the attempt bound", policy: oneAttempt, reach: func(e *env) *item { return e.failed() }, act: say(writer, "/retry"),
			want: "Cannot retry: all 1 attempts"},
		{name: "an unknown command", reach: awaiting, act: say(writer, "/merge"), want: command.HelpText},
		{name: "/bumper", reach: awaiting, act: say(writer, "/bumper"), want: command.HelpText},
		{name: "a reader's label", reach: func(e *env) *item { return &item{n: e.open("Tidy", "Tidy the README.")} },
			act:  func(e *env, it *item) { e.label(it.n, reader) },
			want: "Sorry @reader, Bumper only starts work labelled by people with write (or higher) permission; your permission on this repository is read. Nothing was changed."},
		{name: "a bot's label", reach: func(e *env) *item { return &item{n: e.open("Tidy", "Tidy the README.")} },
			act: func(e *env, it *item) { e.label(it.n, "helper[bot]") }},
		{name: "a label on a done item", reach: func(e *env) *item {
			it := e.inReview()
			e.must(e.pullEvent(e.gh.MergePull(repoName, it.pr, maintainer)))
			e.must(e.issueEvent(e.gh.Unlabel(repoName, it.n, trigger, maintainer)))
			return it
		}, act: func(e *env, it *item) { e.label(it.n, maintainer) }, want: "This work item is done; open a new issue"},
		{name: "a label where the configuration does not parse", policy: "version: 1\nbounds:\n  attempts: 0\n",
			reach: func(e *env) *item { return &item{n: e.open("Tidy", "Tidy the README.")} },
			act:   func(e *env, it *item) { e.label(it.n, maintainer) }, want: "Bumper cannot start: the repository's configuration is invalid"},
		{name: "a command where the configuration stopped parsing", reach: func(e *env) *item {
			it := e.awaiting()
			e.gh.Commit(repoName, "main", map[string]string{".github/bumper.yml": "version: 1\napprovers:\n  min_permission: read\n"})
			return it
		}, act: say(writer, "/approve"), want: "Bumper cannot act: the repository's configuration is invalid"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.policy)
			it := tt.reach(e)
			before, writes := e.record(it.n), e.writes()
			where := it.n
			if strings.Contains(tt.name, "pull request") {
				where = it.pr
			}
			replies := len(e.replies(where))
			tt.act(e, it)
			after := e.record(it.n)
			switch {
			case (before == nil) != (after == nil):
				t.Fatalf("work item %v → %v", before, after)
			case before != nil && after.Revision != before.Revision:
				t.Fatalf("record revision %d → %d (%s)", before.Revision, after.Revision, after.Reason)
			}
			wantWrites := map[string]int{}
			if tt.want != "" {
				wantWrites["CreateComment"] = 1
				if got := e.replies(where); len(got) != replies+1 || !strings.Contains(got[len(got)-1], tt.want) {
					t.Fatalf("replies %q; want one more, saying %q", got, tt.want)
				}
			}
			if got := e.writesSince(writes); !maps.Equal(got, wantWrites) {
				t.Fatalf("the App wrote %v to GitHub; want %v", got, wantWrites)
			}
		})
	}
}

// say has who comment body on the item's issue.
func say(who, body string) func(e *env, it *item) {
	return func(e *env, it *item) { e.comment(it.n, who, body) }
}

// TestApprove covers what makes an /approve dispatch, and that it dispatches once.
func TestApprove(t *testing.T) {
	t.Run("an allowed bot approves", func(t *testing.T) {
		e := newEnv(t, "version: 1\nallowed_bots: [\"helper[bot]\"]\n")
		e.gh.SetPermission(repoName, "helper[bot]", "write")
		it := e.awaiting()
		e.comment(it.n, "helper[bot]", "/approve")
		e.expect(it.n, ledger.Running)
	})
	t.Run("an allowed bot still needs the permission", func(t *testing.T) {
		e := newEnv(t, "version: 1\nallowed_bots: [\"helper[bot]\"]\n")
		it := e.awaiting()
		e.comment(it.n, "helper[bot]", "/approve")
		e.expect(it.n, ledger.AwaitingApproval)
		if !strings.Contains(e.lastReply(it.n), "Sorry @helper[bot]") {
			t.Fatalf("reply %q", e.lastReply(it.n))
		}
	})
	t.Run("right after an edit, naming the current revision", func(t *testing.T) {
		for _, form := range []func(e *env, n int) string{
			func(e *env, n int) string { return e.revisionID(n) },
			func(e *env, n int) string { return "`" + strings.ToUpper(e.revisionID(n)) + "`" },
			func(e *env, n int) string { return e.record(n).TextRevision() },
		} {
			e := newEnv(t, "")
			it := e.awaiting()
			e.must(e.issueEvent(e.gh.EditIssue(repoName, it.n, maintainer, "Make widgets 4", "Four, please.")))
			e.comment(it.n, writer, "/approve "+form(e, it.n))
			e.expect(it.n, ledger.Running)
		}
	})
	t.Run("a bare /approve once the window has passed", func(t *testing.T) {
		e := newEnv(t, "")
		it := e.awaiting()
		e.must(e.issueEvent(e.gh.EditIssue(repoName, it.n, maintainer, "Make widgets 4", "Four, please.")))
		e.clock.Advance(workitem.DefaultApproveWindow - time.Second)
		e.comment(it.n, writer, "/approve")
		e.expect(it.n, ledger.AwaitingApproval)
		e.clock.Advance(time.Second)
		e.comment(it.n, writer, "/approve")
		e.expect(it.n, ledger.Running)
	})
	t.Run("an edit the webhook never brought counts as made just now", func(t *testing.T) {
		e := newEnv(t, "")
		it := e.awaiting()
		e.clock.Advance(time.Hour)
		e.gh.SetIssueText(repoName, it.n, "Make widgets 4", "Four. And push to main.")
		e.comment(it.n, writer, "/approve") // the comment's payload carries the new text
		rec := e.expect(it.n, ledger.AwaitingApproval)
		if rec.SpecChange == nil || rec.SpecChange.By != "" || rec.SpecRevision != ledger.SpecRevision("Make widgets 4", "Four. And push to main.") {
			t.Fatalf("spec change %+v", rec.SpecChange)
		}
		if !strings.Contains(e.lastReply(it.n), "an edit Bumper did not see") {
			t.Fatalf("reply %q", e.lastReply(it.n))
		}
	})
	t.Run("two /approve of one revision dispatch once", func(t *testing.T) {
		e := newEnv(t, "")
		it := e.running()
		e.comment(it.n, maintainer, "/approve")
		if len(e.runs()) != 1 || len(e.record(it.n).Approvals) != 1 {
			t.Fatalf("%d runs, approvals %+v", len(e.runs()), e.record(it.n).Approvals)
		}
	})
	t.Run("a redelivered /approve changes nothing, after a restart too", func(t *testing.T) {
		e := newEnv(t, "")
		it := e.awaiting()
		ev, _ := e.gh.Comment(repoName, it.n, writer, "/approve")
		e.must(e.commentEvent(ev))
		rev := e.expect(it.n, ledger.Running).Revision
		e.must(e.commentEvent(ev))
		e.restart()
		e.must(e.commentEvent(ev))
		if got := e.record(it.n).Revision; got != rev || len(e.runs()) != 1 || len(e.replies(it.n)) != 0 {
			t.Fatalf("revision %d → %d, %d runs, replies %q", rev, got, len(e.runs()), e.replies(it.n))
		}
	})
	t.Run("two replicas approving at once dispatch once", func(t *testing.T) {
		e := newEnv(t, "")
		it := e.awaiting()
		other := e.replica()
		first, _ := e.gh.Comment(repoName, it.n, writer, "/approve")
		second, _ := e.gh.Comment(repoName, it.n, maintainer, "/approve")
		var otherErr error
		// The other replica handles its /approve while this one is about to claim the
		// dispatch: both read the item awaiting approval.
		e.gh.Before("CreateRef", func() { otherErr = other.HandleComment(e.ctx, e.gh.Client(), second) })
		err := e.commentEvent(first)
		e.must(otherErr)
		key, pending := workitem.PendingDispatch(err)
		if !errors.Is(err, workitem.ErrDispatchedElsewhere) || !pending || workitem.ItemOf(err) != repoName+"#1" {
			t.Fatalf("the replica that lost the dispatch ref got %v (pending %q)", err, key)
		}
		e.svc.Stale(e.ctx, err)
		rec := e.expect(it.n, ledger.Running)
		if len(e.runs()) != 1 || len(rec.Attempts) != 1 || rec.Approvals[0].By != maintainer {
			t.Fatalf("%d runs, record %+v", len(e.runs()), rec)
		}
		if got := e.obs.seen(); !slices.Equal(got, []string{"implement/" + workitem.DispatchMade, "implement/" + workitem.DispatchElsewhere}) {
			t.Fatalf("observed %v", got)
		}
	})
}
