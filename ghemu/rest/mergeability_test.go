package rest_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
	"github.com/bumperdev/bumper/ghemu/gitserver"
)

// branchFrom makes branch from base's tip with one commit of files (nil deletes),
// through git plumbing (no webhook), and returns the commit.
func branchFrom(t *testing.T, e *ghemu.Emulator, base, branch string, files map[string]string) string {
	t.Helper()
	ctx := emutest.Context(t)
	refs, err := e.Git().Refs(ctx, org, repo)
	if err != nil {
		t.Fatal(err)
	}
	tip := refs["refs/heads/"+base]
	if err := e.Git().UpdateRef(ctx, org, repo, "refs/heads/"+branch, tip, ""); err != nil {
		t.Fatal(err)
	}
	content := map[string][]byte{}
	for p, c := range files {
		content[p] = []byte(c)
	}
	sha, err := e.Git().CommitFiles(ctx, org, repo, branch, tip, content, "Change "+branch,
		gitserver.Signature{Name: "bumper", Email: "bumper@example.test"})
	if err != nil {
		t.Fatal(err)
	}
	return sha
}

// openPull opens a pull request from head into base as the App.
func openPull(t *testing.T, e *ghemu.Emulator, base, head string, draft bool) *github.PullRequest {
	t.Helper()
	pr, resp, err := emutest.InstallationClient(t, e).PullRequests.Create(emutest.Context(t), org, repo, &github.NewPullRequest{
		Title: github.String("Change " + head), Head: github.String(head), Base: github.String(base), Draft: github.Bool(draft)})
	emutest.WantStatus(t, resp, err, http.StatusCreated)
	return pr
}

