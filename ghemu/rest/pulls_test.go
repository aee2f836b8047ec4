package rest_test

import (
	"net/http"
	"testing"

	"github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
)

func TestPullRequestReviewChecksAndMerge(t *testing.T) {
	t.Parallel()
	e := emutest.New(t, ghemu.Options{})
	ctx := emutest.Context(t)
	head := emutest.BranchWithCommit(t, e, "bumper/1-1", "frob.txt")
	bot := emutest.InstallationClient(t, e)
	maint := emutest.UserClient(t, e, ghemu.DefaultMaintainer)

	pr, resp, err := bot.PullRequests.Create(ctx, org, repo, &github.NewPullRequest{
		Title: github.String("Add frob"), Head: github.String("bumper/1-1"), Base: github.String("main"),
		Body: github.String("Evidence below.")})
	emutest.WantStatus(t, resp, err, http.StatusCreated)
	// GitHub answers a new pull request before computing its mergeability; a GET has it.
	if pr.GetHead().GetSHA() != head || pr.GetMergeableState() != "unknown" || pr.Mergeable != nil {
		t.Fatalf("PR head %s state %s; want %s unknown", pr.GetHead().GetSHA(), pr.GetMergeableState(), head)
	}
	if got, _, err := maint.PullRequests.Get(ctx, org, repo, pr.GetNumber()); err != nil || got.GetMergeableState() != "blocked" {
		t.Fatalf("PR state %s, %v; want blocked", got.GetMergeableState(), err)
	}
	_, resp, err = bot.PullRequests.Create(ctx, org, repo, &github.NewPullRequest{
		Title: github.String("again"), Head: github.String("bumper/1-1"), Base: github.String("main")})
	emutest.WantStatus(t, resp, err, http.StatusUnprocessableEntity)

	list, _, err := maint.PullRequests.List(ctx, org, repo, &github.PullRequestListOptions{Head: org + ":bumper/1-1"})
	if err != nil || len(list) != 1 {
		t.Fatalf("PR list = %v, %v", list, err)
	}

	t.Run("merging waits for the required check and an approval", func(t *testing.T) {
		_, resp, err := maint.PullRequests.Merge(ctx, org, repo, pr.GetNumber(), "", nil)
		emutest.WantStatus(t, resp, err, http.StatusMethodNotAllowed)

		cr, resp, err := bot.Checks.CreateCheckRun(ctx, org, repo, github.CreateCheckRunOptions{
			Name: "bumper/verdict", HeadSHA: head, Status: github.String("in_progress")})
		emutest.WantStatus(t, resp, err, http.StatusCreated)
		done, _, err := bot.Checks.UpdateCheckRun(ctx, org, repo, cr.GetID(), github.UpdateCheckRunOptions{
			Name: "bumper/verdict", Conclusion: github.String("success"),
			Output: &github.CheckRunOutput{Title: github.String("approve"), Summary: github.String("Looks right.")}})
		if err != nil || done.GetStatus() != "completed" || done.CompletedAt == nil {
			t.Fatalf("update check run = %+v, %v", done, err)
		}
		if err := e.RerequestCheckRun(org, repo, cr.GetID(), ghemu.DefaultMaintainer); err != nil {
			t.Fatalf("rerequest: %v", err)
		}
		runs, _, err := maint.Checks.ListCheckRunsForRef(ctx, org, repo, head, nil)
		if err != nil || runs.GetTotal() != 1 || runs.CheckRuns[0].GetConclusion() != "success" {
			t.Fatalf("check runs = %+v, %v", runs, err)
		}
		_, resp, err = maint.PullRequests.Merge(ctx, org, repo, pr.GetNumber(), "", nil)
		emutest.WantStatus(t, resp, err, http.StatusMethodNotAllowed)

		// The bot comments; a writer approves (humans merge, the bot never approves).
		rv, _, err := bot.PullRequests.CreateReview(ctx, org, repo, pr.GetNumber(), &github.PullRequestReviewRequest{
			Event: github.String("COMMENT"), Body: github.String("verdict: approve")})
		if err != nil || rv.GetState() != "COMMENTED" {
			t.Fatalf("bot review = %+v, %v", rv, err)
		}
		if _, _, err := maint.PullRequests.CreateReview(ctx, org, repo, pr.GetNumber(), &github.PullRequestReviewRequest{
			Event: github.String("APPROVE")}); err != nil {
			t.Fatal(err)
		}
		reviews, _, err := maint.PullRequests.ListReviews(ctx, org, repo, pr.GetNumber(), nil)
		if err != nil || len(reviews) != 2 {
			t.Fatalf("reviews = %v, %v", reviews, err)
		}
		res, _, err := maint.PullRequests.Merge(ctx, org, repo, pr.GetNumber(), "", nil)
		if err != nil || !res.GetMerged() {
			t.Fatalf("merge = %+v, %v", res, err)
		}
		merged, _, err := maint.PullRequests.IsMerged(ctx, org, repo, pr.GetNumber())
		if err != nil || !merged {
			t.Fatalf("is merged = %v, %v", merged, err)
		}
		br, _, err := maint.Repositories.GetBranch(ctx, org, repo, "main", 0)
		if err != nil || br.GetCommit().GetSHA() != res.GetSHA() || len(br.GetCommit().Parents) != 2 {
			t.Fatalf("main after merge = %+v, %v", br.GetCommit(), err)
		}
	})

	t.Run("an author cannot approve their own pull request", func(t *testing.T) {
		emutest.BranchWithCommit(t, e, "feature", "f.txt")
		own, _, err := maint.PullRequests.Create(ctx, org, repo, &github.NewPullRequest{
			Title: github.String("mine"), Head: github.String("feature"), Base: github.String("main")})
		if err != nil {
			t.Fatal(err)
		}
		_, resp, err := maint.PullRequests.CreateReview(ctx, org, repo, own.GetNumber(), &github.PullRequestReviewRequest{
			Event: github.String("APPROVE")})
		emutest.WantStatus(t, resp, err, http.StatusUnprocessableEntity)
		closed, _, err := maint.PullRequests.Edit(ctx, org, repo, own.GetNumber(), &github.PullRequest{State: github.String("closed")})
		if err != nil || closed.GetState() != "closed" {
			t.Fatalf("close PR: %v", err)
		}
	})
}

