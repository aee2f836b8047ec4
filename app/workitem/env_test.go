package workitem_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/app/workitem"
	"github.com/bumperdev/bumper/app/workitem/workitemtest"
)

// The world of these tests: one repository with the runner workflow, people of each
// permission level, and a CI App whose check is required on main.
const (
	repoName   = "acme/widgets"
	maintainer = "maintainer" // admin; opens and labels the issues
	writer     = "writer"     // write; approves
	reader     = "reader"     // read
	triager    = "triager"    // triage
	trigger    = "agent:implement"
	workflow   = "bumper-run.yml"
	ciCheck    = "ci/test"
	ciApp      = int64(77)
)

// tokenPermissions are the implement and fix runs' (serve's defaults).
var tokenPermissions = map[string]string{"contents": "write", "pull_requests": "write", "issues": "write", "checks": "write"}

// env is one App (the service) with its GitHub (the fake) and clock.
type env struct {
	t      *testing.T
	ctx    context.Context
	gh     *workitemtest.GitHub
	clock  *workitemtest.Clock
	signer *workitemtest.Signer
	sealer *ledger.Sealer
	svc    *workitem.Service
	obs    *observer
	repo   workitem.Repo
	fault  func(workitem.FaultPoint) error
	// pause is serve's kill switch as the replicas read it.
	pause atomic.Pointer[workitem.PauseState]
}

// newEnv starts an App on a repository whose .github/bumper.yml is policy ("": none).
// main's protection requires a review, the App's verdict and the CI check.
func newEnv(t *testing.T, policy string) *env {
	t.Helper()
	clock := workitemtest.NewClock(time.Date(2025, 6, 1, 9, 0, 0, 0, time.UTC))
	gh := workitemtest.New(workitemtest.Options{Now: clock.Now})
	files := map[string]string{"README.md": "widgets\n", "widgets.sh": "echo 3\n"}
	if policy != "" {
		files[".github/bumper.yml"] = policy
	}
	e := &env{t: t, ctx: context.Background(), gh: gh, clock: clock, signer: &workitemtest.Signer{Now: clock.Now}, obs: &observer{}}
	e.repo = gh.AddRepo(repoName, "main", files)
	gh.AddWorkflow(repoName, workflow, wire.DispatchInputs()...)
	for user, level := range map[string]string{maintainer: "admin", writer: "write", reader: "read", triager: "triage"} {
		gh.SetPermission(repoName, user, level)
	}
	gh.Protect(repoName, "main", &workitem.Protection{RequiredReviews: 1, EnforceAdmins: true,
		RequiredChecks: []workitem.RequiredCheck{{Name: workitem.CheckVerdict, AppID: gh.AppID()}, {Name: ciCheck, AppID: ciApp}}})
	var err error
	if e.sealer, err = ledger.NewSealer([]byte("0123456789abcdef0123456789abcdef")); err != nil {
		t.Fatal(err)
	}
	e.svc = e.replica()
	return e
}

// replica is another serve on the same GitHub, with its own (empty) index: a second
// replica, or this one restarted.
func (e *env) replica() *workitem.Service {
	e.t.Helper()
	idx, err := ledger.NewIndex()
	if err != nil {
		e.t.Fatal(err)
	}
	svc, err := workitem.New(workitem.Options{Index: idx, Connector: e.gh, Workflow: workflow, TriggerLabel: trigger,
		TokenPermissions: tokenPermissions, RunTokens: e.signer, Sealer: e.sealer, ApproveWindow: workitem.DefaultApproveWindow,
		Now: e.clock.Now, AppID: e.gh.AppID(), Observer: e.obs,
		Pause: func() workitem.PauseState {
			if p := e.pause.Load(); p != nil {
				return *p
			}
			return workitem.PauseState{}
		},
		// GitHub's background work is the fake's reads, not time: nothing to wait for.
		Wait: func(context.Context, time.Duration) error { return nil },
		Fault: func(p workitem.FaultPoint) error {
			if e.fault != nil {
				return e.fault(p)
			}
			return nil
		}})
	if err != nil {
		e.t.Fatal(err)
	}
	return svc
}

// restart replaces the service by a fresh one: the index is gone, GitHub holds all.
func (e *env) restart() { e.svc = e.replica() }

func (e *env) must(err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatal(err)
	}
}

// The webhooks, handled by the service as app/handler hands them over.

func (e *env) issueEvent(ev workitem.IssueEvent) error {
	return e.svc.HandleIssue(e.ctx, e.gh.Client(), ev)
}

