package rest_test

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
)

func TestGitCloneAndPushFollowGitHubRules(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	rc, hook := emutest.NewReceiver(t, 0)
	e := emutest.New(t, ghemu.Options{WebhookURL: hook, WebhookSecret: emutest.HookSecret})
	ctx := emutest.Context(t)
	app := emutest.AppClient(t, e)
	tok, _, err := app.Apps.CreateInstallationToken(ctx, e.InstallationID(org), &github.InstallationTokenOptions{
		Repositories: []string{repo},
		Permissions: &github.InstallationPermissions{Contents: github.String("write"),
			PullRequests: github.String("write")},
	})
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(t.TempDir(), "w")
	if out, err := emutest.Git(t, ctx, "", "clone", emutest.CloneURL(e, tok.GetToken()), work); err != nil {
		t.Fatalf("clone: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(work, "README.md")); err != nil {
		t.Fatalf("the seeded commit is not in the clone: %v", err)
	}
	if err := os.WriteFile(filepath.Join(work, "frob.txt"), []byte("frob\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"checkout", "-b", "bumper/1-1"}, {"add", "."}, {"commit", "-m", "Add frob"}} {
		if out, err := emutest.Git(t, ctx, work, args...); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}

	t.Run("a protected branch refuses direct pushes", func(t *testing.T) {
		out, err := emutest.Git(t, ctx, work, "push", "origin", "HEAD:main")
		if err == nil || !strings.Contains(out, "GH006") {
			t.Fatalf("push to main: err=%v\n%s", err, out)
		}
	})
	t.Run("a read-only token cannot push", func(t *testing.T) {
		ro, _, err := app.Apps.CreateInstallationToken(ctx, e.InstallationID(org), &github.InstallationTokenOptions{
			Permissions: &github.InstallationPermissions{Contents: github.String("read")},
		})
		if err != nil {
			t.Fatal(err)
		}
		out, err := emutest.Git(t, ctx, work, "push", emutest.CloneURL(e, ro.GetToken()), "HEAD:refs/heads/bumper/1-1")
		if err == nil {
			t.Fatalf("push with contents:read succeeded:\n%s", out)
		}
	})
	t.Run("a wrong token cannot clone", func(t *testing.T) {
		out, err := emutest.Git(t, ctx, "", "clone", emutest.CloneURL(e, "ghs_wrong"), filepath.Join(t.TempDir(), "x"))
		if err == nil {
			t.Fatalf("clone with a wrong token succeeded:\n%s", out)
		}
	})

	var head string
	t.Run("a pushed branch shows up in the REST API", func(t *testing.T) {
		if out, err := emutest.Git(t, ctx, work, "push", "origin", "bumper/1-1"); err != nil {
			t.Fatalf("push: %v\n%s", err, out)
		}
		out, _ := emutest.Git(t, ctx, work, "rev-parse", "HEAD")
		head = strings.TrimSpace(out)
		c := emutest.TokenClient(t, e, tok.GetToken())
		ref, _, err := c.Git.GetRef(ctx, org, repo, "heads/bumper/1-1")
		if err != nil || ref.GetObject().GetSHA() != head {
			t.Fatalf("ref = %+v, %v; want %s", ref, err, head)
		}
		br, _, err := c.Repositories.GetBranch(ctx, org, repo, "bumper/1-1", 0)
		if err != nil || br.GetCommit().GetSHA() != head || br.GetProtected() {
			t.Fatalf("branch = %+v, %v", br, err)
		}
		refs, _, err := c.Git.ListMatchingRefs(ctx, org, repo, &github.ReferenceListOptions{Ref: "heads/bumper"})
		if err != nil || len(refs) != 1 {
			t.Fatalf("matching refs = %v, %v", refs, err)
		}
	})

	t.Run("pushing to a pull request's branch synchronizes it", func(t *testing.T) {
		c := emutest.TokenClient(t, e, tok.GetToken())
		pr, _, err := c.PullRequests.Create(ctx, org, repo, &github.NewPullRequest{
			Title: github.String("Add frob"), Head: github.String("bumper/1-1"), Base: github.String("main")})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, "frob.txt"), []byte("frob2\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"commit", "-am", "More frob"}, {"push", "origin", "bumper/1-1"}} {
			if out, err := emutest.Git(t, ctx, work, args...); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
		out, _ := emutest.Git(t, ctx, work, "rev-parse", "HEAD")
		got, _, err := c.PullRequests.Get(ctx, org, repo, pr.GetNumber())
		if err != nil || got.GetHead().GetSHA() != strings.TrimSpace(out) {
			t.Fatalf("PR head = %s, want %s (%v)", got.GetHead().GetSHA(), out, err)
		}
		if err := e.WaitWebhooks(ctx); err != nil {
			t.Fatal(err)
		}
		var sync *github.PullRequestEvent
		for _, ev := range rc.Got() {
			if p, ok := ev.Payload.(*github.PullRequestEvent); ok && p.GetAction() == "synchronize" {
				sync = p
			}
		}
		if sync == nil || sync.GetAfter() != strings.TrimSpace(out) || sync.GetBefore() != head ||
			sync.GetSender().GetLogin() != ghemu.DefaultAppSlug+"[bot]" {
			t.Fatalf("synchronize event = %+v", sync)
		}
	})
}

func TestContentsAndCommits(t *testing.T) {
	t.Parallel()
	e := emutest.New(t, ghemu.Options{})
	ctx := emutest.Context(t)
	c := emutest.UserClient(t, e, ghemu.DefaultMaintainer)
	f, _, _, err := c.Repositories.GetContents(ctx, org, repo, ".github/workflows/"+ghemu.DefaultWorkflow, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := f.GetContent()
	if err != nil || !strings.Contains(body, "workflow_dispatch") {
		t.Fatalf("content = %q, %v", body, err)
	}
	_, _, resp, err := c.Repositories.GetContents(ctx, org, repo, ".github/bumper.yml", nil)
	emutest.WantStatus(t, resp, err, 404)
	br, _, err := c.Repositories.GetBranch(ctx, org, repo, "main", 0)
	if err != nil || !br.GetProtected() {
		t.Fatalf("main = %+v, %v", br, err)
	}
	cm, _, err := c.Repositories.GetCommit(ctx, org, repo, br.GetCommit().GetSHA(), nil)
	if err != nil || cm.GetSHA() != br.GetCommit().GetSHA() || cm.GetCommit().GetMessage() == "" {
		t.Fatalf("commit = %+v, %v", cm, err)
	}
	prot, _, err := emutest.InstallationClient(t, e).Repositories.GetBranchProtection(ctx, org, repo, "main")
	if err != nil || len(prot.GetRequiredStatusChecks().GetContexts()) != 1 {
		t.Fatalf("protection = %+v, %v; want the bumper/verdict check required", prot, err)
	}
	_, resp, err = c.Repositories.GetBranchProtection(ctx, org, repo, "main")
	emutest.WantStatus(t, resp, err, 404)
}

func TestGitAnonymousAccessToAPublicRepository(t *testing.T) {
	seed := ghemu.DefaultSeed()
	seed.Repositories[0].Private = false
	e := emutest.New(t, ghemu.Options{Seed: seed})
	ctx := emutest.Context(t)
	for _, tc := range []struct {
		name    string
		service string
		want    int
	}{
		{"anyone may fetch", "git-upload-pack", http.StatusOK},
		{"pushing needs a credential", "git-receive-pack", http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := e.BaseURL() + "/" + org + "/" + repo + ".git/info/refs?service=" + tc.service
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("GET info/refs?service=%s without credentials: status %d, want %d", tc.service, resp.StatusCode, tc.want)
			}
		})
	}
}
