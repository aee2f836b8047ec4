package workitem_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/app/workitem"
)

// transition is one move the service makes, as GitHub shows it: the state label (and
// record) before and after one event. via names the state a handling passes through
// without writing it (a relabel is requested, then awaiting approval).
type transition struct {
	name     string
	policy   string
	from     ledger.State // "" for an issue with no work item
	via, to  ledger.State
	reach    func(e *env) *item
	act      func(e *env, it *item)
	check    func(e *env, it *item, rec *ledger.Record)
	silently bool // no reply expected (most moves a person did not ask for say so; these need not)
}

// Policies the rows use.
const (
	reviewerOff = "version: 1\nreviewer: false\n"
	oneFix      = "version: 1\nbounds:\n  fix_rounds: 1\n"
	oneAttempt  = "version: 1\nbounds:\n  attempts: 1\n"
)

func transitions() []transition {
	fresh := func(e *env) *item { return &item{n: e.open("Make widgets 4", "The widget count should be 4.")} }
	stop := func(e *env, it *item) { e.comment(it.n, maintainer, "/stop") }
	merge := func(e *env, it *item) { e.must(e.pullEvent(e.gh.MergePull(repoName, it.pr, maintainer))) }
	edit := func(e *env, it *item) {
		e.must(e.issueEvent(e.gh.EditIssue(repoName, it.n, maintainer, "Make widgets 5", "The widget count should be 5.")))
	}
	runFails := func(e *env, it *item) { e.must(e.runEvent(e.gh.CompleteRun(repoName, it.run.ID, "failure"))) }
	progress := func(state string) func(e *env, it *item) {
		return func(e *env, it *item) {
			if it.pr == 0 && state != "verifying" {
				e.pushPull(it)
			}
			e.must(e.svc.Progress(e.ctx, it.claims, wire.Progress{State: state, PullRequest: it.pr, HeadCommit: it.head}))
		}
	}
	// withPull has the implement run report its pull request with its evidence, so the
	// work item knows it before the run hands it over.
	withPull := func(reach func(e *env) *item) func(e *env) *item {
		return func(e *env) *item {
			it := reach(e)
			e.pushPull(it)
			e.must(e.svc.Evidence(e.ctx, it.claims, wire.Evidence{Digest: ledger.ContentRevision([]byte("evidence")), PullRequest: it.pr, HeadCommit: it.head}))
			return it
		}
	}
	exchangeVoids := func(change func(e *env, it *item)) func(e *env, it *item) {
		return func(e *env, it *item) {
			change(e, it)
			tokens := len(e.gh.Tokens())
			_, _, err := e.exchange(it.run)
			var ref *workitem.Refusal
			if !errors.As(err, &ref) || ref.Kind() != workitem.RefusalApproval {
				e.t.Fatalf("exchange: %v; want a refusal of kind %s", err, workitem.RefusalApproval)
			}
			if len(e.gh.Tokens()) != tokens {
				e.t.Fatal("a token was minted for a void approval")
			}
		}
	}
	voided := func(e *env, it *item, rec *ledger.Record) {
		if rec.ActiveApproval() != nil || rec.Approvals[0].Voided == "" {
			e.t.Fatalf("the approval still holds: %+v", rec.Approvals)
		}
		if a := rec.Attempts[len(rec.Attempts)-1]; a.Outcome != "voided" {
			e.t.Fatalf("the run's attempt ended %q, want voided", a.Outcome)
		}
		if !strings.Contains(e.lastReply(it.n), "no longer holds") {
			e.t.Fatalf("the bot did not say the approval no longer holds: %q", e.lastReply(it.n))
		}
	}
	reason := func(want ...string) func(e *env, it *item, rec *ledger.Record) {
		return func(e *env, it *item, rec *ledger.Record) {
			for _, w := range want {
				if !strings.Contains(rec.Reason, w) {
					e.t.Fatalf("reason %q, want it to say %q", rec.Reason, w)
				}
			}
		}
	}
	verdictCheck := func(conclusion string) func(e *env, it *item, rec *ledger.Record) {
		return func(e *env, it *item, rec *ledger.Record) {
			checks := e.gh.CheckRunsOn(repoName, it.head)
			i := slices.IndexFunc(checks, func(c workitem.CheckRun) bool { return c.Name == workitem.CheckVerdict })
			if i < 0 || checks[i].Conclusion != conclusion || checks[i].AppID != e.gh.AppID() {
				e.t.Fatalf("check runs on the head %+v, want %s %s by the App", checks, workitem.CheckVerdict, conclusion)
			}
			if rec.Verdict == nil || rec.Verdict.Passed != (conclusion == "success") || rec.Verdict.CheckRunID != checks[i].ID {
				e.t.Fatalf("recorded verdict %+v", rec.Verdict)
			}
		}
	}
	untrusted := func(e *env, it *item) {
		// Whoever holds an installation token can edit the App's comment; a record
		// changed by anyone but serve is not believed, whatever it says.
		rec := e.record(it.n)
		for _, c := range e.gh.IssueComments(repoName, it.n) {
			if ledger.IsStatusComment(c.Body) {
				forged := strings.Replace(c.Body, `"requester": "`+rec.Requester, `"requester": "mallory`, 1)
				if forged == c.Body {
					e.t.Fatal("the record names no requester to change")
				}
				e.gh.EditComment(repoName, c.ID, forged)
			}
		}
		e.restart()
		e.comment(it.n, maintainer, "/status")
	}
	rows := []transition{
		{name: "a writer's label asks for approval", from: "", via: ledger.Requested, to: ledger.AwaitingApproval, reach: fresh,
			act: func(e *env, it *item) { e.label(it.n, maintainer) },
			check: func(e *env, it *item, rec *ledger.Record) {
				if rec.Requester != maintainer || rec.BaseBranch != "main" || rec.BaseCommit != e.gh.Head(repoName, "main") ||
					rec.SpecRevision != ledger.SpecRevision("Make widgets 4", "The widget count should be 4.") || rec.Revision != 1 {
					e.t.Fatalf("record %+v", rec)
				}
				if rec.Protection != "" || len(e.runs()) != 0 || len(rec.Attempts) != 0 {
					e.t.Fatalf("protection notice %q, %d runs, %d attempts", rec.Protection, len(e.runs()), len(rec.Attempts))
				}
			}, silently: true},
		{name: "a writer's label dispatches a plan run", policy: planPolicy, from: "", via: ledger.Requested, to: ledger.Planning, reach: fresh,
			act: func(e *env, it *item) { e.label(it.n, maintainer) },
			check: func(e *env, it *item, rec *ledger.Record) {
				if got := e.stages(); !slices.Equal(got, []string{workitem.StagePlan}) || len(rec.Attempts) != 1 || rec.Attempts[0].Stage != workitem.StagePlan {
					e.t.Fatalf("runs %v, attempts %+v", got, rec.Attempts)
				}
				if len(rec.Approvals) != 0 {
					e.t.Fatalf("a plan run needs no approval, but the record has %+v", rec.Approvals)
				}
			}, silently: true},
		{name: "the plan run posts its plan", policy: planPolicy, from: ledger.Planning, to: ledger.AwaitingApproval,
			reach: func(e *env) *item { it := e.planning(); it.claims = e.grant(it.run); return it },
			act: func(e *env, it *item) {
				e.must(e.svc.Progress(e.ctx, it.claims, wire.Progress{State: "awaiting-approval", Plan: "1. Echo 4."}))
			},
			check: func(e *env, it *item, rec *ledger.Record) {
				if rec.PlanRevision != ledger.ContentRevision([]byte("1. Echo 4.")) || rec.PlanComment == 0 {
					e.t.Fatalf("plan revision %q comment %d", rec.PlanRevision, rec.PlanComment)
				}
				c, err := e.gh.Client().Comment(e.ctx, repoName, rec.PlanComment)
				if err != nil || c.Author != e.gh.Bot() || !strings.Contains(c.Body, "1. Echo 4.") || !strings.Contains(c.Body, e.revisionID(it.n)) {
					e.t.Fatalf("plan comment %+v, %v", c, err)
				}
				if toks := e.gh.Tokens(); len(toks) != 1 || len(toks[0].Permissions) != 1 || toks[0].Permissions["contents"] != "read" {
					e.t.Fatalf("the plan run's token %+v, want contents:read only", toks)
				}
			}, silently: true},
		{name: "the plan run ends without a plan", policy: planPolicy, from: ledger.Planning, to: ledger.Failed,
			reach: func(e *env) *item { return e.planning() },
			act:   func(e *env, it *item) { e.must(e.runEvent(e.gh.CompleteRun(repoName, it.run.ID, "success"))) },
			check: reason("without posting a plan"), silently: true},
		{name: "/stop while planning", policy: planPolicy, from: ledger.Planning, to: ledger.Stopped,
			reach: func(e *env) *item { return e.planning() }, act: stop, check: reason("@maintainer asked to stop"), silently: true},

		{name: "/approve dispatches the implement run", from: ledger.AwaitingApproval, to: ledger.Running,
			reach: func(e *env) *item { return e.awaiting() },
			act:   func(e *env, it *item) { it.approval = e.comment(it.n, writer, "/approve") },
			check: func(e *env, it *item, rec *ledger.Record) {
				runs := e.runs()
				if len(runs) != 1 {
					e.t.Fatalf("%d runs, want 1", len(runs))
				}
				in := runs[0].Inputs
				if in[wire.DispatchInputWorkItem] != repoName+"#1" || in[wire.DispatchInputAttempt] != "1" ||
					in[wire.DispatchInputStage] != workitem.StageImplement || len(in[wire.DispatchInputNonce]) != 64 || runs[0].Ref != "main" {
					e.t.Fatalf("run %+v", runs[0])
				}
				a := rec.ActiveApproval()
				if a == nil || a.By != writer || a.CommentID != it.approval || a.Revision != rec.ApprovalRevision() {
					e.t.Fatalf("approval %+v", rec.Approvals)
				}
				att := rec.Attempts[0]
				if att.RunID != runs[0].ID || att.Revision != a.Revision || att.NonceHash != ledger.ContentRevision([]byte(in[wire.DispatchInputNonce])) || att.NonceUsed {
					e.t.Fatalf("attempt %+v", att)
				}
				key := workitem.DispatchKey(it.n, a.Revision, 1)
				if sha, ok := e.gh.Ref(repoName, workitem.DispatchRefPrefix+key); !ok || sha != rec.BaseCommit {
					e.t.Fatalf("dispatch ref of %s: %q, %v", key, sha, ok)
				}
				if got := e.obs.seen(); !slices.Equal(got, []string{"implement/" + workitem.DispatchMade}) {
					e.t.Fatalf("observed %v", got)
				}
			}, silently: true},
		{name: "/approve of a plan dispatches the implement run bound to it", policy: planPolicy, from: ledger.AwaitingApproval, to: ledger.Running,
			reach: func(e *env) *item { return e.planned() },
			act:   func(e *env, it *item) { e.comment(it.n, writer, "/approve "+e.revisionID(it.n)) },
			check: func(e *env, it *item, rec *ledger.Record) {
				if got := e.stages(); !slices.Equal(got, []string{workitem.StagePlan, workitem.StageImplement}) {
					e.t.Fatalf("runs %v", got)
				}
				if rec.PlanRevision == "" || rec.Attempts[1].Revision != rec.ApprovalRevision() {
					e.t.Fatalf("the run is not bound to the plan: %+v", rec)
				}
			}, silently: true},
		{name: "/approve with every attempt used fails the item", policy: oneAttempt, from: ledger.AwaitingApproval, to: ledger.Failed,
			reach: func(e *env) *item {
				it := e.running()
				edit(e, it)
				e.expect(it.n, ledger.AwaitingApproval)
				return it
			},
			act: func(e *env, it *item) { e.comment(it.n, writer, "/approve "+e.revisionID(it.n)) },
			check: func(e *env, it *item, rec *ledger.Record) {
				reason("all 1 attempts are used")(e, it, rec)
				if len(e.runs()) != 1 {
					e.t.Fatalf("%d runs, want the first only", len(e.runs()))
				}
			}, silently: true},
		{name: "a refused dispatch fails the item", from: ledger.AwaitingApproval, via: ledger.Running, to: ledger.Failed,
			reach: func(e *env) *item { return e.awaiting() },
			act: func(e *env, it *item) {
				e.gh.FailNext("Dispatch", errors.New("GitHub answered 422: Workflow does not have 'workflow_dispatch' trigger"))
				e.comment(it.n, writer, "/approve")
			},
			check: func(e *env, it *item, rec *ledger.Record) {
				reason("the dispatch of bumper-run.yml failed")(e, it, rec)
				if len(rec.Attempts) != 1 || rec.Attempts[0].Outcome != "dispatch-failed" {
					e.t.Fatalf("attempts %+v", rec.Attempts)
				}
				if got := e.obs.seen(); !slices.Equal(got, []string{"implement/" + workitem.DispatchFailed}) {
					e.t.Fatalf("observed %v", got)
				}
			}, silently: true},
		{name: "removing the label stops the item", from: ledger.AwaitingApproval, to: ledger.Stopped,
			reach: func(e *env) *item { return e.awaiting() },
			act:   func(e *env, it *item) { e.must(e.issueEvent(e.gh.Unlabel(repoName, it.n, trigger, maintainer))) },
			check: reason("@maintainer removed the agent:implement label"), silently: true},
		{name: "closing the issue stops the item", from: ledger.AwaitingApproval, to: ledger.Stopped,
			reach: func(e *env) *item { return e.awaiting() },
			act:   func(e *env, it *item) { e.must(e.issueEvent(e.gh.CloseIssue(repoName, it.n, reader))) },
			check: reason("@reader closed the issue"), silently: true},
		{name: "/stop while awaiting approval", from: ledger.AwaitingApproval, to: ledger.Stopped,
			reach: func(e *env) *item { return e.awaiting() }, act: stop, check: reason("asked to stop"), silently: true},

		{name: "the implement run verifies", from: ledger.Running, to: ledger.Verifying,
			reach: func(e *env) *item { return e.granted() }, act: progress("verifying"), silently: true},
		{name: "the implement run hands its pull request to a review run", from: ledger.Running, to: ledger.Reviewing,
			reach: func(e *env) *item { return e.granted() }, act: progress("reviewing"),
			check: func(e *env, it *item, rec *ledger.Record) {
				if rec.PullRequest != it.pr || rec.PullHead != it.head || rec.WorkBranch != workitem.WorkBranchName(it.n, 1) {
					e.t.Fatalf("pull request #%d %s@%s", rec.PullRequest, rec.WorkBranch, rec.PullHead)
				}
				if got := e.stages(); !slices.Equal(got, []string{workitem.StageImplement, workitem.StageReview}) || rec.Attempts[1].Stage != workitem.StageReview {
					e.t.Fatalf("runs %v, attempts %+v", got, rec.Attempts)
				}
			}, silently: true},
		{name: "with the reviewer off the implement run hands its pull request to humans", policy: reviewerOff, from: ledger.Running, to: ledger.InReview,
			reach: func(e *env) *item { return e.granted() }, act: progress("in-review"),
			check: func(e *env, it *item, rec *ledger.Record) {
				if rec.PullRequest != it.pr || len(e.runs()) != 1 {
					e.t.Fatalf("pull request #%d, %d runs", rec.PullRequest, len(e.runs()))
				}
			}, silently: true},
		{name: "an edit voids the approval of a running item", from: ledger.Running, to: ledger.AwaitingApproval,
			reach: func(e *env) *item { return e.running() }, act: edit,
			check: func(e *env, it *item, rec *ledger.Record) {
				voided(e, it, rec)
				if rec.SpecChange == nil || rec.SpecChange.By != maintainer || rec.SpecChange.What != "title and body" {
					e.t.Fatalf("spec change %+v", rec.SpecChange)
				}
			}},
		{name: "a moved base voids the approval at the token exchange", from: ledger.Running, to: ledger.AwaitingApproval,
			reach: func(e *env) *item { return e.running() },
			act:   exchangeVoids(func(e *env, _ *item) { e.gh.Commit(repoName, "main", map[string]string{"NEWS": "moved\n"}) }),
			check: func(e *env, it *item, rec *ledger.Record) {
				voided(e, it, rec)
				if rec.BaseCommit != e.gh.Head(repoName, "main") {
					e.t.Fatalf("base %s, want the new head", rec.BaseCommit)
				}
			}},
		{name: "an edit Bumper never heard of voids the approval at the token exchange", from: ledger.Running, to: ledger.AwaitingApproval,
			reach: func(e *env) *item { return e.running() },
			act: exchangeVoids(func(e *env, it *item) {
				e.gh.SetIssueText(repoName, it.n, "Make widgets 4", "The widget count should be 4. Also delete the tests.")
			}),
			check: voided},
		{name: "a deleted approval comment voids the approval at the token exchange", from: ledger.Running, to: ledger.AwaitingApproval,
			reach: func(e *env) *item { return e.running() },
			act: exchangeVoids(func(e *env, it *item) {
				e.gh.DeleteComment(repoName, e.record(it.n).Approvals[0].CommentID)
			}),
			check: voided},
		{name: "a failed implement run fails the item", from: ledger.Running, to: ledger.Failed,
			reach: func(e *env) *item { return e.granted() },
			act: func(e *env, it *item) {
				e.must(e.svc.Evidence(e.ctx, it.claims, wire.Evidence{Digest: ledger.ContentRevision([]byte("evidence")),
					Outcome: "failure", Reason: "the tests\nfailed"}))
				e.must(e.runEvent(e.gh.StartRun(repoName, it.run.ID, "runner-7")))
				runFails(e, it)
			},
			check: func(e *env, it *item, rec *ledger.Record) {
				reason("attempt 1 ended (failure): the runner says `the tests failed`", "1 of 3 attempts used", "/retry")(e, it, rec)
				if a := rec.Attempts[0]; a.Outcome != "failure" || a.Runner != "runner-7" || a.EndedAt.IsZero() {
					e.t.Fatalf("attempt %+v", a)
				}
			}, silently: true},
		{name: "/stop while running", from: ledger.Running, to: ledger.Stopped,
			reach: func(e *env) *item { return e.running() }, act: stop,
			check: func(e *env, it *item, rec *ledger.Record) {
				if rec.ActiveApproval() != nil {
					e.t.Fatal("a stopped item keeps its approval")
				}
			}, silently: true},
		{name: "a merge while running ends the item", from: ledger.Running, to: ledger.Done,
			reach: withPull(func(e *env) *item { return e.granted() }), act: merge, check: reason("was merged"), silently: true},
		{name: "a person's push stops the fix round", from: ledger.Running, to: ledger.InReview,
			reach: func(e *env) *item { return e.fixing() },
			act: func(e *env, it *item) {
				_, evs := e.gh.Push(repoName, workitem.WorkBranchName(it.n, 1), writer, map[string]string{"widgets.sh": "echo 4 # mine\n"})
				for _, ev := range evs {
					e.must(e.pullEvent(ev))
				}
			},
			check: func(e *env, it *item, rec *ledger.Record) {
				if rec.HumanPush == nil || rec.HumanPush.By != writer {
					e.t.Fatalf("human push %+v", rec.HumanPush)
				}
				if !strings.Contains(e.lastReply(it.pr), "is yours now") {
					e.t.Fatalf("no word on the pull request: %q", e.replies(it.pr))
				}
			}, silently: true}, // the word is on the pull request
		{name: "a revise round ending without a new head hands the pull request back", from: ledger.Running, to: ledger.InReview,
			reach: func(e *env) *item { return e.revising() }, act: runFails,
			check: func(e *env, it *item, rec *ledger.Record) {
				reason("revise round (attempt 3) ended (failure) without a new head")(e, it, rec)
				if !strings.Contains(e.lastPRReply(it), "ended (failure) without a new commit") {
					e.t.Fatalf("no word on the pull request: %q", e.prReplies(it))
				}
			}, silently: true},
		{name: "a person's push stops the update round", from: ledger.Running, to: ledger.InReview,
			reach: func(e *env) *item {
				it := e.inReview()
				e.must(e.pushEvent(e.conflictOnMain()))
				it.run = e.lastRun()
				return it
			},
			act:   func(e *env, it *item) { e.humanPush(it) },
			check: reason("during update round 3; the round is stopped"), silently: true},
		{name: "a fix round ending without a new head hands the pull request back", from: ledger.Running, to: ledger.InReview,
			reach: func(e *env) *item { return e.fixing() },
			act: func(e *env, it *item) {
				e.gh.CheckResult(repoName, workitem.CheckRun{Name: ciCheck, HeadSHA: it.head, Conclusion: "success"}, ciApp) // a flake: CI passes on a re-run
				runFails(e, it)
			},
			check: reason("fix round (attempt 3) ended (failure) without a new head"), silently: true},
		{name: "a fix round ending with CI still failing starts the next round", from: ledger.Running, via: ledger.InReview, to: ledger.Running,
			reach: func(e *env) *item { return e.fixing() }, act: runFails,
			check: func(e *env, it *item, rec *ledger.Record) {
				if got := e.stages(); len(got) != 4 || got[3] != workitem.StageFix || rec.AttemptsOfStage(workitem.StageFix) != 2 {
					e.t.Fatalf("runs %v", got)
				}
			}, silently: true},
		{name: "a fix round ending with the rounds used up fails the item", policy: oneFix, from: ledger.Running, via: ledger.InReview, to: ledger.Failed,
			reach: func(e *env) *item { return e.fixing() }, act: runFails,
			check: reason("fix rounds exhausted", "after 1 fix round(s)"), silently: true},

		{name: "the verified change goes to a review run", from: ledger.Verifying, to: ledger.Reviewing,
			reach: func(e *env) *item { return e.verifying() }, act: progress("reviewing"), silently: true},
		{name: "with the reviewer off the verified change goes to humans", policy: reviewerOff, from: ledger.Verifying, to: ledger.InReview,
			reach: func(e *env) *item { return e.verifying() }, act: progress("in-review"), silently: true},
		{name: "a refused review dispatch hands the pull request to humans with a failing verdict", from: ledger.Verifying, via: ledger.Reviewing, to: ledger.InReview,
			reach: func(e *env) *item { return e.verifying() },
			act: func(e *env, it *item) {
				e.gh.FailNext("Dispatch", errors.New("GitHub answered 500"))
				progress("reviewing")(e, it)
			},
			check: func(e *env, it *item, rec *ledger.Record) {
				verdictCheck("failure")(e, it, rec)
				reason("no valid verdict")(e, it, rec)
			}, silently: true},
		{name: "an edit voids the approval of a verifying item", from: ledger.Verifying, to: ledger.AwaitingApproval,
			reach: func(e *env) *item { return e.verifying() }, act: edit, check: voided},
		{name: "a failed run fails a verifying item", from: ledger.Verifying, to: ledger.Failed,
			reach: func(e *env) *item { return e.verifying() }, act: runFails, check: reason("before a pull request was ready"), silently: true},
		{name: "/stop while verifying", from: ledger.Verifying, to: ledger.Stopped,
			reach: func(e *env) *item { return e.verifying() }, act: stop, silently: true},
		{name: "a merge while verifying ends the item", from: ledger.Verifying, to: ledger.Done,
			reach: withPull(func(e *env) *item { return e.verifying() }), act: merge, silently: true},

		{name: "a passing verdict hands the pull request to humans", from: ledger.Reviewing, to: ledger.InReview,
			reach: func(e *env) *item { it := e.reviewing(); it.claims = e.grant(it.run); return it },
			act: func(e *env, it *item) {
				e.must(e.svc.Verdict(e.ctx, it.claims, wire.Verdict{Document: approveVerdict, HeadCommit: it.head}))
			},
			check: func(e *env, it *item, rec *ledger.Record) {
				verdictCheck("success")(e, it, rec)
				rv := e.gh.ReviewsOf(repoName, it.pr)
				if len(rv) != 1 || rv[0].State != "COMMENTED" || rv[0].CommitID != it.head || rec.Verdict.ReviewID != rv[0].ID {
					e.t.Fatalf("reviews %+v", rv)
				}
			}, silently: true},
		{name: "a review run ending without a verdict fails the verdict check", from: ledger.Reviewing, to: ledger.InReview,
			reach: func(e *env) *item { return e.reviewing() }, act: runFails,
			check: func(e *env, it *item, rec *ledger.Record) {
				verdictCheck("failure")(e, it, rec)
				if len(e.gh.ReviewsOf(repoName, it.pr)) != 0 {
					e.t.Fatal("a review was posted without a verdict")
				}
			}, silently: true},
		{name: "reviews that came during the review start the next round", from: ledger.Reviewing, via: ledger.InReview, to: ledger.Running,
			reach: func(e *env) *item {
				it := reviewGranted(e)
				e.review(it, writer, "CHANGES_REQUESTED", askRename)
				e.review(it, maintainer, "COMMENTED", askPrintf)
				return it
			},
			act: func(e *env, it *item) { e.passes(it) },
			check: func(e *env, it *item, rec *ledger.Record) {
				if a := rec.Attempts[len(rec.Attempts)-1]; a.Stage != workitem.StageRevise || len(a.Inputs) != 2 || len(rec.Pending) != 0 {
					e.t.Fatalf("attempt %+v, pending %+v", a, rec.Pending)
				}
			}, silently: true},
		{name: "a verdict with findings starts a revise round where the repository asks for it", policy: onFindings,
			from: ledger.Reviewing, via: ledger.InReview, to: ledger.Running,
			reach: func(e *env) *item { return reviewGranted(e) },
			act: func(e *env, it *item) {
				e.must(e.svc.Verdict(e.ctx, it.claims, wire.Verdict{HeadCommit: it.head, Document: verdictDoc("request_changes", 0.9,
					`{"severity":"major","message":"the count is still 3"}`)}))
			},
			check: func(e *env, it *item, rec *ledger.Record) {
				if a := rec.Attempts[len(rec.Attempts)-1]; a.Stage != workitem.StageRevise || a.Inputs[0].Kind != wire.ReviewKindFinding {
					e.t.Fatalf("attempt %+v", a)
				}
			}, silently: true},
		{name: "a merge during the review ends the item", from: ledger.Reviewing, to: ledger.Done,
			reach: func(e *env) *item { return e.reviewing() }, act: merge, silently: true},
		{name: "/stop on the pull request during the review", from: ledger.Reviewing, to: ledger.Stopped,
			reach: func(e *env) *item { return e.reviewing() },
			act:   func(e *env, it *item) { e.comment(it.pr, maintainer, "/stop") }, silently: true},
		{name: "a verdict on a head CI failed starts a fix round", from: ledger.Reviewing, via: ledger.InReview, to: ledger.Running,
			reach: func(e *env) *item {
				it := e.reviewing()
				it.claims = e.grant(it.run)
				e.must(e.checkEvent(e.ciFails(it))) // while reviewing: waits for the verdict
				e.expect(it.n, ledger.Reviewing)
				return it
			},
			act: func(e *env, it *item) {
				e.must(e.svc.Verdict(e.ctx, it.claims, wire.Verdict{Document: approveVerdict, HeadCommit: it.head}))
			},
			check: func(e *env, it *item, rec *ledger.Record) {
				if got := e.stages(); got[len(got)-1] != workitem.StageFix {
					e.t.Fatalf("runs %v", got)
				}
			}, silently: true},
		{name: "a verdict on a head CI failed with the fix rounds used up fails the item", policy: oneFix, from: ledger.Reviewing, via: ledger.InReview, to: ledger.Failed,
			reach: func(e *env) *item {
				it := e.fixing()
				e.fixed(it)
				e.must(e.checkEvent(e.ciFails(it)))
				return it
			},
			act: func(e *env, it *item) {
				e.must(e.svc.Verdict(e.ctx, it.claims, wire.Verdict{Document: approveVerdict, HeadCommit: it.head}))
			},
			check: reason("fix rounds exhausted"), silently: true},
		{name: "a record full of runs fails the review's dispatch", from: ledger.Verifying, via: ledger.Reviewing, to: ledger.Failed,
			reach: func(e *env) *item {
				it := e.verifying()
				e.forge(it.n, func(rec *ledger.Record) {
					// The record holds at most ledger.MaxAttempts runs: the current one is the last.
					cur := rec.Attempts[0]
					rec.Attempts = nil
					for i := 1; i < ledger.MaxAttempts; i++ {
						rec.Attempts = append(rec.Attempts, ledger.Attempt{Number: i, Stage: workitem.StageFix, Revision: cur.Revision, Outcome: "failure"})
					}
					cur.Number = ledger.MaxAttempts
					rec.Attempts = append(rec.Attempts, cur)
				})
				it.claims.Attempt = ledger.MaxAttempts
				return it
			},
			act:   progress("reviewing"),
			check: reason("has had the 40 runs its record can hold"), silently: true},

		{name: "a failing required check starts a fix round", from: ledger.InReview, to: ledger.Running,
			reach: func(e *env) *item { return e.inReview() },
			act:   func(e *env, it *item) { e.must(e.checkEvent(e.ciFails(it))) },
			check: func(e *env, it *item, rec *ledger.Record) {
				a := rec.Attempts[len(rec.Attempts)-1]
				if a.Stage != workitem.StageFix || !slices.Equal(a.FixChecks, []string{ciCheck}) || a.Revision != rec.ApprovalRevision() {
					e.t.Fatalf("fix attempt %+v", a)
				}
				reason("ci/test failed", "fix round 1 of 2")(e, it, rec)
			}, silently: true},
		{name: "a writer's review requesting changes starts a revise round", from: ledger.InReview, to: ledger.Running,
			reach: func(e *env) *item { return e.inReview() },
			act:   func(e *env, it *item) { e.review(it, writer, "CHANGES_REQUESTED", askRename, inline()...) },
			check: func(e *env, it *item, rec *ledger.Record) {
				a := rec.Attempts[len(rec.Attempts)-1]
				if a.Stage != workitem.StageRevise || len(a.Inputs) != 1 || a.Revision != rec.ApprovalRevision() || e.lastRun().Inputs[wire.DispatchInputStage] != workitem.StageRevise {
					e.t.Fatalf("revise attempt %+v", a)
				}
				reason("revise round 1 of 3", "answering 3 comment(s)")(e, it, rec)
				if !strings.Contains(e.lastPRReply(it), "Revise round 1 of 3") {
					e.t.Fatalf("no word on the pull request: %q", e.prReplies(it))
				}
			}, silently: true}, // the word is on the pull request
		{name: "a conflict with the moved base starts an update round", from: ledger.InReview, to: ledger.Running,
			reach: func(e *env) *item { return e.inReview() },
			act:   func(e *env, it *item) { e.must(e.pushEvent(e.conflictOnMain())) },
			check: func(e *env, it *item, rec *ledger.Record) {
				if a := rec.Attempts[len(rec.Attempts)-1]; a.Stage != workitem.StageUpdate || a.UpdateTo != e.gh.Head(repoName, "main") {
					e.t.Fatalf("update attempt %+v", a)
				}
				reason("conflicts with it", "update round 1 of 2")(e, it, rec)
			}, silently: true},
		{name: "GitHub's update of the branch that changed the diff hands it to a review run", from: ledger.InReview, to: ledger.Reviewing,
			reach: func(e *env) *item {
				e.gh.RequireUpToDate(repoName, "main", true)
				it := e.inReview()
				e.must(e.pushEvent(e.elsewhereOnMain()))
				e.gh.SetPullFiles(repoName, it.pr, workitem.PullFile{Path: "widgets.sh", Patch: "@@ -2 +2 @@\n-echo 3\n+echo 4"})
				return it
			},
			act: func(e *env, it *item) {
				for _, ev := range e.gh.Sent() {
					e.must(e.pullEvent(ev))
				}
			},
			check: func(e *env, it *item, rec *ledger.Record) {
				if a := rec.Attempts[len(rec.Attempts)-1]; a.Stage != workitem.StageReview || rec.PullHead == it.head || rec.Updating != nil {
					e.t.Fatalf("attempt %+v, head %s", a, rec.PullHead)
				}
				reason("the pull request's diff changed")(e, it, rec)
			}, silently: true},
		{name: "a merge ends the item", from: ledger.InReview, to: ledger.Done,
			reach: func(e *env) *item { return e.inReview() }, act: merge, check: reason("pull request #2 was merged"), silently: true},
		{name: "closing the pull request unmerged stops the item", from: ledger.InReview, to: ledger.Stopped,
			reach: func(e *env) *item { return e.inReview() },
			act:   func(e *env, it *item) { e.must(e.pullEvent(e.gh.ClosePull(repoName, it.pr, writer))) },
			check: reason("@writer closed pull request #2 without merging"), silently: true},
		{name: "/stop on the pull request in review", from: ledger.InReview, to: ledger.Stopped,
			reach: func(e *env) *item { return e.inReview() },
			act:   func(e *env, it *item) { e.comment(it.pr, writer, "/stop") }, silently: true},
		{name: "a required check failing after the last fix round fails the item", policy: oneFix, from: ledger.InReview, to: ledger.Failed,
			reach: func(e *env) *item {
				it := e.fixing()
				e.fixed(it)
				e.must(e.svc.Verdict(e.ctx, it.claims, wire.Verdict{Document: approveVerdict, HeadCommit: it.head}))
				e.expect(it.n, ledger.InReview)
				return it
			},
			act:   func(e *env, it *item) { e.must(e.checkEvent(e.ciFails(it))) },
			check: reason("fix rounds exhausted", "the pull request is left to humans"), silently: true},

		{name: "/retry after a failure asks for approval again", from: ledger.Failed, to: ledger.AwaitingApproval,
			reach: func(e *env) *item { return e.failed() },
			act:   func(e *env, it *item) { e.comment(it.n, writer, "/retry") },
			check: func(e *env, it *item, rec *ledger.Record) {
				if rec.ActiveApproval() != nil || len(rec.Attempts) != 1 || rec.PullRequest != 0 {
					e.t.Fatalf("record %+v", rec)
				}
			}, silently: true},
		{name: "Re-run on a check of a failed item's pull request is /retry", policy: oneFix, from: ledger.Failed, to: ledger.AwaitingApproval,
			reach: func(e *env) *item {
				it := e.fixing()
				runFails(e, it)
				return it
			},
			act: func(e *env, it *item) {
				e.must(e.svc.HandleCheckRerequest(e.ctx, e.gh.Client(), e.gh.Rerequest(repoName, it.pr, writer)))
			},
			check: func(e *env, it *item, rec *ledger.Record) {
				// The next attempt opens its own pull request.
				if rec.PullRequest != 0 || rec.WorkBranch != "" || rec.Verdict != nil {
					e.t.Fatalf("the failed attempt's pull request stays on the record: %+v", rec)
				}
			}, silently: true},
		{name: "labelling a failed item again starts over", from: ledger.Failed, via: ledger.Requested, to: ledger.AwaitingApproval,
			reach: func(e *env) *item {
				it := e.failed()
				e.must(e.issueEvent(e.gh.Unlabel(repoName, it.n, trigger, maintainer)))
				return it
			},
			act: func(e *env, it *item) { e.label(it.n, maintainer) },
			check: func(e *env, it *item, rec *ledger.Record) {
				// The history stays: its attempts count against the bound.
				if len(rec.Attempts) != 1 || rec.ActiveApproval() != nil || rec.Approvals[0].Voided == "" {
					e.t.Fatalf("record %+v", rec)
				}
			}, silently: true},
		{name: "/retry after a stop asks for approval again", from: ledger.Stopped, to: ledger.AwaitingApproval,
			reach: func(e *env) *item { return e.stopped() },
			act:   func(e *env, it *item) { e.comment(it.n, writer, "/retry") }, silently: true},
		{name: "a writer reopening the issue asks for approval again", from: ledger.Stopped, to: ledger.AwaitingApproval,
			reach: func(e *env) *item {
				it := e.awaiting()
				e.must(e.issueEvent(e.gh.CloseIssue(repoName, it.n, maintainer)))
				return it
			},
			act:   func(e *env, it *item) { e.must(e.issueEvent(e.gh.ReopenIssue(repoName, it.n, writer))) },
			check: reason("@writer reopened the issue"), silently: true},
		{name: "labelling a stopped item again starts over", from: ledger.Stopped, via: ledger.Requested, to: ledger.AwaitingApproval,
			reach: func(e *env) *item {
				it := e.awaiting()
				e.must(e.issueEvent(e.gh.Unlabel(repoName, it.n, trigger, maintainer)))
				return it
			},
			act: func(e *env, it *item) { e.label(it.n, maintainer) }, silently: true},
		{name: "labelling an item in error starts over", from: ledger.Error, via: ledger.Requested, to: ledger.AwaitingApproval,
			reach: func(e *env) *item {
				it := e.awaiting()
				untrusted(e, it)
				e.expect(it.n, ledger.Error)
				e.must(e.issueEvent(e.gh.Unlabel(repoName, it.n, trigger, maintainer)))
				return it
			},
			act: func(e *env, it *item) { e.label(it.n, maintainer) },
			check: func(e *env, it *item, rec *ledger.Record) {
				if rec.Requester != maintainer {
					e.t.Fatalf("requester %q", rec.Requester)
				}
			}, silently: true},
	}
	// An untrusted record goes to the error state from wherever it claimed to be.
	for _, st := range []struct {
		from   ledger.State
		policy string
		reach  func(e *env) *item
	}{
		{ledger.Planning, planPolicy, func(e *env) *item { return e.planning() }},
		{ledger.AwaitingApproval, "", func(e *env) *item { return e.awaiting() }},
		{ledger.Running, "", func(e *env) *item { return e.running() }},
		{ledger.Verifying, "", func(e *env) *item { return e.verifying() }},
		{ledger.Reviewing, "", func(e *env) *item { return e.reviewing() }},
		{ledger.InReview, "", func(e *env) *item { return e.inReview() }},
	} {
		rows = append(rows, transition{name: "a record edited by someone else while " + string(st.from), policy: st.policy,
			from: st.from, to: ledger.Error, reach: st.reach, act: untrusted,
			check: func(e *env, it *item, rec *ledger.Record) {
				reason("cannot be trusted", "signature does not match")(e, it, rec)
				if rec.Requester == "mallory" || len(rec.Attempts) != 0 || len(rec.Approvals) != 0 {
					e.t.Fatalf("the untrusted record was carried over: %+v", rec)
				}
			}, silently: true})
	}
	return rows
}

