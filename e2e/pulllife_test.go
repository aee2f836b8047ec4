package e2e

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	gogithub "github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/ghemu"
)

// ciCheck is the repository's CI, as the test plays it: ci/test passes on a head whose
// tree has a CHANGELOG.md, and fails, saying so, on one without. ciBot is the CI's App,
// by its bot user (the seed lists it).
const (
	ciCheck = "ci/test"
	ciBot   = "ci[bot]"
)

// ci runs the repository's CI on a commit, posts ci/test and waits for serve to handle
// what it caused; it returns the conclusion.
func (w *world) ci(head string) string {
	w.t.Helper()
	maint := w.user(ghemu.DefaultMaintainer)
	conclusion, summary := "success", "CHANGELOG.md has an entry."
	if _, _, resp, err := maint.Repositories.GetContents(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, "CHANGELOG.md",
		&gogithub.RepositoryContentGetOptions{Ref: head}); resp != nil && resp.StatusCode == http.StatusNotFound {
		conclusion, summary = "failure", "FAIL: every change needs an entry in CHANGELOG.md, and this one has none."
	} else if err != nil {
		w.t.Fatal(err)
	}
	if _, _, err := w.user(ciBot).Checks.CreateCheckRun(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, gogithub.CreateCheckRunOptions{
		Name: ciCheck, HeadSHA: head, Status: gogithub.String("completed"), Conclusion: gogithub.String(conclusion),
		Output: &gogithub.CheckRunOutput{Title: gogithub.String("changelog " + conclusion), Summary: gogithub.String(summary)}}); err != nil {
		w.t.Fatal(err)
	}
	w.settle()
	return conclusion
}

// protect requires on main a person's review, the App's own bumper/verdict and, when ci
// is set, the CI's check.
func (w *world) protect(ci bool) {
	w.t.Helper()
	checks := []string{"bumper/verdict"}
	if ci {
		checks = append(checks, ciCheck)
	}
	if err := w.e.SetBranchProtection(ghemu.DefaultOrg, ghemu.DefaultRepo, ghemu.SeedProtection{Branch: "main", RequiredChecks: checks,
		RequiredCheckApps: map[string]string{"bumper/verdict": ghemu.DefaultAppSlug}, RequiredReviews: 1}); err != nil {
		w.t.Fatal(err)
	}
}

// lastRun is the emulator's latest workflow run.
func (w *world) lastRun() ghemu.RunInfo {
	w.t.Helper()
	runs := w.runs()
	return runs[len(runs)-1]
}