// TestMergeability: mergeable and mergeable_state come from a real merge of the head
// into the base, with branch protection: clean, dirty on a conflict, draft, blocked
// while protection is unmet, behind only when protection requires an up-to-date head,
// unstable when a check that is not required failed. A new pull request, and its
// opened and synchronize webhooks, say null and unknown, as GitHub's do before its
// background job ends; the next GET has the answer.
func TestMergeability(t *testing.T) {
	rc, url := emutest.NewReceiver(t, 0)
	e := emutest.New(t, ghemu.Options{WebhookURL: url, WebhookSecret: emutest.HookSecret})
	ctx := emutest.Context(t)
	bot := emutest.InstallationClient(t, e)
	maint := emutest.UserClient(t, e, ghemu.DefaultMaintainer)
	// Two more bases beside the seed's main (a check and a review, pinned verdict):
	// "open", unprotected, and "strict", which requires the check "ci" and an
	// up-to-date head.
	branchFrom(t, e, "main", "open", map[string]string{"OPEN": "1\n"})
	branchFrom(t, e, "main", "strict", map[string]string{"STRICT": "1\n"})
	if err := e.SetBranchProtection(org, repo, ghemu.SeedProtection{Branch: "strict", RequiredChecks: []string{"ci"}, Strict: true}); err != nil {
		t.Fatal(err)
	}
	passCI := func(t *testing.T, sha string) {
		t.Helper()
		_, resp, err := bot.Checks.CreateCheckRun(ctx, org, repo, github.CreateCheckRunOptions{Name: "ci", HeadSHA: sha,
			Status: github.String("completed"), Conclusion: github.String("success")})
		emutest.WantStatus(t, resp, err, http.StatusCreated)
	}
	tests := []struct {
		name      string
		base      string
		files     map[string]string
		draft     bool
		then      func(t *testing.T, pr *github.PullRequest)
		state     string
		mergeable bool
	}{
		{name: "clean", base: "open", files: map[string]string{"a.txt": "a\n"}, state: "clean", mergeable: true},
		{name: "dirty: the base changed the same lines", base: "open", files: map[string]string{"README.md": "# widgets, said the branch\n"},
			then: func(t *testing.T, pr *github.PullRequest) {
				if _, err := e.PushCommit(ctx, org, repo, "open", map[string][]byte{"README.md": []byte("# widgets, said main\n")}, "Reword the README", ghemu.DefaultMaintainer); err != nil {
					t.Fatal(err)
				}
			}, state: "dirty", mergeable: false},
		{name: "a draft", base: "open", files: map[string]string{"d.txt": "d\n"}, draft: true, state: "draft", mergeable: true},
		{name: "blocked: main wants the verdict and a review", base: "main", files: map[string]string{"b.txt": "b\n"}, state: "blocked", mergeable: true},
		{name: "unstable: a check that is not required failed", base: "open", files: map[string]string{"u.txt": "u\n"},
			then: func(t *testing.T, pr *github.PullRequest) {
				_, resp, err := bot.Checks.CreateCheckRun(ctx, org, repo, github.CreateCheckRunOptions{Name: "lint", HeadSHA: pr.GetHead().GetSHA(),
					Status: github.String("completed"), Conclusion: github.String("failure")})
				emutest.WantStatus(t, resp, err, http.StatusCreated)
			}, state: "unstable", mergeable: true},
		{name: "behind without strict protection is clean", base: "open", files: map[string]string{"c.txt": "c\n"},
			then: func(t *testing.T, pr *github.PullRequest) {
				if _, err := e.PushCommit(ctx, org, repo, "open", map[string][]byte{"NEWS": []byte("busy day\n")}, "News", ghemu.DefaultMaintainer); err != nil {
					t.Fatal(err)
				}
			}, state: "clean", mergeable: true},
		{name: "blocked before behind: the check is missing", base: "strict", files: map[string]string{"s.txt": "s\n"},
			then: func(t *testing.T, pr *github.PullRequest) {
				if _, err := e.PushCommit(ctx, org, repo, "strict", map[string][]byte{"NEWS": []byte("busy day\n")}, "News", ghemu.DefaultMaintainer); err != nil {
					t.Fatal(err)
				}
			}, state: "blocked", mergeable: true},
		{name: "behind: strict protection, the check passed, the base moved", base: "strict", files: map[string]string{"t.txt": "t\n"},
			then: func(t *testing.T, pr *github.PullRequest) {
				passCI(t, pr.GetHead().GetSHA())
				if _, err := e.PushCommit(ctx, org, repo, "strict", map[string][]byte{"MORE": []byte("busier\n")}, "More news", ghemu.DefaultMaintainer); err != nil {
					t.Fatal(err)
				}
			}, state: "behind", mergeable: true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			head := "topic-" + itoa(i)
			branchFrom(t, e, tt.base, head, tt.files)
			pr := openPull(t, e, tt.base, head, tt.draft)
			if pr.Mergeable != nil || pr.GetMergeableState() != "unknown" {
				t.Errorf("the new pull request says mergeable %v, %q; GitHub says null, unknown", pr.Mergeable, pr.GetMergeableState())
			}
			if tt.then != nil {
				tt.then(t, pr)
			}
			got, _, err := maint.PullRequests.Get(ctx, org, repo, pr.GetNumber())
			if err != nil || got.GetMergeableState() != tt.state || got.Mergeable == nil || *got.Mergeable != tt.mergeable ||
				got.GetRebaseable() != tt.mergeable {
				t.Fatalf("mergeable %v, state %q (%v); want %v, %q", got.Mergeable, got.GetMergeableState(), err, tt.mergeable, tt.state)
			}
		})
	}
	opened := hooksOf[*github.PullRequestEvent](t, e, rc, "opened")
	if len(opened) != len(tests) || opened[0].GetPullRequest().Mergeable != nil || opened[0].GetPullRequest().GetMergeableState() != "unknown" {
		t.Errorf("pull_request opened says %v, %q; want null, unknown", opened[0].GetPullRequest().Mergeable, opened[0].GetPullRequest().GetMergeableState())
	}

	t.Run("a behind pull request under strict protection does not merge, an updated one does", func(t *testing.T) {
		behind := tests[len(tests)-1]
		prs, _, err := maint.PullRequests.List(ctx, org, repo, &github.PullRequestListOptions{Base: behind.base, Head: org + ":topic-" + itoa(len(tests)-1)})
		if err != nil || len(prs) != 1 {
			t.Fatalf("pull requests = %v, %v", prs, err)
		}
		pr := prs[0]
		_, resp, err := maint.PullRequests.Merge(ctx, org, repo, pr.GetNumber(), "", nil)
		emutest.WantStatus(t, resp, err, http.StatusConflict)
		if !strings.Contains(err.Error(), "Head branch is out of date") {
			t.Errorf("merge error = %v", err)
		}
		_, resp, err = maint.PullRequests.UpdateBranch(ctx, org, repo, pr.GetNumber(), &github.PullRequestBranchUpdateOptions{ExpectedHeadSHA: github.String(pr.GetHead().GetSHA())})
		var accepted *github.AcceptedError
		if resp == nil || resp.StatusCode != http.StatusAccepted || !errors.As(err, &accepted) {
			t.Fatalf("update-branch = %v, %v", resp, err)
		}
		updated, _, err := maint.PullRequests.Get(ctx, org, repo, pr.GetNumber())
		if err != nil || updated.GetMergeableState() != "blocked" { // the new head has no ci check yet
			t.Fatalf("after the update: %q, %v; want blocked (the check must run on the new head)", updated.GetMergeableState(), err)
		}
		passCI(t, updated.GetHead().GetSHA())
		if _, _, err := maint.PullRequests.Merge(ctx, org, repo, pr.GetNumber(), "", nil); err != nil {
			t.Fatalf("merging the updated pull request: %v", err)
		}
	})
}

