package publish

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/action/workspace"
	"github.com/bumperdev/bumper/ghemu"
)

// attack is what the agent of issue #22 commits: closing keywords, a mention and
// cross-references in the message, an image from outside, a co-author, and a
// maintainer's name as its author and committer.
const attack = "Fixes #6, closes #7 @maintainer see #1\n\n![x](https://outside/x.png)\n\nCo-authored-by: Mae Maintainer <maintainer@example.test>\n"

// claimed is the author and committer the agent claims.
var claimed = []string{"GIT_AUTHOR_NAME=maintainer", "GIT_AUTHOR_EMAIL=maintainer@example.test",
	"GIT_COMMITTER_NAME=maintainer", "GIT_COMMITTER_EMAIL=maintainer@example.test"}

// TestRewriteAsTheApp is the attack as the agent makes it: commits (one a merge of a
// side branch) whose messages would close #6 and #7 on merge, mention a maintainer and
// cross-reference #1, authored as the maintainer; and an issue whose title "Fixes #7:
// crash" becomes the pull request's. After Rewrite and the push, every commit on the
// branch is the App's, with the verified trees, and says what the agent wrote without
// a live reference; merging the pull request closes #1 (its body's "Fixes #1", the
// runner's) and neither #6 nor #7.
func TestRewriteAsTheApp(t *testing.T) {
	h := newHost(t)
	ctx := testCtx(t)
	maint := apiClient(t, h.e, h.e.UserToken(ghemu.DefaultMaintainer))
	for i := 1; i <= 7; i++ {
		if _, _, err := maint.Issues.Create(ctx, owner, repoName, &github.IssueRequest{Title: github.String(fmt.Sprintf("issue %d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	w := h.prepare(t, 1, 1)
	r := agentWork(t, w, func(repo string) {
		writeFiles(t, repo, map[string]string{"widgets.sh": "echo 4\n"})
		guestGitEnv(t, repo, claimed, "commit", "-q", "-am", attack)
		guestGit(t, repo, "checkout", "-q", "-b", "side", h.base)
		writeFiles(t, repo, map[string]string{"NOTES": "side\n"})
		guestGit(t, repo, "add", "NOTES")
		guestGitEnv(t, repo, claimed, "commit", "-q", "-m", "resolves acme/widgets#6 for @acme/owners")
		guestGit(t, repo, "checkout", "-q", "bumper/1-1")
		guestGitEnv(t, repo, claimed, "merge", "-q", "--no-ff", "-m", "Merge side: fixes GH-7, https://github.com/acme/widgets/issues/6", "side")
	})
	bot, _, err := h.gh.Users.Get(ctx, botLogin)
	if err != nil {
		t.Fatal(err)
	}
	id, err := AppIdentity(botLogin, bot.GetID(), h.e.BaseURL())
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("%d+%s@users.noreply.127.0.0.1", bot.GetID(), botLogin); id.Email != want || id.Name != botLogin {
		t.Fatalf("AppIdentity = %+v, want %s <%s>", id, botLogin, want)
	}
	now := time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)
	rw, err := Rewrite(ctx, RewriteOptions{Workspace: w, Head: r.Head, Identity: id, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) string {
		out, err := w.Git(ctx, nil, 1<<20, args...)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}

	t.Run("the same trees, the App's commits", func(t *testing.T) {
		if rw.Verified != r.Head || rw.Head == r.Head || rw.Commits != 3 || r.Commits != 3 {
			t.Fatalf("Rewrite = %+v; verified head %s, %d commits", rw, r.Head, r.Commits)
		}
		if a, b := git("rev-parse", r.Head+"^{tree}"), git("rev-parse", rw.Head+"^{tree}"); a != b {
			t.Errorf("tree %s, verified %s", b, a)
		}
		if got := git("rev-parse", workspace.ResultRef, VerifiedRef); got != rw.Head+"\n"+r.Head {
			t.Errorf("refs/bumper/result and refs/bumper/verified: %q", got)
		}
		log := git("log", "--format=%an <%ae> %at|%cn <%ce> %ct|%P", rw.Head, "^"+h.base)
		want := fmt.Sprintf("%s <%s> %d", id.Name, id.Email, now.Unix())
		lines := strings.Split(log, "\n")
		for _, l := range lines {
			f := strings.Split(l, "|")
			if f[0] != want || f[1] != want {
				t.Errorf("commit by %q, committed by %q; want %q", f[0], f[1], want)
			}
		}
		if merge := strings.Fields(strings.Split(lines[0], "|")[2]); len(merge) != 2 || merge[0] == h.base || merge[1] == h.base {
			t.Errorf("the merge's parents %v are not the rewritten ones", merge)
		}
	})
	t.Run("messages say what the agent wrote, nothing live", func(t *testing.T) {
		msgs := git("log", "--format=%B%x00", rw.Head, "^"+h.base)
		for _, want := range []string{"Fixes # 6, closes # 7 @ maintainer see # 1", "![x](hxxps://outside/x.png)",
			"Agent-claimed co authored by: Mae Maintainer <maintainer@example.test>", "resolves acme/widgets# 6 for @ acme/owners",
			"fixes GH- 7, hxxps://github.com/acme/widgets/issues/6", `Agent-claimed-author: "maintainer <maintainer@example.test>"`} {
			if !strings.Contains(msgs, want) {
				t.Errorf("the messages lack %q:\n%s", want, msgs)
			}
		}
		if strings.Contains(strings.ToLower(msgs), "co-authored-by") {
			t.Errorf("a co-author trailer is left:\n%s", msgs)
		}
	})

	p, err := Push(ctx, Options{Workspace: w, GitURL: h.gitURL, Issue: 1, Attempt: 1, Head: rw.Head, Permissions: h.perms})
	if err != nil {
		t.Fatal(err)
	}
	if p.Head != rw.Head || h.refs(t)["refs/heads/bumper/1-1"] != rw.Head {
		t.Fatalf("pushed %s; the branch is at %s; want %s", p.Head, h.refs(t)["refs/heads/bumper/1-1"], rw.Head)
	}
	t.Run("the App's on the git host", func(t *testing.T) {
		c, _, err := h.gh.Repositories.GetCommit(ctx, owner, repoName, rw.Head, nil)
		if err != nil {
			t.Fatal(err)
		}
		if c.GetCommit().GetAuthor().GetEmail() != id.Email || c.GetCommit().GetCommitter().GetName() != botLogin {
			t.Errorf("the branch's head is by %s <%s>, committed by %s", c.GetCommit().GetAuthor().GetName(),
				c.GetCommit().GetAuthor().GetEmail(), c.GetCommit().GetCommitter().GetName())
		}
	})
	t.Run("merging closes what Bumper names, not what the agent wrote", func(t *testing.T) {
		pr, err := OpenPullRequest(ctx, h.gh, PullRequestOptions{Repository: fullName, Issue: 1, Attempt: 1, Base: "main",
			Title: "Fixes #7: crash", BotLogin: botLogin, Summary: "The agent changed `widgets.sh`."})
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := maint.PullRequests.Get(ctx, owner, repoName, pr.Number)
		if err != nil {
			t.Fatal(err)
		}
		if got.GetTitle() != "Fixes # 7: crash" {
			t.Errorf("title %q", got.GetTitle())
		}
		// What is asked here is what the merge closes, not who may merge.
		if err := h.e.RemoveBranchProtection(owner, repoName, "main"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := maint.PullRequests.Merge(ctx, owner, repoName, pr.Number, "", nil); err != nil {
			t.Fatal(err)
		}
		for n, want := range map[int]string{1: "closed", 6: "open", 7: "open"} {
			is, _, err := maint.Issues.Get(ctx, owner, repoName, n)
			if err != nil {
				t.Fatal(err)
			}
			if is.GetState() != want {
				t.Errorf("issue #%d is %s, want %s", n, is.GetState(), want)
			}
		}
	})
}

// TestRewriteRefusals: Rewrite works only on the verified result, as the App.
func TestRewriteRefusals(t *testing.T) {
	h := newHost(t)
	ctx := testCtx(t)
	id := Identity{Name: botLogin, Email: "1+" + botLogin + "@users.noreply.github.com"}
	fresh := h.prepare(t, 1, 1)
	if _, err := Rewrite(ctx, RewriteOptions{Workspace: fresh, Head: h.base, Identity: id}); !errors.Is(err, ErrNoResult) {
		t.Errorf("no result: %v", err)
	}
	w := h.prepare(t, 1, 1)
	r := agentCommit(t, w, map[string]string{"x.txt": "x\n"})
	for name, o := range map[string]RewriteOptions{
		"another head":    {Workspace: w, Head: h.base, Identity: id},
		"no identity":     {Workspace: w, Head: r.Head},
		"a forged author": {Workspace: w, Head: r.Head, Identity: Identity{Name: "x", Email: "a@b>\ncommitter y <y@z>"}},
		"no workspace":    {Head: r.Head, Identity: id},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Rewrite(ctx, o); !errors.Is(err, ErrInvalidOptions) {
				t.Errorf("err = %v, want ErrInvalidOptions", err)
			}
		})
	}
	out, err := w.Git(ctx, nil, 1<<10, "rev-parse", workspace.ResultRef)
	if err != nil || strings.TrimSpace(string(out)) != r.Head {
		t.Errorf("refs/bumper/result moved to %s (%v)", out, err)
	}
}

func TestAppIdentity(t *testing.T) {
	tests := []struct {
		login     string
		id        int64
		server    string
		want      string
		wantError bool
	}{
		{"bumper[bot]", 41898282, "https://github.com", "41898282+bumper[bot]@users.noreply.github.com", false},
		{"bumper[bot]", 7, "https://www.github.com/", "7+bumper[bot]@users.noreply.github.com", false},
		{"bumper[bot]", 7, "https://ghe.example.com", "7+bumper[bot]@users.noreply.ghe.example.com", false},
		{"bumper[bot]", 0, "https://github.com", "bumper[bot]@users.noreply.github.com", false},
		{"maintainer", 7, "https://github.com", "", true},
		{"[bot]", 7, "https://github.com", "", true},
		{"a b[bot]", 7, "https://github.com", "", true},
		{"bumper[bot]", 7, "not a URL", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.login+" "+tt.server, func(t *testing.T) {
			got, err := AppIdentity(tt.login, tt.id, tt.server)
			if tt.wantError {
				if !errors.Is(err, ErrInvalidOptions) {
					t.Fatalf("AppIdentity = %+v, %v; want ErrInvalidOptions", got, err)
				}
				return
			}
			if err != nil || got.Email != tt.want || got.Name != tt.login {
				t.Fatalf("AppIdentity = %+v, %v; want %s", got, err, tt.want)
			}
		})
	}
}

func TestRewriteMessage(t *testing.T) {
	agent := workspace.DefaultIdentity
	self := agent.Name + " <" + agent.Email + ">"
	tests := []struct{ name, msg, claimed, want string }{
		{"the agent's own identity needs no trailer", "Count widgets\n\nFixes #3\n", self, "Count widgets\n\nFixes # 3\n"},
		{"another author is quoted", "x", "@maint <m@x.test>", "x\n\nAgent-claimed-author: \"@ maint <m@x.test>\"\n"},
		{"a quote in the author stays inside the quotes", "x", `a" b <c@d>`, "x\n\nAgent-claimed-author: \"a\\\" b <c@d>\"\n"},
		{"line ends, trailing space", "a\r\nb\rc \n\n\n", self, "a\nb\nc\n"},
		{"credit trailers", "x\n\nco-AUTHORED-by : M <m@x>\nOn-behalf-of: @acme <a@acme.test>", self,
			"x\n\nAgent-claimed co authored by: M <m@x>\nAgent-claimed on behalf of: @ acme <a@acme.test>\n"},
		{"empty", " \n", self, "(no message)\n"},
		{"hidden characters", "Fix\u202e #1", self, "Fix[U+202E] # 1\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rewriteMessage(tt.msg, tt.claimed, agent); got != tt.want {
				t.Errorf("rewriteMessage = %q, want %q", got, tt.want)
			}
		})
	}
	long := rewriteMessage(strings.Repeat("é", MaxMessageBytes), self, agent)
	if len(long) > MaxMessageBytes+100 || !strings.Contains(long, "(message cut at") {
		t.Errorf("a long message is %d bytes: %.80q", len(long), long[len(long)-80:])
	}
}