func (e *env) commentEvent(ev workitem.CommentEvent) error {
	return e.svc.HandleComment(e.ctx, e.gh.Client(), ev)
}

func (e *env) pullEvent(ev workitem.PullEvent) error {
	return e.svc.HandlePull(e.ctx, e.gh.Client(), ev)
}

func (e *env) runEvent(ev workitem.RunEvent) error {
	return e.svc.HandleRun(e.ctx, e.gh.Client(), ev)
}

func (e *env) checkEvent(ev workitem.CheckEvent) error {
	return e.svc.HandleCheck(e.ctx, e.gh.Client(), ev)
}

// open opens an issue as the maintainer.
func (e *env) open(title, body string) int { return e.gh.OpenIssue(repoName, maintainer, title, body) }

// label has who put the trigger label on issue n.
func (e *env) label(n int, who string) {
	e.t.Helper()
	e.must(e.issueEvent(e.gh.Label(repoName, n, trigger, who)))
}

// comment has who comment on n and the service handle it; it returns the comment's id.
func (e *env) comment(n int, who, body string) int64 {
	e.t.Helper()
	ev, id := e.gh.Comment(repoName, n, who, body)
	e.must(e.commentEvent(ev))
	return id
}

// record reads the work item's record from the App's status comment on GitHub, and
// checks what must hold after every handling: one status comment, exactly one state
// label, the record's, and the index agreeing with GitHub. nil when the issue has no
// status comment of the App's.
func (e *env) record(n int) *ledger.Record {
	e.t.Helper()
	var status []workitem.Comment
	for _, c := range e.gh.IssueComments(repoName, n) {
		if ledger.IsStatusComment(c.Body) && c.Author == e.gh.Bot() {
			status = append(status, c)
		}
	}
	switch {
	case len(status) == 0:
		return nil
	case len(status) > 1:
		e.t.Fatalf("#%d has %d status comments", n, len(status))
	}
	rec, err := e.sealer.Decode(status[0].Body)
	if err != nil {
		e.t.Fatalf("#%d's status record: %v", n, err)
	}
	var labels []string
	for _, l := range e.gh.Labels(repoName, n) {
		if strings.HasPrefix(l, ledger.LabelPrefix) {
			labels = append(labels, l)
		}
	}
	if len(labels) != 1 || labels[0] != rec.State.Label() {
		e.t.Fatalf("#%d is %s but carries the state labels %v", n, rec.State, labels)
	}
	if got, cid, ok := e.svc.Index().Get(rec.ID()); ok && (got.Revision != rec.Revision || cid != status[0].ID) {
		e.t.Fatalf("the index holds revision %d of %s (comment %d); GitHub holds %d (comment %d)", got.Revision, rec.ID(), cid, rec.Revision, status[0].ID)
	}
	return rec
}

// expect checks the item's state and returns its record.
func (e *env) expect(n int, want ledger.State) *ledger.Record {
	e.t.Helper()
	rec := e.record(n)
	if rec == nil {
		e.t.Fatalf("#%d has no work item; want %s", n, want)
	}
	if rec.State != want {
		e.t.Fatalf("#%d is %s (%s); want %s", n, rec.State, rec.Reason, want)
	}
	return rec
}

// writeMethods are the methods of workitem.GitHub that change something on GitHub.
var writeMethods = []string{"CreateComment", "EditComment", "AddLabel", "RemoveLabel", "CreateRef", "Dispatch",
	"CreateReview", "CreateCheckRun", "RepoToken"}

// writes counts the App's writes to GitHub so far, by method.
func (e *env) writes() map[string]int {
	out := map[string]int{}
	for _, m := range writeMethods {
		out[m] = e.gh.Calls(m)
	}
	return out
}

// writesSince is the App's writes since before, by method, leaving out those it did not
// make.
func (e *env) writesSince(before map[string]int) map[string]int {
	out := map[string]int{}
	for m, n := range e.writes() {
		if d := n - before[m]; d != 0 {
			out[m] = d
		}
	}
	return out
}

// replies are the bot's comments on n other than its status and plan comments.
func (e *env) replies(n int) []string {
	var out []string
	for _, c := range e.gh.IssueComments(repoName, n) {
		if c.Author == e.gh.Bot() && !ledger.IsStatusComment(c.Body) && !strings.HasPrefix(c.Body, "<!-- bumper:plan -->") {
			out = append(out, c.Body)
		}
	}
	return out
}

// lastReply is the bot's last reply on n, "" when none.
func (e *env) lastReply(n int) string {
	r := e.replies(n)
	if len(r) == 0 {
		return ""
	}
	return r[len(r)-1]
}

