package rest_test

import (
	"context"
	"errors"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
)

// apiCommit makes a commit on parent adding path through the Git Data API with gh:
// a blob, a tree on the parent's, a commit, then a branch at it.
func apiCommit(t *testing.T, ctx context.Context, gh *github.Client, parent, branch, path, content string, author *github.CommitAuthor) *github.Commit {
	t.Helper()
	pc, _, err := gh.Git.GetCommit(ctx, org, repo, parent)
	if err != nil {
		t.Fatal(err)
	}
	blob, _, err := gh.Git.CreateBlob(ctx, org, repo, &github.Blob{Content: github.String(content), Encoding: github.String("utf-8")})
	if err != nil {
		t.Fatal(err)
	}
	tree, _, err := gh.Git.CreateTree(ctx, org, repo, pc.GetTree().GetSHA(), []*github.TreeEntry{
		{Path: github.String(path), Mode: github.String("100644"), Type: github.String("blob"), SHA: blob.SHA}})
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := gh.Git.CreateCommit(ctx, org, repo, &github.Commit{Message: github.String("Add " + path), Tree: tree,
		Parents: []*github.Commit{{SHA: github.String(parent)}}, Author: author}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.GetTree().GetSHA() != tree.GetSHA() || len(c.Parents) != 1 || c.Parents[0].GetSHA() != parent {
		t.Fatalf("commit %s has tree %s and parents %v, want %s and %s", c.GetSHA(), c.GetTree().GetSHA(), c.Parents, tree.GetSHA(), parent)
	}
	if branch != "" {
		if _, _, err := gh.Git.CreateRef(ctx, org, repo, &github.Reference{Ref: github.String("refs/heads/" + branch),
			Object: &github.GitObject{SHA: c.SHA}}); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func TestGitDataCommitsAreVerifiedWhenTheAppMakesThem(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	seed := ghemu.DefaultSeed()
	seed.Users = append(seed.Users, ghemu.SeedUser{Login: "owner", Name: "Olive Owner", Email: "owner@example.test"})
	seed.Repositories[0].Collaborators["owner"] = "admin"
	e := emutest.New(t, ghemu.Options{Seed: seed})
	ctx := emutest.Context(t)
	perms := map[string]string{"contents": "write", "pull_requests": "write"}
	bot := emutest.TokenClient(t, e, emutest.InstallationToken(t, e, org, repo, perms))
	maint := emutest.UserClient(t, e, ghemu.DefaultMaintainer)
	main, err := e.Git().Commit(ctx, org, repo, "main")
	if err != nil {
		t.Fatal(err)
	}

	signed := apiCommit(t, ctx, bot, main.SHA, "bumper/1-1", "a.txt", "a\n", nil)
	t.Run("an App's commit without an author of its own is verified", func(t *testing.T) {
		v := signed.GetVerification()
		if !v.GetVerified() || v.GetReason() != "valid" || v.GetSignature() == "" || v.GetPayload() == "" {
			t.Fatalf("verification = %+v", v)
		}
		if !strings.HasPrefix(v.GetPayload(), "tree "+signed.GetTree().GetSHA()+"\n") {
			t.Fatalf("payload is not the commit object: %q", v.GetPayload())
		}
		if a := signed.GetAuthor(); a.GetName() != ghemu.DefaultAppSlug+"[bot]" {
			t.Fatalf("author = %+v, want the App's bot", a)
		}
		got, _, err := maint.Repositories.GetCommit(ctx, org, repo, signed.GetSHA(), nil)
		if err != nil || !got.GetCommit().GetVerification().GetVerified() {
			t.Fatalf("GET /commits/%s: %v, %+v", signed.GetSHA(), err, got.GetCommit().GetVerification())
		}
		work := t.TempDir()
		if out, err := emutest.Git(t, ctx, "", "clone", "-q", "-b", "bumper/1-1", emutest.CloneURL(e, e.UserToken(ghemu.DefaultMaintainer)), work); err != nil {
			t.Fatalf("clone: %v\n%s", err, out)
		}
		raw, err := emutest.Git(t, ctx, work, "cat-file", "commit", signed.GetSHA())
		if err != nil || !strings.Contains(raw, "\ngpgsig -----BEGIN PGP SIGNATURE-----") {
			t.Fatalf("the commit object carries no signature: %v\n%s", err, raw)
		}
	})
	t.Run("a commit naming its own author is unsigned", func(t *testing.T) {
		c := apiCommit(t, ctx, bot, main.SHA, "", "b.txt", "b\n", &github.CommitAuthor{Name: github.String("Mallory"), Email: github.String("m@example.com")})
		if v := c.GetVerification(); v.GetVerified() || v.GetReason() != "unsigned" || v.Signature != nil {
			t.Fatalf("verification = %+v", v)
		}
	})
	t.Run("a person's commit through the API is unsigned", func(t *testing.T) {
		c := apiCommit(t, ctx, maint, main.SHA, "", "c.txt", "c\n", nil)
		if c.GetVerification().GetVerified() {
			t.Fatalf("verification = %+v", c.GetVerification())
		}
	})
	t.Run("a tree entry naming a missing blob is refused", func(t *testing.T) {
		_, resp, err := bot.Git.CreateTree(ctx, org, repo, main.Tree, []*github.TreeEntry{{Path: github.String("x"),
			Mode: github.String("100644"), Type: github.String("blob"), SHA: github.String(strings.Repeat("ab", 20))}})
		emutest.WantStatus(t, resp, err, http.StatusUnprocessableEntity)
	})

	// A pushed branch: unsigned commits, as a runner's git push makes them.
	unsignedHead := emutest.BranchWithCommit(t, e, "bumper/2-1", "d.txt")
	if err := e.SetBranchProtection(org, repo, ghemu.SeedProtection{Branch: "main", RequiredSignatures: true, EnforceAdmins: true}); err != nil {
		t.Fatal(err)
	}
	t.Run("required_signatures reads and toggles", func(t *testing.T) {
		admin := emutest.UserClient(t, e, "owner")
		_, resp, err := maint.Repositories.GetSignaturesProtectedBranch(ctx, org, repo, "main")
		emutest.WantStatus(t, resp, err, http.StatusNotFound) // a writer is not an admin
		maint := admin
		on, _, err := maint.Repositories.GetSignaturesProtectedBranch(ctx, org, repo, "main")
		if err != nil || !on.GetEnabled() {
			t.Fatalf("GET required_signatures: %v, %+v", err, on)
		}
		if _, err := maint.Repositories.OptionalSignaturesOnProtectedBranch(ctx, org, repo, "main"); err != nil {
			t.Fatal(err)
		}
		if off, _, err := maint.Repositories.GetSignaturesProtectedBranch(ctx, org, repo, "main"); err != nil || off.GetEnabled() {
			t.Fatalf("after DELETE: %v, %+v", err, off)
		}
		if on, _, err := maint.Repositories.RequireSignaturesOnProtectedBranch(ctx, org, repo, "main"); err != nil || !on.GetEnabled() {
			t.Fatalf("POST required_signatures: %v, %+v", err, on)
		}
		_, resp, err = maint.Repositories.GetSignaturesProtectedBranch(ctx, org, repo, "bumper/1-1")
		emutest.WantStatus(t, resp, err, http.StatusNotFound)
	})
	t.Run("a pull request of unsigned commits cannot merge", func(t *testing.T) {
		pr, _, err := bot.PullRequests.Create(ctx, org, repo, &github.NewPullRequest{Title: github.String("unsigned"),
			Head: github.String("bumper/2-1"), Base: github.String("main")})
		if err != nil {
			t.Fatal(err)
		}
		_, resp, err := maint.PullRequests.Merge(ctx, org, repo, pr.GetNumber(), "", nil)
		emutest.WantStatus(t, resp, err, http.StatusMethodNotAllowed)
		if !strings.Contains(err.Error(), "Commits must have verified signatures") {
			t.Fatalf("merge refused with %v", err)
		}
	})
	t.Run("an unsigned commit cannot be pushed or moved onto the branch", func(t *testing.T) {
		_, resp, err := maint.Git.UpdateRef(ctx, org, repo, &github.Reference{Ref: github.String("refs/heads/main"),
			Object: &github.GitObject{SHA: github.String(unsignedHead)}}, false)
		emutest.WantStatus(t, resp, err, http.StatusUnprocessableEntity)
		if !strings.Contains(err.Error(), "verified signatures") {
			t.Fatalf("ref update refused with %v", err)
		}
		work := t.TempDir()
		if out, err := emutest.Git(t, ctx, "", "clone", "-q", "-b", "bumper/2-1", emutest.CloneURL(e, e.UserToken(ghemu.DefaultMaintainer)), work); err != nil {
			t.Fatalf("clone: %v\n%s", err, out)
		}
		out, err := emutest.Git(t, ctx, work, "push", "origin", "HEAD:main")
		if err == nil || !strings.Contains(out, "Commits must have verified signatures") {
			t.Fatalf("push of an unsigned commit to main: %v\n%s", err, out)
		}
	})
	t.Run("a pull request of the App's verified commits merges, after GitHub updated its branch", func(t *testing.T) {
		pr, _, err := bot.PullRequests.Create(ctx, org, repo, &github.NewPullRequest{Title: github.String("signed"),
			Head: github.String("bumper/1-1"), Base: github.String("main")})
		if err != nil {
			t.Fatal(err)
		}
		// main moves on, so the pull request is behind; "Update branch" merges main in
		// with a commit GitHub's web flow signs.
		if _, err := e.PushCommit(ctx, org, repo, "main", map[string][]byte{"e.txt": []byte("e\n")}, "Add e", ghemu.DefaultMaintainer); err != nil {
			t.Fatal(err)
		}
		if _, _, err := maint.PullRequests.UpdateBranch(ctx, org, repo, pr.GetNumber(), nil); err != nil {
			var accepted *github.AcceptedError
			if !errors.As(err, &accepted) {
				t.Fatalf("update-branch: %v", err)
			}
		}
		updated, _, err := maint.PullRequests.Get(ctx, org, repo, pr.GetNumber())
		if err != nil || updated.GetHead().GetSHA() == signed.GetSHA() {
			t.Fatalf("the branch was not updated: %v", err)
		}
		got, _, err := maint.Repositories.GetCommit(ctx, org, repo, updated.GetHead().GetSHA(), nil)
		if v := got.GetCommit().GetVerification(); err != nil || len(got.Parents) != 2 || !v.GetVerified() || v.GetReason() != "valid" {
			t.Fatalf("the update's merge commit: %v, %d parents, %+v", err, len(got.Parents), v)
		}
		res, _, err := maint.PullRequests.Merge(ctx, org, repo, pr.GetNumber(), "", nil)
		if err != nil || !res.GetMerged() {
			t.Fatalf("merge: %v, %+v", err, res)
		}
		merged, _, err := maint.Git.GetCommit(ctx, org, repo, res.GetSHA())
		if err != nil || !merged.GetVerification().GetVerified() {
			t.Fatalf("the merge commit on main: %v, %+v", err, merged.GetVerification())
		}
	})
}
