package app

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	gogithub "github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/app/workitem"
	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/gitserver"
	"github.com/bumperdev/bumper/internal/testgate"
)

// inReview is a work item whose implement run opened its pull request and handed it to
// review: the review run is dispatched and has exchanged its credentials.
type inReview struct {
	n, pr      int
	head       string
	review     ghemu.RunInfo
	grant      wire.ExchangeResponse
	implGrant  wire.ExchangeResponse
	reviewedAt int // the review attempt's number
}

// toReview walks an approved item to its review run's exchange.
func (h *harness) toReview() inReview {
	h.t.Helper()
	n, run := h.approved()
	code, granted, body := h.exchange(exchangeRequest(h, run, h.runnerToken(run)))
	if code != http.StatusOK {
		h.t.Fatalf("exchange: %d %s", code, body)
	}
	pr, head := h.runnerPull(n, 1, granted.InstallationToken)
	for _, p := range []wire.Progress{{State: "verifying"}, {State: "reviewing", PullRequest: pr, HeadCommit: head}} {
		if code, body := h.post(http.MethodPost, wire.PathProgress, granted.RunToken, p); code != http.StatusNoContent {
			h.t.Fatalf("progress %s: %d %s", p.State, code, body)
		}
	}
	h.settle()
	runs := h.runs()
	review := runs[len(runs)-1]
	if review.Inputs["stage"] != workitem.StageReview || review.Inputs["attempt"] != "2" {
		h.t.Fatalf("the last run is %v, want the review run of attempt 2", review.Inputs)
	}
	code, rg, body := h.exchange(exchangeRequest(h, review, h.runnerToken(review)))
	if code != http.StatusOK {
		h.t.Fatalf("review exchange: %d %s", code, body)
	}
	return inReview{n: n, pr: pr, head: head, review: review, grant: rg, implGrant: granted, reviewedAt: 2}
}

// verdictCheck is the bumper/verdict check run on a commit.
func (h *harness) verdictCheck(sha string) *gogithub.CheckRun {
	h.t.Helper()
	res, _, err := h.user(ghemu.DefaultMaintainer).Checks.ListCheckRunsForRef(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, sha,
		&gogithub.ListCheckRunsOptions{CheckName: gogithub.String(workitem.CheckVerdict)})
	if err != nil {
		h.t.Fatal(err)
	}
	if len(res.CheckRuns) != 1 {
		h.t.Fatalf("%d %s check runs on %.12s, want 1", len(res.CheckRuns), workitem.CheckVerdict, sha)
	}
	return res.CheckRuns[0]
}

func verdictDoc(verdict string, confidence float64, findings string) string {
	return fmt.Sprintf(`{"schema_version":1,"verdict":%q,"confidence":%v,"summary":"The count is right; @maintainer should look at the test.","findings":[%s]}`,
		verdict, confidence, findings)
}