// runs are the dispatched runs.
func (e *env) runs() []workitemtest.Run { return e.gh.Runs(repoName) }

// lastRun is the latest dispatched run.
func (e *env) lastRun() workitemtest.Run {
	e.t.Helper()
	runs := e.runs()
	if len(runs) == 0 {
		e.t.Fatal("no run was dispatched")
	}
	return runs[len(runs)-1]
}

// revisionID is what `/approve ID` names for n now.
func (e *env) revisionID(n int) string { return e.sealer.ShortID(e.record(n).TextRevision()) }

// exchangeRequest is what a runner of run presents with its nonce.
func exchangeRequest(run workitemtest.Run) wire.ExchangeRequest {
	at, _ := strconv.Atoi(run.Inputs[wire.DispatchInputAttempt])
	return wire.ExchangeRequest{OIDCToken: "verified-by-the-http-layer", Nonce: run.Inputs[wire.DispatchInputNonce],
		WorkItem: run.Inputs[wire.DispatchInputWorkItem], Attempt: at}
}

// exchange presents run's identity and nonce to the token exchange; on success it
// returns the run's claims as its run token carries them.
func (e *env) exchange(run workitemtest.Run) (wire.ExchangeResponse, wire.RunClaims, error) {
	resp, err := e.svc.Exchange(e.ctx, run.Identity(), exchangeRequest(run))
	if err != nil {
		return resp, wire.RunClaims{}, err
	}
	claims := e.signer.Claims()
	return resp, claims[len(claims)-1], nil
}

// grant is exchange that must succeed.
func (e *env) grant(run workitemtest.Run) wire.RunClaims {
	e.t.Helper()
	_, c, err := e.exchange(run)
	e.must(err)
	return c
}

// item is a work item driven to some state, with what a test needs next.
type item struct {
	n      int
	run    workitemtest.Run // the latest run
	claims wire.RunClaims   // the latest run's, once it has its credentials
	pr     int
	head   string // the pull request's head
	// approval is the id of the comment that approved the run.
	approval int64
	// other is another replica of serve, for the cases that need two.
	other *workitem.Service
	// label and runDone are events kept to be delivered again.
	label   workitem.IssueEvent
	runDone workitem.RunEvent
	// kept is text a case keeps for later: a revision id, a comment's body.
	kept string
}

// patch is the diff of the runner's change, as GitHub lists the pull request's files.
const patch = "@@ -1 +1 @@\n-echo 3\n+echo 4"

// awaiting labels a fresh issue: it waits for approval.
func (e *env) awaiting() *item {
	e.t.Helper()
	n := e.open("Make widgets 4", "The widget count should be 4.")
	e.label(n, maintainer)
	e.expect(n, ledger.AwaitingApproval)
	return &item{n: n}
}

// running approves an awaiting item: its implement run is dispatched.
func (e *env) running() *item {
	e.t.Helper()
	it := e.awaiting()
	e.comment(it.n, writer, "/approve")
	e.expect(it.n, ledger.Running)
	it.run = e.lastRun()
	return it
}

// granted gives the implement run its credentials.
func (e *env) granted() *item {
	e.t.Helper()
	it := e.running()
	it.claims = e.grant(it.run)
	return it
}

// verifying has the implement run report that it verifies its change.
func (e *env) verifying() *item {
	e.t.Helper()
	it := e.granted()
	e.must(e.svc.Progress(e.ctx, it.claims, wire.Progress{State: "verifying"}))
	e.expect(it.n, ledger.Verifying)
	return it
}

// pushPull does what the runner does at the end of an implement run: it pushes the
// change to the attempt's work branch and opens the pull request as the App.
func (e *env) pushPull(it *item) {
	e.t.Helper()
	branch := workitem.WorkBranchName(it.n, it.claims.Attempt)
	it.head = e.gh.Commit(repoName, branch, map[string]string{"widgets.sh": "echo 4\n"})
	it.pr = e.gh.OpenPull(repoName, workitem.Pull{Author: e.gh.Bot(), HeadRef: branch}, workitem.PullFile{Path: "widgets.sh", Patch: patch})
}

// reviewing has the implement run hand its pull request over: a review run is
// dispatched.
func (e *env) reviewing() *item {
	e.t.Helper()
	it := e.verifying()
	e.pushPull(it)
	e.must(e.svc.Progress(e.ctx, it.claims, wire.Progress{State: "reviewing", PullRequest: it.pr, HeadCommit: it.head}))
	e.expect(it.n, ledger.Reviewing)
	it.run = e.lastRun()
	return it
}

