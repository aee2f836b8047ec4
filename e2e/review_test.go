package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	gogithub "github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/internal/verdict"
)

// reviewed is an issue run through its review: the implement run, then the review run
// the App dispatched once the pull request opened.
type reviewed struct {
	ran
	pr         *gogithub.PullRequest
	review     ghemu.RunInfo
	reviewDone ghemu.RunInfo
	reviewLog  string
	reviewOut  string
	reviewEv   *evidence.Evidence
}

// reviewIssue runs an issue to its pull request, then waits for the review run the App
// dispatched for it.
func (w *world) reviewIssue(title, body string) reviewed {
	w.t.Helper()
	r := reviewed{ran: w.runIssue(title, body, "success")}
	runs := w.runs()
	last := runs[len(runs)-1]
	if last.ID == r.run.ID || last.Inputs["stage"] != "review" {
		w.t.Fatalf("after the pull request of #%d the last run is %d, stage %q; want a review run", r.issue, last.ID, last.Inputs["stage"])
	}
	r.review = last
	r.reviewDone = w.wait(last)
	r.reviewLog, r.reviewOut = w.jobLog(last), w.out(last)
	r.reviewEv = readEvidence(w.t, r.reviewOut)
	pr, _, err := w.user(ghemu.DefaultMaintainer).PullRequests.Get(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, r.ev.PullRequest)
	if err != nil {
		w.t.Fatal(err)
	}
	r.pr = pr
	return r
}

// verdictCheck is the bumper/verdict check run on the pull request's head.
func (w *world) verdictCheck(t *testing.T, head string) *gogithub.CheckRun {
	t.Helper()
	checks, _, err := w.user(ghemu.DefaultMaintainer).Checks.ListCheckRunsForRef(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, head,
		&gogithub.ListCheckRunsOptions{CheckName: gogithub.String("bumper/verdict")})
	if err != nil || checks.GetTotal() != 1 {
		t.Fatalf("bumper/verdict check runs on %.12s: %+v (%v)", head, checks, err)
	}
	return checks.CheckRuns[0]
}