// TestReviewVerdict: each kind of review result becomes the check and review it should,
// and only a valid approve at or above the threshold, on a verified head, passes.
func TestReviewVerdict(t *testing.T) {
	testgate.Slow(t, "a review run for each kind of verdict through serve, seconds")
	inDiff := `{"file":"widgets.sh","line":2,"severity":"major","message":"Prints 4 but says nothing of why."}`
	outside := `{"file":"test.sh","line":3,"severity":"minor","message":"The test still expects 3."}`
	passed := &wire.Verification{Passed: true, Summary: "0 of 1 commands failed; 1 tests passed, 0 failed"}
	for _, tc := range []struct {
		name       string
		v          wire.Verdict
		conclusion string
		review     bool
		inline     int
		body       []string
		summary    string
	}{
		{name: "request changes with a finding in the diff and one outside", v: wire.Verdict{Document: verdictDoc("request_changes", 0.7, inDiff+","+outside), Verification: passed},
			conclusion: "failure", review: true, inline: 1, body: []string{"requests changes", "test.sh:3", "does not let the author of a pull request request changes"}, summary: "request_changes"},
		{name: "approve at 0.9", v: wire.Verdict{Document: verdictDoc("approve", 0.9, ""), Verification: passed},
			conclusion: "success", review: true, body: []string{"approves", "never an approval"}, summary: "at or above the repository's threshold 0.80"},
		{name: "approve below the threshold", v: wire.Verdict{Document: verdictDoc("approve", 0.5, ""), Verification: passed},
			conclusion: "failure", review: true, summary: "Only `approve` with confidence at or above 0.80"},
		{name: "approve of a head whose verification failed", v: wire.Verdict{Document: verdictDoc("approve", 1, ""), Verification: &wire.Verification{Summary: "1 of 1 commands failed"}},
			conclusion: "failure", review: true, summary: "verification failed on this commit"},
		{name: "a malformed verdict", v: wire.Verdict{Document: `{"schema_version":1,"verdict":"lgtm","confidence":1,"summary":"ship it","findings":[]}`},
			conclusion: "failure", summary: "/verdict"},
		{name: "no verdict", v: wire.Verdict{Problem: "the reviewer wrote no /out/verdict.json"},
			conclusion: "failure", summary: "wrote no /out/verdict.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			r := h.toReview()
			tc.v.HeadCommit = r.head
			if code, body := h.post(http.MethodPost, wire.PathVerdict, r.grant.RunToken, tc.v); code != http.StatusNoContent {
				t.Fatalf("verdict: %d %s", code, body)
			}
			h.settle()
			rec := h.expectState(r.n, ledger.InReview)
			check := h.verdictCheck(r.head)
			if check.GetConclusion() != tc.conclusion || !strings.Contains(check.GetOutput().GetSummary(), tc.summary) {
				t.Fatalf("check %s: %s\n%s", check.GetConclusion(), check.GetOutput().GetTitle(), check.GetOutput().GetSummary())
			}
			if tc.review && !strings.Contains(check.GetOutput().GetSummary(), "```text\nThe count is right; @maintainer") {
				t.Fatalf("the reviewer's text is not shown as text (its mentions would notify, its images load):\n%s", check.GetOutput().GetSummary())
			}
			maint := h.user(ghemu.DefaultMaintainer)
			reviews, _, err := maint.PullRequests.ListReviews(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, r.pr, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.review {
				if len(reviews) != 0 {
					t.Fatalf("%d reviews posted for a verdict that is not one", len(reviews))
				}
				if rec.Verdict == nil || rec.Verdict.Problem == "" || rec.Verdict.Passed {
					t.Fatalf("record %+v", rec.Verdict)
				}
				return
			}
			if len(reviews) != 1 || reviews[0].GetState() != "COMMENTED" || reviews[0].GetUser().GetLogin() != ghemu.DefaultAppSlug+"[bot]" {
				t.Fatalf("reviews %+v", reviews)
			}
			for _, want := range tc.body {
				if !strings.Contains(reviews[0].GetBody(), want) {
					t.Errorf("the review's body lacks %q:\n%s", want, reviews[0].GetBody())
				}
			}
			comments, _, err := maint.PullRequests.ListComments(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, r.pr, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(comments) != tc.inline || tc.inline > 0 && (comments[0].GetPath() != "widgets.sh" || comments[0].GetLine() != 2) {
				t.Fatalf("%d inline comments, want %d: %+v", len(comments), tc.inline, comments)
			}
			if rec.Verdict == nil || rec.Verdict.ReviewID != reviews[0].GetID() || rec.Verdict.CheckRunID != check.GetID() ||
				rec.Verdict.Passed != (tc.conclusion == "success") || !strings.HasPrefix(rec.Verdict.Digest, "sha256:") {
				t.Fatalf("record %+v", rec.Verdict)
			}
		})
	}
}

// TestReviewRunIsReadOnly: the review run's token reads and writes nothing else; it may
// not report progress, nor judge another head, nor post twice.
func TestReviewRunIsReadOnly(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	r := h.toReview()
	for k, v := range r.grant.Permissions {
		if v != "read" {
			t.Fatalf("the review run's token may %s %s", v, k)
		}
	}
	if r.grant.Branch != fmt.Sprintf("bumper/%d-1", r.n) || r.grant.HeadCommit != r.head || r.grant.PullRequest != r.pr {
		t.Fatalf("grant names %s @ %.12s #%d", r.grant.Branch, r.grant.HeadCommit, r.grant.PullRequest)
	}
	c := gogithub.NewClient(nil).WithAuthToken(r.grant.InstallationToken)
	c.BaseURL = mustURL(h.e.BaseURL() + "/")
	if _, _, err := c.PullRequests.CreateReview(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, r.pr,
		&gogithub.PullRequestReviewRequest{Event: gogithub.String("COMMENT"), Body: gogithub.String("LGTM")}); err == nil {
		t.Fatal("the review run's own token posted a review")
	}
	if code, body := h.post(http.MethodPost, wire.PathProgress, r.grant.RunToken, wire.Progress{State: "in-review", PullRequest: r.pr, HeadCommit: r.head}); code != http.StatusForbidden {
		t.Fatalf("a review run reported progress: %d %s", code, body)
	}
	other := wire.Verdict{Document: verdictDoc("approve", 1, ""), HeadCommit: strings.Repeat("a", 40)}
	if code, body := h.post(http.MethodPost, wire.PathVerdict, r.grant.RunToken, other); code != http.StatusForbidden || !strings.Contains(string(body), "review judged") {
		t.Fatalf("a verdict on another head: %d %s", code, body)
	}
	if code, body := h.post(http.MethodPost, wire.PathVerdict, r.implGrant.RunToken, wire.Verdict{Document: verdictDoc("approve", 1, ""), HeadCommit: r.head}); code != http.StatusForbidden {
		t.Fatalf("the implement run graded its own pull request: %d %s", code, body)
	}
	ok := wire.Verdict{Document: verdictDoc("approve", 1, ""), HeadCommit: r.head}
	if code, body := h.post(http.MethodPost, wire.PathVerdict, r.grant.RunToken, ok); code != http.StatusNoContent {
		t.Fatalf("verdict: %d %s", code, body)
	}
	if code, _ := h.post(http.MethodPost, wire.PathVerdict, r.grant.RunToken, ok); code != http.StatusForbidden {
		t.Fatalf("a second verdict was taken: %d", code)
	}
}

// TestReviewRunEndsWithoutVerdict: a review run that completes without posting fails
// the check with the reason, and the pull request goes to humans.
func TestReviewRunEndsWithoutVerdict(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	r := h.toReview()
	if err := h.e.UpdateRun(ghemu.DefaultOrg, ghemu.DefaultRepo, r.review.ID, ghemu.RunUpdate{Status: "completed", Conclusion: "cancelled"}); err != nil {
		t.Fatal(err)
	}
	h.settle()
	rec := h.expectState(r.n, ledger.InReview)
	check := h.verdictCheck(r.head)
	if check.GetConclusion() != "failure" || !strings.Contains(check.GetOutput().GetSummary(), "ended (cancelled) without a verdict") {
		t.Fatalf("check %s:\n%s", check.GetConclusion(), check.GetOutput().GetSummary())
	}
	if rec.Verdict == nil || rec.Verdict.Passed || rec.Attempts[0].Outcome != "" && rec.Attempts[1].Outcome != "cancelled" {
		t.Fatalf("record %+v %+v", rec.Verdict, rec.Attempts)
	}
}

// ciBot is the repository's CI: another App (on GitHub only Apps create check runs),
// known by its bot user.
const ciBot = "ci[bot]"

// ciSeed is the default seed whose main also requires a CI check, ci/test, which the CI
// App posts, and whose repository allows fixRounds fix rounds.
func ciSeed(fixRounds int, reviewer bool) *ghemu.Seed {
	seed := ghemu.DefaultSeed()
	seed.Users = append(seed.Users, ghemu.SeedUser{Login: ciBot, Bot: true})
	seed.Repositories[0].Collaborators[ciBot] = "write"
	seed.Repositories[0].Protected = []ghemu.SeedProtection{{Branch: "main", RequiredChecks: []string{"bumper/verdict", "ci/test"}, RequiredReviews: 1}}
	seed.Repositories[0].Files[".github/bumper.yml"] = fmt.Sprintf("version: 1\nreviewer: %v\nbounds:\n  fix_rounds: %d\n", reviewer, fixRounds)
	return seed
}

// ci posts a CI check run on a commit, as the repository's CI would.
func (h *harness) ci(sha, conclusion string) {
	h.t.Helper()
	if _, _, err := h.user(ciBot).Checks.CreateCheckRun(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, gogithub.CreateCheckRunOptions{
		Name: "ci/test", HeadSHA: sha, Status: gogithub.String("completed"), Conclusion: gogithub.String(conclusion),
		Output: &gogithub.CheckRunOutput{Title: gogithub.String("tests " + conclusion), Summary: gogithub.String("FAIL: TestWidgets: got 4, want 5")}}); err != nil {
		h.t.Fatal(err)
	}
	h.settle()
}

// handedOver opens the pull request of a fresh approved item with the reviewer off.
func (h *harness) handedOver() (n, pr int, head string) {
	h.t.Helper()
	n, run := h.approved()
	code, g, body := h.exchange(exchangeRequest(h, run, h.runnerToken(run)))
	if code != http.StatusOK {
		h.t.Fatalf("exchange: %d %s", code, body)
	}
	pr, head = h.runnerPull(n, 1, g.InstallationToken)
	for _, p := range []wire.Progress{{State: "verifying"}, {State: "in-review", PullRequest: pr, HeadCommit: head}} {
		if code, body := h.post(http.MethodPost, wire.PathProgress, g.RunToken, p); code != http.StatusNoContent {
			h.t.Fatalf("progress %s: %d %s", p.State, code, body)
		}
	}
	h.settle()
	h.expectState(n, ledger.InReview)
	return n, pr, head
}

// TestFixRounds: a required check failing on the head starts a fix round on the same
// branch, with the check's output as its task; Bumper's own checks and other commits'
// do not; once the rounds are used up the item fails.
func TestFixRounds(t *testing.T) {
	t.Parallel()
	h := newHarness(t, ciSeed(1, false))
	n, pr, head := h.handedOver()
	h.ci(h.record(n).BaseCommit, "failure") // another commit's
	h.expectState(n, ledger.InReview)
	h.ci(head, "success")
	h.expectState(n, ledger.InReview)
	h.ci(head, "failure")
	rec := h.expectState(n, ledger.Running)
	fix := rec.CurrentAttempt()
	if fix.Stage != workitem.StageFix || len(fix.FixChecks) != 1 || fix.FixChecks[0] != "ci/test" || !strings.Contains(rec.Reason, "fix round 1 of 1") {
		t.Fatalf("attempt %+v, reason %q", fix, rec.Reason)
	}
	runs := h.runs()
	run := runs[len(runs)-1]
	code, g, body := h.exchange(exchangeRequest(h, run, h.runnerToken(run)))
	if code != http.StatusOK {
		t.Fatalf("fix exchange: %d %s", code, body)
	}
	if g.Branch != fmt.Sprintf("bumper/%d-1", n) || g.HeadCommit != head || g.PullRequest != pr || g.Stage != workitem.StageFix {
		t.Fatalf("fix grant: %s @ %.12s #%d (%s)", g.Branch, g.HeadCommit, g.PullRequest, g.Stage)
	}
	code, raw := h.post(http.MethodGet, wire.PathTask, g.RunToken, nil)
	if code != http.StatusOK || !strings.Contains(string(raw), "FAIL: TestWidgets: got 4, want 5") || !strings.Contains(string(raw), `"head_commit"`) {
		t.Fatalf("fix task: %d %s", code, raw)
	}
	// The round ends without a new head; the check still fails and the bound is reached.
	if err := h.e.UpdateRun(ghemu.DefaultOrg, ghemu.DefaultRepo, run.ID, ghemu.RunUpdate{Status: "completed", Conclusion: "failure"}); err != nil {
		t.Fatal(err)
	}
	h.settle()
	rec = h.expectState(n, ledger.Failed)
	if !strings.Contains(rec.Reason, "fix rounds exhausted") || !strings.Contains(rec.Reason, "ci/test") {
		t.Fatalf("reason %q", rec.Reason)
	}
}

// TestHumanPushStandsBumperDown: a maintainer's push to the work branch makes it
// theirs: Bumper says so once, and a failing check afterwards starts no fix round.
func TestHumanPushStandsBumperDown(t *testing.T) {
	t.Parallel()
	h := newHarness(t, ciSeed(2, false))
	n, pr, head := h.handedOver()
	branch := fmt.Sprintf("bumper/%d-1", n)
	theirs, err := h.e.Git().CommitFiles(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, branch, head,
		map[string][]byte{"NOTES": []byte("mine now\n")}, "Take over", gitserver.Signature{Name: "Maintainer", Email: "m@example.test"})
	if err != nil {
		t.Fatal(err)
	}
	// The git server's own commits do not emit the push webhook GitHub sends: deliver it.
	h.deliver("pull_request", "sync", map[string]any{"action": "synchronize", "number": pr, "before": head, "after": theirs,
		"pull_request": map[string]any{"number": pr, "state": "open", "user": map[string]any{"login": ghemu.DefaultAppSlug + "[bot]"},
			"head": map[string]any{"ref": branch, "sha": theirs, "repo": map[string]any{"full_name": ghemu.DefaultOrg + "/" + ghemu.DefaultRepo}},
			"base": map[string]any{"ref": "main"}},
		"repository":   map[string]any{"name": ghemu.DefaultRepo, "full_name": ghemu.DefaultOrg + "/" + ghemu.DefaultRepo, "default_branch": "main", "owner": map[string]any{"login": ghemu.DefaultOrg}},
		"installation": map[string]any{"id": h.e.InstallationID(ghemu.DefaultOrg)},
		"sender":       map[string]any{"login": ghemu.DefaultMaintainer, "type": "User"}})
	h.settle()
	rec := h.expectState(n, ledger.InReview)
	if rec.HumanPush == nil || rec.HumanPush.By != ghemu.DefaultMaintainer || rec.HumanPush.Head != theirs {
		t.Fatalf("human push %+v", rec.HumanPush)
	}
	comments, _, err := h.user(ghemu.DefaultMaintainer).Issues.ListComments(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, pr, nil)
	if err != nil || len(comments) != 1 || !strings.Contains(comments[0].GetBody(), "will not push to this branch again") {
		t.Fatalf("replies on the pull request: %v %+v", err, comments)
	}
	attempts := len(rec.Attempts)
	h.ci(head, "failure")
	if rec := h.expectState(n, ledger.InReview); len(rec.Attempts) != attempts {
		t.Fatal("a fix round started on a branch a human pushed to")
	}
}

// TestNoFixUnderApproval: once a person approved the pull request, a failing required
// check starts no fix round: Bumper does not push commits under their approval.
func TestNoFixUnderApproval(t *testing.T) {
	t.Parallel()
	h := newHarness(t, ciSeed(2, false))
	n, pr, head := h.handedOver()
	if _, _, err := h.user(ghemu.DefaultMaintainer).PullRequests.CreateReview(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, pr,
		&gogithub.PullRequestReviewRequest{Event: gogithub.String("APPROVE"), Body: gogithub.String("Looks right.")}); err != nil {
		t.Fatal(err)
	}
	h.ci(head, "failure")
	rec := h.expectState(n, ledger.InReview)
	if rec.CurrentAttempt().Stage == workitem.StageFix || !strings.Contains(rec.Reason, "approved the pull request") {
		t.Fatalf("attempt %+v, reason %q", rec.CurrentAttempt(), rec.Reason)
	}
}

// TestCommandsOnThePullRequest: /status and /stop work in the pull request's comments,
// with the same permission rules; /approve there points to the issue.
func TestCommandsOnThePullRequest(t *testing.T) {
	t.Parallel()
	h := newHarness(t, noReviewer())
	n, pr, _ := h.handedOver()
	prComments := func() []*gogithub.IssueComment {
		cs, _, err := h.user(ghemu.DefaultMaintainer).Issues.ListComments(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, pr, nil)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	last := func() string {
		cs := prComments()
		return cs[len(cs)-1].GetBody()
	}
	h.comment(ghemu.DefaultMaintainer, pr, "/status")
	if !strings.Contains(last(), "state: `in-review`") {
		t.Fatalf("/status on the pull request: %q", last())
	}
	h.comment(ghemu.DefaultMaintainer, pr, "/approve")
	if !strings.Contains(last(), fmt.Sprintf("on #%d", n)) {
		t.Fatalf("/approve on the pull request: %q", last())
	}
	h.comment(ghemu.DefaultReader, pr, "/stop")
	h.expectState(n, ledger.InReview)
	if !strings.Contains(last(), "Sorry @reader") {
		t.Fatalf("a reader's /stop: %q", last())
	}
	h.comment(ghemu.DefaultMaintainer, pr, "/stop")
	h.expectState(n, ledger.Stopped)
}

// TestProtectionNotice: a work item's start says what the base branch's protection does
// not enforce, and nothing when it requires a review the App cannot bypass.
func TestProtectionNotice(t *testing.T) {
	for _, tc := range []struct {
		name string
		prot []ghemu.SeedProtection
		want string
	}{
		{name: "a review and the App's verdict required, no bypass", prot: []ghemu.SeedProtection{{Branch: "main", RequiredChecks: []string{"bumper/verdict"},
			RequiredCheckApps: map[string]string{"bumper/verdict": ghemu.DefaultAppSlug}, RequiredReviews: 1}}},
		{name: "the verdict from any source", prot: []ghemu.SeedProtection{{Branch: "main", RequiredChecks: []string{"bumper/verdict"}, RequiredReviews: 1}},
			want: "requires `bumper/verdict` from any source"},
		{name: "unprotected", want: "`main` is not protected"},
		{name: "no review required", prot: []ghemu.SeedProtection{{Branch: "main", RequiredChecks: []string{"bumper/verdict"}}}, want: "does not require an approving review"},
		{name: "the App may bypass", prot: []ghemu.SeedProtection{{Branch: "main", RequiredReviews: 1, BypassApps: []string{ghemu.DefaultAppSlug}}}, want: "lets the " + ghemu.DefaultAppSlug + " App bypass"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seed := ghemu.DefaultSeed()
			seed.Repositories[0].Protected = tc.prot
			h := newHarness(t, seed)
			n := h.openIssue("Make widgets 4", "The widget count should be 4.")
			h.label(ghemu.DefaultMaintainer, n, "agent:implement")
			rec := h.expectState(n, ledger.AwaitingApproval)
			if tc.want == "" && rec.Protection != "" || !strings.Contains(rec.Protection, tc.want) {
				t.Fatalf("notice %q, want %q", rec.Protection, tc.want)
			}
			if tc.want != "" && !strings.Contains(h.statusComment(n).GetBody(), tc.want) {
				t.Fatal("the status comment does not show the notice")
			}
		})
	}
}