// TestFixRounds: a required check fails on the pull request Bumper opened; a fix round,
// a new run on the same branch with the check's output as its task, makes it pass and
// hands the pull request back; a check that keeps failing uses up bounds.fix_rounds and
// fails the item.
func TestFixRounds(t *testing.T) {
	w := newWorld(t)
	w.protect(true)
	t.Run("a fix round makes the check pass", func(t *testing.T) {
		r := w.runIssue("Count to 4", "test.sh wants 4 widgets.\n\nscenario: changelog", "success")
		head := r.ev.HeadCommit
		if rec := w.record(r.issue); rec.State != ledger.InReview || rec.PullHead != head {
			t.Fatalf("after its run the item is %s at %.12s: %s", rec.State, rec.PullHead, rec.Reason)
		}
		if got := w.ci(head); got != "failure" {
			t.Fatalf("ci/test on the first head: %s", got)
		}
		rec := w.record(r.issue)
		fix := w.lastRun()
		if rec.State != ledger.Running || fix.Inputs["stage"] != "fix" || rec.CurrentAttempt().Stage != "fix" {
			t.Fatalf("after the failing check: %s, last run's stage %q: %s", rec.State, fix.Inputs["stage"], rec.Reason)
		}
		if done := w.wait(fix); done.Conclusion != "success" {
			t.Fatalf("the fix round ended %s:\n%s", done.Conclusion, w.jobLog(fix))
		}
		if !strings.Contains(w.jobLog(fix), "every change needs an entry in CHANGELOG.md") {
			t.Errorf("the fix round's agent did not get the check's output:\n%s", w.jobLog(fix))
		}
		rec = w.record(r.issue)
		pr, _, err := w.user(ghemu.DefaultMaintainer).PullRequests.Get(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, r.ev.PullRequest)
		if err != nil {
			t.Fatal(err)
		}
		newHead := pr.GetHead().GetSHA()
		if rec.State != ledger.InReview || rec.PullHead != newHead || newHead == head || pr.GetHead().GetRef() != "bumper/1-1" {
			t.Fatalf("after the fix round: %s, record head %.12s, pull request head %.12s on %s (was %.12s): %s", rec.State, rec.PullHead,
				newHead, pr.GetHead().GetRef(), head, rec.Reason)
		}
		commit, _, err := w.user(ghemu.DefaultMaintainer).Repositories.GetCommit(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, newHead, nil)
		if err != nil || len(commit.Parents) != 1 || commit.Parents[0].GetSHA() != head {
			t.Fatalf("the fix round's commit does not follow the head it was given (%v): %+v", err, commit.Parents)
		}
		comments, _, err := w.user(ghemu.DefaultMaintainer).Issues.ListComments(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, r.ev.PullRequest, nil)
		if err != nil || len(comments) == 0 || !strings.Contains(comments[len(comments)-1].GetBody(), "evidence") {
			t.Fatalf("no evidence comment from the fix round on the pull request (%v)", err)
		}
		if got := w.ci(newHead); got != "success" {
			t.Fatalf("ci/test after the fix round: %s", got)
		}
		if rec := w.record(r.issue); rec.State != ledger.InReview || len(rec.Attempts) != 2 {
			t.Fatalf("after the check passed: %s with %d attempts", rec.State, len(rec.Attempts))
		}
	})
	t.Run("a check that keeps failing exhausts the fix rounds", func(t *testing.T) {
		r := w.runIssue("Count to 4 again", "test.sh wants 4 widgets.\n\nscenario: stubborn", "success")
		head := r.ev.HeadCommit
		for round := 1; round <= 2; round++ {
			if got := w.ci(head); got != "failure" {
				t.Fatalf("round %d: ci/test %s", round, got)
			}
			fix := w.lastRun()
			if fix.Inputs["stage"] != "fix" {
				t.Fatalf("round %d: no fix run after the failing check: %s", round, w.record(r.issue).Reason)
			}
			if done := w.wait(fix); done.Conclusion != "success" {
				t.Fatalf("fix round %d ended %s:\n%s", round, done.Conclusion, w.jobLog(fix))
			}
			head = w.record(r.issue).PullHead
		}
		w.ci(head)
		rec := w.record(r.issue)
		if rec.State != ledger.Failed || !strings.Contains(rec.Reason, "fix rounds exhausted") || rec.AttemptsOfStage("fix") != 2 {
			t.Fatalf("after two fix rounds and a third failure: %s with %d fix rounds: %s", rec.State, rec.AttemptsOfStage("fix"), rec.Reason)
		}
	})
}

// appClient is the App's own GitHub client, with an installation token, as serve has.
func (w *world) appClient() *gogithub.Client {
	w.t.Helper()
	tr, err := ghinstallation.New(http.DefaultTransport, w.e.AppID(), w.e.InstallationID(ghemu.DefaultOrg), w.e.AppKeyPEM())
	if err != nil {
		w.t.Fatal(err)
	}
	tr.BaseURL = w.e.BaseURL()
	c := gogithub.NewClient(&http.Client{Transport: tr, Timeout: 30 * time.Second})
	c.BaseURL, _ = c.BaseURL.Parse(w.e.BaseURL() + "/")
	return c
}