func TestGitRefsAPI(t *testing.T) {
	t.Parallel()
	e := emutest.New(t, ghemu.Options{})
	ctx := emutest.Context(t)
	bot := emutest.InstallationClient(t, e)
	main, _, err := bot.Git.GetRef(ctx, org, repo, "heads/main")
	if err != nil {
		t.Fatal(err)
	}
	sha := main.GetObject().GetSHA()
	tests := []struct {
		name string
		ref  string
		want int
	}{
		{"create a dispatch guard ref", "refs/bumper/dispatch/1-abc-1", http.StatusCreated},
		{"the same ref again is refused (create-if-absent)", "refs/bumper/dispatch/1-abc-1", http.StatusUnprocessableEntity},
		{"a ref with one level is refused", "x", http.StatusUnprocessableEntity},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, resp, err := bot.Git.CreateRef(ctx, org, repo, &github.Reference{Ref: github.String(tt.ref),
				Object: &github.GitObject{SHA: github.String(sha)}})
			emutest.WantStatus(t, resp, err, tt.want)
		})
	}
	_, resp, err := bot.Git.CreateRef(ctx, org, repo, &github.Reference{Ref: github.String("refs/heads/x"),
		Object: &github.GitObject{SHA: github.String("0123456789012345678901234567890123456789")}})
	emutest.WantStatus(t, resp, err, http.StatusUnprocessableEntity)
	_, resp, err = bot.Git.UpdateRef(ctx, org, repo, &github.Reference{Ref: github.String("refs/heads/main"),
		Object: &github.GitObject{SHA: github.String(sha)}}, true)
	emutest.WantStatus(t, resp, err, http.StatusUnprocessableEntity) // protected
	head := emutest.BranchWithCommit(t, e, "topic", "t.txt")
	if _, _, err := bot.Git.UpdateRef(ctx, org, repo, &github.Reference{Ref: github.String("refs/heads/topic"),
		Object: &github.GitObject{SHA: github.String(sha)}}, false); err == nil {
		t.Error("a non-fast-forward update without force succeeded")
	}
	if _, _, err := bot.Git.UpdateRef(ctx, org, repo, &github.Reference{Ref: github.String("refs/heads/topic"),
		Object: &github.GitObject{SHA: github.String(sha)}}, true); err != nil {
		t.Errorf("forced update: %v", err)
	}
	_ = head
	if resp, err := bot.Git.DeleteRef(ctx, org, repo, "heads/topic"); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Errorf("delete ref: %v", err)
	}
	resp, err = bot.Git.DeleteRef(ctx, org, repo, "heads/topic")
	emutest.WantStatus(t, resp, err, http.StatusUnprocessableEntity)
}