// reviews are the pull request's reviews and its review comments, as GitHub stored them.
func (w *world) reviews(t *testing.T, pr int) ([]*gogithub.PullRequestReview, []*gogithub.PullRequestComment) {
	t.Helper()
	c := w.user(ghemu.DefaultMaintainer)
	rs, _, err := c.PullRequests.ListReviews(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, pr, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, _, err := c.PullRequests.ListComments(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, pr, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rs, cs
}

// TestReviewRuns walks four pull requests through their review runs, in one world
// (reviewer on, the scripted reviewer of the base commit):
//
//   - the implementing agent attacks its reviewer: it rewrites .bumper/reviewer.sh to
//     approve, and makes the repository's test (which the review run runs on the head
//     before its reviewer) rewrite the base's reviewer, empty the diff the reviewer
//     reads, and plant an approving verdict.json. The review still runs the base's
//     reviewer on the real diff, whose verdict requests changes with two findings: a
//     COMMENT review (GitHub lets no one request changes on their own pull request, and
//     the App opened it) with one inline comment (the finding on a line the diff
//     changes) and the other in its body, and a failing bumper/verdict check. The
//     reviewer's own push is refused.
//   - an approve verdict: a COMMENT review (never APPROVE) and a passing check;
//   - no verdict: a failing check that says so, and a failed review run;
//   - a malformed verdict: a failing check that quotes the schema error, and a failed
//     review run.
func TestReviewRuns(t *testing.T) {
	w := newWorld(t, options{files: withReviewer})

	t.Run("request changes, whatever the implementing agent did to its reviewer", func(t *testing.T) {
		r := w.reviewIssue("Count to 4", "test.sh wants 4 widgets, but widgets.sh prints 3.\n\nscenario: tamper\nreview: changes")
		if r.reviewDone.Conclusion != "success" {
			t.Fatalf("review run ended %s:\n%s", r.reviewDone.Conclusion, r.reviewLog)
		}
		head := r.pr.GetHead().GetSHA()
		// The attack was in place: the head's reviewer is the agent's, approving all.
		theirs, _, _, err := w.user(ghemu.DefaultMaintainer).Repositories.GetContents(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, ".bumper/reviewer.sh",
			&gogithub.RepositoryContentGetOptions{Ref: head})
		if err != nil {
			t.Fatal(err)
		}
		if body, _ := theirs.GetContent(); !strings.Contains(body, "the agent's reviewer") {
			t.Fatalf("the head's reviewer is not the agent's:\n%s", body)
		}
		for _, want := range []string{"reviewer: review changes, running from /workspace/base", "tamper refused: /workspace/base/.bumper/reviewer.sh",
			"tamper refused: /workspace/head/.bumper/reviewer.sh", "tamper refused: pr.diff", "PASS: 4 widgets"} {
			if !strings.Contains(r.reviewLog, want) {
				t.Errorf("the review run's log lacks %q:\n%s", want, r.reviewLog)
			}
		}
		if strings.Contains(r.reviewLog, "TAMPERED") || strings.Contains(r.reviewLog, "the agent's reviewer") {
			t.Fatalf("the tests changed the review's inputs, or the agent's reviewer ran:\n%s", r.reviewLog)
		}
		rv := r.reviewEv.Review
		doc, err := os.ReadFile(filepath.Join(r.reviewOut, "verdict.json"))
		if err != nil || rv == nil || rv.HeadCommit != head || rv.Verdict != verdict.RequestChanges || rv.Findings != 2 || rv.VerdictDigest != verdict.Digest(doc) {
			t.Fatalf("review evidence %+v; verdict.json %s (%v)", rv, doc, err)
		}
		if err := r.reviewEv.Validate(); err != nil || r.reviewEv.Stage != wire.StageReview || r.reviewEv.PullRequest != r.pr.GetNumber() {
			t.Fatalf("the review run's evidence: stage %s, pull request %d: %v", r.reviewEv.Stage, r.reviewEv.PullRequest, err)
		}
		reviews, comments := w.reviews(t, r.pr.GetNumber())
		if len(reviews) != 1 || reviews[0].GetState() != "COMMENTED" || reviews[0].GetUser().GetLogin() != ghemu.DefaultAppSlug+"[bot]" ||
			reviews[0].GetCommitID() != head || !strings.Contains(reviews[0].GetBody(), "requests changes") ||
			!strings.Contains(reviews[0].GetBody(), ".github/bumper.yml") || strings.Contains(reviews[0].GetBody(), "compute it") {
			t.Fatalf("reviews %+v", reviews)
		}
		if len(comments) != 1 || comments[0].GetPath() != "widgets.sh" || comments[0].GetLine() != 3 || comments[0].GetSide() != "RIGHT" ||
			!strings.Contains(comments[0].GetBody(), "compute it") {
			t.Fatalf("review comments %+v", comments)
		}
		if c := w.verdictCheck(t, head); c.GetConclusion() != "failure" || !strings.Contains(c.GetOutput().GetTitle(), "request_changes") {
			t.Fatalf("bumper/verdict: %s, %q", c.GetConclusion(), c.GetOutput().GetTitle())
		}
		refused := false
		for _, l := range readAuditLines(t, filepath.Join(r.reviewOut, "audit.jsonl")) {
			if l.Kind == "git" && !l.Allowed && strings.Contains(l.Reason, "this run may not push") {
				refused = true
			}
		}
		if !refused {
			t.Error("the reviewer's push is not refused in the review run's audit log")
		}
		if refs, _ := w.e.Git().Refs(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo); refs["refs/heads/"+r.pr.GetHead().GetRef()] != head {
			t.Fatalf("the pull request's branch moved during its review: %v", refs)
		}
		if rec := w.record(r.issue); rec.State != ledger.InReview {
			t.Fatalf("after its review the item is %s (%s)", rec.State, rec.Reason)
		}
	})

	t.Run("approve", func(t *testing.T) {
		r := w.reviewIssue("Count to 4", "test.sh wants 4 widgets, but widgets.sh prints 3.\n\nscenario: direct\nreview: approve")
		if r.reviewDone.Conclusion != "success" {
			t.Fatalf("review run ended %s:\n%s", r.reviewDone.Conclusion, r.reviewLog)
		}
		head := r.pr.GetHead().GetSHA()
		reviews, comments := w.reviews(t, r.pr.GetNumber())
		if len(reviews) != 1 || reviews[0].GetState() != "COMMENTED" || !strings.Contains(reviews[0].GetBody(), "approves") || len(comments) != 0 {
			t.Fatalf("reviews %+v, comments %+v", reviews, comments)
		}
		if c := w.verdictCheck(t, head); c.GetConclusion() != "success" {
			t.Fatalf("bumper/verdict: %s, %q", c.GetConclusion(), c.GetOutput().GetTitle())
		}
		if rv := r.reviewEv.Review; rv == nil || rv.Verdict != verdict.Approve || *rv.Confidence != 0.9 {
			t.Fatalf("review evidence %+v", rv)
		}
	})

	t.Run("no verdict", func(t *testing.T) {
		r := w.reviewIssue("Count to 4", "test.sh wants 4 widgets, but widgets.sh prints 3.\n\nscenario: direct\nreview: none")
		if r.reviewDone.Conclusion != "failure" || !strings.Contains(r.reviewLog, "the reviewer wrote no /out/verdict.json") {
			t.Fatalf("review run ended %s:\n%s", r.reviewDone.Conclusion, r.reviewLog)
		}
		c := w.verdictCheck(t, r.pr.GetHead().GetSHA())
		if c.GetConclusion() != "failure" || !strings.Contains(c.GetOutput().GetSummary(), "wrote no /out/verdict.json") {
			t.Fatalf("bumper/verdict: %s, %q:\n%s", c.GetConclusion(), c.GetOutput().GetTitle(), c.GetOutput().GetSummary())
		}
		if _, err := os.Stat(filepath.Join(r.reviewOut, "verdict.json")); err == nil {
			t.Fatal("the artifact holds a verdict.json the reviewer never wrote")
		}
	})

	t.Run("a malformed verdict", func(t *testing.T) {
		r := w.reviewIssue("Count to 4", "test.sh wants 4 widgets, but widgets.sh prints 3.\n\nscenario: direct\nreview: malformed")
		if r.reviewDone.Conclusion != "failure" || !strings.Contains(r.reviewLog, "does not parse") {
			t.Fatalf("review run ended %s:\n%s", r.reviewDone.Conclusion, r.reviewLog)
		}
		head := r.pr.GetHead().GetSHA()
		c := w.verdictCheck(t, head)
		if c.GetConclusion() != "failure" || !strings.Contains(c.GetOutput().GetSummary(), "/verdict") {
			t.Fatalf("bumper/verdict: %s, %q:\n%s", c.GetConclusion(), c.GetOutput().GetTitle(), c.GetOutput().GetSummary())
		}
		if rv := r.reviewEv.Review; rv == nil || rv.Verdict != "" || !strings.Contains(rv.Problem, "verdict schema") || rv.VerdictDigest == "" {
			t.Fatalf("review evidence %+v", rv)
		}
	})
}