// TestUpdateBranch: PUT …/update-branch merges the base into the head branch (a merge
// commit whose first parent is the old head, the caller's, committed by GitHub), with
// pull_request synchronize and push; and refuses, in GitHub's words, a head that moved,
// a head that is not behind, a conflict, a reader and an App token without contents
// write.
func TestUpdateBranch(t *testing.T) {
	rc, url := emutest.NewReceiver(t, 0)
	e := emutest.New(t, ghemu.Options{WebhookURL: url, WebhookSecret: emutest.HookSecret})
	ctx := emutest.Context(t)
	maint := emutest.UserClient(t, e, ghemu.DefaultMaintainer)
	reader := emutest.UserClient(t, e, ghemu.DefaultReader)
	noContents := emutest.TokenClient(t, e, emutest.InstallationToken(t, e, org, repo, map[string]string{"pull_requests": "write", "contents": "read"}))

	branchFrom(t, e, "main", "base", map[string]string{"BASE": "1\n"})
	up := branchFrom(t, e, "base", "stale", map[string]string{"widgets.sh": "#!/bin/sh\necho 4\n"})
	clash := branchFrom(t, e, "base", "clash", map[string]string{"README.md": "# mine\n"})
	stale := openPull(t, e, "base", "stale", false)
	clashing := openPull(t, e, "base", "clash", false)
	moved, err := e.PushCommit(ctx, org, repo, "base", map[string][]byte{"README.md": []byte("# theirs\n")}, "Reword the README on base", ghemu.DefaultMaintainer)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		client   *github.Client
		pr       *github.PullRequest
		expected string
		status   int
		message  string
	}{
		{"the head moved since it was read", maint, stale, clash, http.StatusUnprocessableEntity, "expected head sha didn’t match current head ref."},
		{"a conflict", maint, clashing, clash, http.StatusUnprocessableEntity, "merge conflict between base and head"},
		{"a reader may not", reader, stale, up, http.StatusForbidden, ""},
		{"an App token without contents write may not", noContents, stale, up, http.StatusForbidden, ""},
		{"the maintainer updates it", maint, stale, up, http.StatusAccepted, ""},
		{"then it is not behind", maint, stale, "", http.StatusUnprocessableEntity, "There are no new commits on the base branch."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := &github.PullRequestBranchUpdateOptions{}
			if tt.expected != "" {
				opts.ExpectedHeadSHA = github.String(tt.expected)
			}
			_, resp, err := tt.client.PullRequests.UpdateBranch(ctx, org, repo, tt.pr.GetNumber(), opts)
			if resp == nil || resp.StatusCode != tt.status {
				t.Fatalf("update-branch = %v, %v; want %d", resp, err, tt.status)
			}
			if tt.message != "" && (err == nil || !strings.Contains(err.Error(), tt.message)) {
				t.Errorf("error = %v, want %q", err, tt.message)
			}
		})
	}
	got, _, err := maint.PullRequests.Get(ctx, org, repo, stale.GetNumber())
	if err != nil {
		t.Fatal(err)
	}
	merge, _, err := maint.Repositories.GetCommit(ctx, org, repo, got.GetHead().GetSHA(), nil)
	if err != nil || len(merge.Parents) != 2 || merge.Parents[0].GetSHA() != up || merge.Parents[1].GetSHA() != moved ||
		merge.GetCommit().GetMessage() != "Merge branch 'base' into stale" ||
		merge.GetCommit().GetAuthor().GetEmail() != "maintainer@example.test" || merge.GetCommit().GetCommitter().GetName() != "GitHub" {
		t.Fatalf("the update's commit = %+v, %v", merge, err)
	}
	syncs := hooksOf[*github.PullRequestEvent](t, e, rc, "synchronize")
	if len(syncs) != 1 || syncs[0].GetBefore() != up || syncs[0].GetAfter() != got.GetHead().GetSHA() ||
		syncs[0].GetSender().GetLogin() != ghemu.DefaultMaintainer || syncs[0].GetPullRequest().Mergeable != nil {
		t.Fatalf("pull_request synchronize = %+v", syncs)
	}
	var pushed *github.PushEvent
	for _, p := range hooksOf[*github.PushEvent](t, e, rc, "") {
		if p.GetRef() == "refs/heads/stale" {
			pushed = p
		}
	}
	if pushed == nil || pushed.GetBefore() != up || pushed.GetHeadCommit().GetID() != got.GetHead().GetSHA() || pushed.GetForced() {
		t.Fatalf("push of the updated branch = %+v", pushed)
	}
}