// notPerformed are the moves the transition table allows that the service never makes,
// and why: the table is the bound, these rows say where the service stays inside it.
var notPerformed = map[[2]ledger.State]string{
	{ledger.Requested, ledger.Stopped}: "a requested item is never written: the handling that requests it moves it on before saving",
	{ledger.Requested, ledger.Failed}:  "the same: a refused plan dispatch fails it from planning",
	{ledger.Requested, ledger.Error}:   "the same: an untrusted record is replaced by a fresh one in the error state",
	{ledger.AwaitingApproval, ledger.Planning}: "no event asks for a new plan: an edit while awaiting approval changes the text to approve, " +
		"and the approver approves text and plan together",
	{ledger.Verifying, ledger.Running}: "verification rounds happen inside the run, which reports verifying once",
}

// TestTransitions drives a work item into each state through the service's own flow
// (the fake GitHub plays everyone else), applies one event, and checks where the item
// went and what was done on GitHub. The rows, with notPerformed, cover every move the
// ledger's table allows.
func TestTransitions(t *testing.T) {
	rows := transitions()
	for _, tt := range rows {
		t.Run(fmt.Sprintf("%s→%s/%s", or(tt.from, "none"), tt.to, tt.name), func(t *testing.T) {
			e := newEnv(t, tt.policy)
			it := tt.reach(e)
			if tt.from != "" {
				e.expect(it.n, tt.from)
			} else if e.record(it.n) != nil {
				t.Fatal("the issue already has a work item")
			}
			before := e.record(it.n)
			replies := len(e.replies(it.n))
			tt.act(e, it)
			rec := e.expect(it.n, tt.to)
			// An untrusted record is replaced, counter and all: nothing of it is believed.
			if before != nil && rec.Revision <= before.Revision && tt.to != ledger.Error {
				t.Fatalf("record revision %d → %d: the move was not written", before.Revision, rec.Revision)
			}
			if tt.check != nil {
				tt.check(e, it, rec)
			}
			if !tt.silently && len(e.replies(it.n)) == replies {
				t.Fatal("the bot said nothing of the move")
			}
		})
	}
	t.Run("the rows cover the transition table", func(t *testing.T) {
		covered := map[[2]ledger.State]bool{}
		for _, tt := range rows {
			steps := []ledger.State{tt.from, tt.via, tt.to}
			steps = slices.DeleteFunc(steps, func(s ledger.State) bool { return s == "" })
			for i := 0; i+1 < len(steps); i++ {
				if !ledger.CanTransition(steps[i], steps[i+1]) {
					t.Errorf("row %q moves %s → %s, which the table does not allow", tt.name, steps[i], steps[i+1])
				}
				covered[[2]ledger.State{steps[i], steps[i+1]}] = true
			}
		}
		for _, from := range ledger.States() {
			for _, to := range ledger.States() {
				pair := [2]ledger.State{from, to}
				why, listed := notPerformed[pair]
				switch legal := ledger.CanTransition(from, to); {
				case legal && !covered[pair] && !listed:
					t.Errorf("%s → %s is legal but no row makes it; add one, or say in notPerformed why the service never does", from, to)
				case listed && (!legal || covered[pair]):
					t.Errorf("notPerformed says of %s → %s %q, but it is %s", from, to, why, map[bool]string{true: "covered by a row", false: "not legal"}[legal])
				}
			}
		}
	})
}

func or(s ledger.State, def string) string {
	if s == "" {
		return def
	}
	return string(s)
}

// forge rewrites a work item's record as serve would have written it (the test holds
// serve's key) and restarts serve, which reads it back from GitHub.
func (e *env) forge(n int, change func(*ledger.Record)) {
	e.t.Helper()
	rec := e.record(n)
	change(rec)
	rec.Revision++
	body, err := e.sealer.Encode(rec)
	e.must(err)
	for _, c := range e.gh.IssueComments(repoName, n) {
		if ledger.IsStatusComment(c.Body) {
			e.gh.EditComment(repoName, c.ID, body)
		}
	}
	e.restart()
}