// approveVerdict is a reviewer's verdict.json that passes.
const approveVerdict = `{"schema_version":1,"verdict":"approve","confidence":0.95,"summary":"Looks right.","findings":[]}`

// inReview has the review run post a passing verdict: humans have the pull request.
func (e *env) inReview() *item {
	e.t.Helper()
	it := e.reviewing()
	it.claims = e.grant(it.run)
	e.must(e.svc.Verdict(e.ctx, it.claims, wire.Verdict{Document: approveVerdict, HeadCommit: it.head}))
	e.expect(it.n, ledger.InReview)
	return it
}

// ciFails has CI's required check fail on the pull request's head.
func (e *env) ciFails(it *item) workitem.CheckEvent {
	return e.gh.CheckResult(repoName, workitem.CheckRun{Name: ciCheck, HeadSHA: it.head, Conclusion: "failure",
		Title: "2 tests failed", Summary: "TestWidgets failed"}, ciApp)
}

// fixing has CI fail on the pull request in review: a fix round is dispatched.
func (e *env) fixing() *item {
	e.t.Helper()
	it := e.inReview()
	e.must(e.checkEvent(e.ciFails(it)))
	e.expect(it.n, ledger.Running)
	it.run = e.lastRun()
	if it.run.Inputs[wire.DispatchInputStage] != workitem.StageFix {
		e.t.Fatalf("dispatched a %s run, want a fix run", it.run.Inputs[wire.DispatchInputStage])
	}
	return it
}

// fixed has the fix round push a new head and hand it to a new review run, which
// passes it: in review again, on the new head.
func (e *env) fixed(it *item) {
	e.t.Helper()
	it.claims = e.grant(it.run)
	var evs []workitem.PullEvent
	it.head, evs = e.gh.Push(repoName, workitem.WorkBranchName(it.n, 1), e.gh.Bot(), map[string]string{"widgets.sh": "echo 4 # fixed\n"})
	for _, ev := range evs {
		e.must(e.pullEvent(ev)) // Bumper's own push: changes nothing
	}
	e.must(e.svc.Progress(e.ctx, it.claims, wire.Progress{State: "reviewing", PullRequest: it.pr, HeadCommit: it.head}))
	e.expect(it.n, ledger.Reviewing)
	it.run = e.lastRun()
	it.claims = e.grant(it.run)
}

// failed has the implement run fail.
func (e *env) failed() *item {
	e.t.Helper()
	it := e.running()
	e.must(e.runEvent(e.gh.CompleteRun(repoName, it.run.ID, "failure")))
	e.expect(it.n, ledger.Failed)
	return it
}

// stopped has the maintainer stop an awaiting item.
func (e *env) stopped() *item {
	e.t.Helper()
	it := e.awaiting()
	e.comment(it.n, maintainer, "/stop")
	e.expect(it.n, ledger.Stopped)
	return it
}

// planPolicy turns plan runs on.
const planPolicy = "version: 1\nplan: true\n"

// planning labels a fresh issue in a repository that plans first (newEnv(planPolicy)).
func (e *env) planning() *item {
	e.t.Helper()
	n := e.open("Make widgets 4", "The widget count should be 4.")
	e.label(n, maintainer)
	e.expect(n, ledger.Planning)
	return &item{n: n, run: e.lastRun()}
}

// planned has the plan run post its plan: the plan waits for approval.
func (e *env) planned() *item {
	e.t.Helper()
	it := e.planning()
	it.claims = e.grant(it.run)
	e.must(e.svc.Progress(e.ctx, it.claims, wire.Progress{State: "awaiting-approval", Plan: "1. Change widgets.sh to echo 4."}))
	e.expect(it.n, ledger.AwaitingApproval)
	return it
}

// observer records what the service tells serve's metrics.
type observer struct {
	mu       sync.Mutex
	results  []string // stage/result
	outcomes []string
	spent    int64
}

func (o *observer) Outcome(state string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.outcomes = append(o.outcomes, state)
}

func (o *observer) CapLeft(string, string, int64) {}

func (o *observer) Spend(micro int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.spent += micro
}

// ended are the final states reported, in order, and the spend reported in all.
func (o *observer) ended() ([]string, int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.outcomes), o.spent
}

func (o *observer) Dispatch(stage, result string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.results = append(o.results, stage+"/"+result)
}

func (o *observer) seen() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.results)
}

// stages are the stage inputs of the runs dispatched, in order.
func (e *env) stages() []string {
	var out []string
	for _, r := range e.runs() {
		out = append(out, r.Inputs[wire.DispatchInputStage])
	}
	return out
}
