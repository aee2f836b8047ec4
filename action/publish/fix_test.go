package publish

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/action/workspace"
	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/internal/testgate"
)

// TestFixRound: a fix run starts at its pull request's head on the pull request's
// branch, pushes its commit there as a fast-forward, finds the pull request the App
// opened (no new one), and comments its evidence on it. A pull request that is not the
// run's (a maintainer's, or one whose head is not the pushed commit) gets nothing.
func TestFixRound(t *testing.T) {
	testgate.Slow(t, "fix rounds through a real gateway, seconds")
	h := newHost(t)
	ctx := testCtx(t)
	w := h.prepare(t, 1, 1)
	r := agentCommit(t, w, map[string]string{"widgets.sh": "echo 4\n"})
	if _, err := Push(ctx, Options{Workspace: w, GitURL: h.gitURL, Issue: 1, Attempt: 1, Head: r.Head}); err != nil {
		t.Fatal(err)
	}
	pr, err := OpenPullRequest(ctx, h.gh, PullRequestOptions{Repository: fullName, Issue: 1, Attempt: 1, Base: "main", Title: "Count", BotLogin: botLogin, Evidence: runEvidence(t, h, r, 1, 1)})
	if err != nil {
		t.Fatal(err)
	}
	fw, err := workspace.Prepare(ctx, workspace.Options{GitURL: h.gitURL, Base: h.base, Issue: 1, Attempt: 2, Branch: "bumper/1-1", Start: r.Head,
		Dir: t.TempDir(), Task: map[string][]byte{"TASK.md": []byte("# Fix the checks\n")}})
	if err != nil {
		t.Fatal(err)
	}
	defer fw.Close()
	fr := agentCommit(t, fw, map[string]string{"widgets.sh": "echo 4 # fixed\n"})
	if fr.Base != r.Head || fr.Commits != 1 {
		t.Fatalf("the fix round's result %+v does not start at the pull request's head %s", fr, r.Head)
	}
	p, err := Push(ctx, Options{Workspace: fw, GitURL: h.gitURL, Issue: 1, Attempt: 2, Branch: "bumper/1-1", Head: fr.Head})
	if err != nil {
		t.Fatal(err)
	}
	if p.Ref != "refs/heads/bumper/1-1" || h.refs(t)["refs/heads/bumper/1-1"] != fr.Head {
		t.Fatalf("pushed %+v; the branch is at %s", p, h.refs(t)["refs/heads/bumper/1-1"])
	}
	o := ExistingPullOptions{Repository: fullName, Number: pr.Number, Branch: "bumper/1-1", Issue: 1, Head: fr.Head, BotLogin: botLogin, Wait: time.Second}
	got, err := ExistingPull(ctx, h.gh, o)
	if err != nil || got.Number != pr.Number || got.HeadSHA != fr.Head {
		t.Fatalf("ExistingPull = %+v, %v", got, err)
	}
	ev := runEvidence(t, h, fr, 1, 2)
	url, err := CommentEvidence(ctx, h.gh, fullName, pr.Number, "Fix round for #1", ev)
	if err != nil || url == "" {
		t.Fatalf("CommentEvidence = %q, %v", url, err)
	}
	cs, _, err := h.gh.Issues.ListComments(ctx, owner, repoName, pr.Number, nil)
	if err != nil || len(cs) != 1 || !strings.HasPrefix(cs[0].GetBody(), "Fix round for #1\n\n") || !strings.Contains(cs[0].GetBody(), fr.Head[:12]) {
		t.Fatalf("comments on #%d: %d (%v)", pr.Number, len(cs), err)
	}
	if prs, _, _ := h.gh.PullRequests.List(ctx, owner, repoName, nil); len(prs) != 1 {
		t.Fatalf("%d pull requests, want the one", len(prs))
	}

	mae := apiClient(t, h.e, h.e.UserToken(ghemu.DefaultMaintainer))
	if _, _, err := mae.Git.CreateRef(ctx, owner, repoName, &github.Reference{Ref: github.String("refs/heads/mine"), Object: &github.GitObject{SHA: github.String(fr.Head)}}); err != nil {
		t.Fatal(err)
	}
	theirs, _, err := mae.PullRequests.Create(ctx, owner, repoName, &github.NewPullRequest{Title: github.String("mine"), Head: github.String("mine"), Base: github.String("main")})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		change func(*ExistingPullOptions)
		want   string
	}{
		{"a maintainer's pull request from the branch", func(o *ExistingPullOptions) { o.Number = theirs.GetNumber() }, "not the App"},
		{"a head that is not the pushed commit", func(o *ExistingPullOptions) { o.Head = r.Head }, "not the pushed"},
		{"another branch", func(o *ExistingPullOptions) { o.Branch = "bumper/1-2" }, "not bumper/1-2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := o
			tt.change(&o)
			if _, err := ExistingPull(ctx, h.gh, o); !errors.Is(err, ErrNotTheRunsPull) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ExistingPull = %v; want ErrNotTheRunsPull saying %q", err, tt.want)
			}
		})
	}
	if _, err := Push(ctx, Options{Workspace: fw, GitURL: h.gitURL, Issue: 1, Attempt: 2, Branch: "bumper/2-1", Head: fr.Head}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("a push to another issue's branch: %v", err)
	}
}