// TestHumansMerge: branch protection that requires the App's bumper/verdict and one
// person's approving review works as intended: the bot can neither approve its own pull
// request nor merge it, even with a passing verdict; a person can, once they approve;
// and a failing verdict keeps even an approved pull request from merging. The merge ends
// the work item and closes the issue through "Fixes #N".
func TestHumansMerge(t *testing.T) {
	w := newWorld(t, options{files: withReviewer})
	w.protect(false)
	bot := w.appClient()
	maint := w.user(ghemu.DefaultMaintainer)
	merge := func(c *gogithub.Client, pr int) (int, error) {
		_, resp, err := c.PullRequests.Merge(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, pr, "", nil)
		if resp == nil {
			return 0, err
		}
		return resp.StatusCode, err
	}
	approve := func(c *gogithub.Client, pr int) error {
		_, _, err := c.PullRequests.CreateReview(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, pr,
			&gogithub.PullRequestReviewRequest{Event: gogithub.String("APPROVE"), Body: gogithub.String("Approved.")})
		return err
	}

	t.Run("a failing verdict blocks even an approved pull request", func(t *testing.T) {
		r := w.reviewIssue("Count to 4", "test.sh wants 4 widgets.\n\nscenario: direct\nreview: changes")
		if c := w.verdictCheck(t, r.ev.HeadCommit); c.GetConclusion() != "failure" {
			t.Fatalf("verdict %s", c.GetConclusion())
		}
		if err := approve(maint, r.ev.PullRequest); err != nil {
			t.Fatal(err)
		}
		if code, err := merge(maint, r.ev.PullRequest); code != http.StatusMethodNotAllowed || !strings.Contains(errText(err), "bumper/verdict") {
			t.Fatalf("a maintainer merged past a failing verdict: %d %v", code, err)
		}
		if rec := w.record(r.issue); rec.State != ledger.InReview {
			t.Fatalf("item %s", rec.State)
		}
	})
	t.Run("the bot cannot merge; a person who approves can", func(t *testing.T) {
		r := w.reviewIssue("Count to 4, approved", "test.sh wants 4 widgets.\n\nscenario: direct\nreview: approve")
		pr := r.ev.PullRequest
		if c := w.verdictCheck(t, r.ev.HeadCommit); c.GetConclusion() != "success" {
			t.Fatalf("verdict %s: %s", c.GetConclusion(), c.GetOutput().GetSummary())
		}
		if code, err := merge(bot, pr); code != http.StatusMethodNotAllowed || !strings.Contains(errText(err), "approving review") {
			t.Fatalf("the bot merged its own pull request: %d %v", code, err)
		}
		if err := approve(bot, pr); err == nil || !strings.Contains(err.Error(), "your own pull request") {
			t.Fatalf("the bot approved its own pull request: %v", err)
		}
		if code, err := merge(maint, pr); code != http.StatusMethodNotAllowed {
			t.Fatalf("a merge without a person's approval: %d %v", code, err)
		}
		if err := approve(maint, pr); err != nil {
			t.Fatal(err)
		}
		if code, err := merge(maint, pr); code != http.StatusOK {
			t.Fatalf("the maintainer could not merge an approved pull request with a passing verdict: %d %v", code, err)
		}
		w.settle()
		rec := w.record(r.issue)
		if rec.State != ledger.Done || !strings.Contains(rec.Reason, "merged") {
			t.Fatalf("after the merge the item is %s: %s", rec.State, rec.Reason)
		}
		is, _, err := maint.Issues.Get(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, r.issue)
		if err != nil || is.GetState() != "closed" {
			t.Fatalf("issue #%d is %s after its pull request merged (%v)", r.issue, is.GetState(), err)
		}
	})
}

// errText is an error's text, "" for none.
func errText(err error) string {
	var er *gogithub.ErrorResponse
	if errors.As(err, &er) {
		return er.Message + " " + er.Error()
	}
	if err != nil {
		return err.Error()
	}
	return ""
}
