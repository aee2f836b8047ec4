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

// TestPushWebhooks: every move of a branch or a tag sends push, as GitHub does, however
// it moved (git over HTTP, the refs API, a merge, the emulator's PushCommit), with
// before, after, created, deleted, forced, the commits it brought and the pusher; refs
// outside branches and tags (Bumper's dispatch guards) send none.
func TestPushWebhooks(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	rc, url := emutest.NewReceiver(t, 0)
	e := emutest.New(t, ghemu.Options{WebhookURL: url, WebhookSecret: emutest.HookSecret})
	ctx := emutest.Context(t)
	bot := emutest.InstallationClient(t, e)
	maint := emutest.UserClient(t, e, ghemu.DefaultMaintainer)
	main, _, err := bot.Git.GetRef(ctx, org, repo, "heads/main")
	if err != nil {
		t.Fatal(err)
	}
	mainSHA := main.GetObject().GetSHA()

	work := filepath.Join(t.TempDir(), "w")
	if out, err := emutest.Git(t, ctx, "", "clone", emutest.CloneURL(e, e.UserToken(ghemu.DefaultMaintainer)), work); err != nil {
		t.Fatalf("clone: %v\n%s", err, out)
	}
	commit := func(t *testing.T, file string) string {
		t.Helper()
		if err := os.WriteFile(filepath.Join(work, file), []byte(file+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"add", "."}, {"commit", "-m", "Add " + file}} {
			if out, err := emutest.Git(t, ctx, work, args...); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
		out, _ := emutest.Git(t, ctx, work, "rev-parse", "HEAD")
		return strings.TrimSpace(out)
	}
	zero := strings.Repeat("0", 40)
	var first string
	tests := []struct {
		name string
		move func(t *testing.T) (ref, before, after string)
		// commits are the messages the push lists; nil when no push is sent.
		commits        []string
		created, gone  bool
		forced, silent bool
	}{
		{name: "git pushes a new branch", move: func(t *testing.T) (string, string, string) {
			if out, err := emutest.Git(t, ctx, work, "checkout", "-b", "topic"); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			first = commit(t, "one.txt")
			if out, err := emutest.Git(t, ctx, work, "push", "origin", "topic"); err != nil {
				t.Fatalf("push: %v\n%s", err, out)
			}
			return "refs/heads/topic", "", first
		}, commits: []string{"Add one.txt"}, created: true},
		{name: "git pushes two more commits", move: func(t *testing.T) (string, string, string) {
			commit(t, "two.txt")
			after := commit(t, "three.txt")
			if out, err := emutest.Git(t, ctx, work, "push", "origin", "topic"); err != nil {
				t.Fatalf("push: %v\n%s", err, out)
			}
			return "refs/heads/topic", first, after
		}, commits: []string{"Add two.txt", "Add three.txt"}},
		{name: "the refs API forces the branch back", move: func(t *testing.T) (string, string, string) {
			ref, _, _ := bot.Git.GetRef(ctx, org, repo, "heads/topic")
			if _, _, err := bot.Git.UpdateRef(ctx, org, repo, &github.Reference{Ref: github.String("refs/heads/topic"),
				Object: &github.GitObject{SHA: github.String(first)}}, true); err != nil {
				t.Fatal(err)
			}
			return "refs/heads/topic", ref.GetObject().GetSHA(), first
		}, commits: []string{}, forced: true},
		{name: "the refs API creates a tag", move: func(t *testing.T) (string, string, string) {
			if _, _, err := bot.Git.CreateRef(ctx, org, repo, &github.Reference{Ref: github.String("refs/tags/v1"),
				Object: &github.GitObject{SHA: github.String(mainSHA)}}); err != nil {
				t.Fatal(err)
			}
			return "refs/tags/v1", "", mainSHA
		}, commits: []string{}, created: true},
		{name: "a dispatch guard ref sends nothing", move: func(t *testing.T) (string, string, string) {
			if _, _, err := bot.Git.CreateRef(ctx, org, repo, &github.Reference{Ref: github.String("refs/bumper/dispatch/1-x-1"),
				Object: &github.GitObject{SHA: github.String(mainSHA)}}); err != nil {
				t.Fatal(err)
			}
			return "refs/bumper/dispatch/1-x-1", "", mainSHA
		}, silent: true},
		{name: "the refs API deletes the branch", move: func(t *testing.T) (string, string, string) {
			if resp, err := bot.Git.DeleteRef(ctx, org, repo, "heads/topic"); err != nil || resp.StatusCode != http.StatusNoContent {
				t.Fatalf("delete: %v", err)
			}
			return "refs/heads/topic", first, ""
		}, commits: []string{}, gone: true},
		{name: "a push past protection to main", move: func(t *testing.T) (string, string, string) {
			after, err := e.PushCommit(ctx, org, repo, "main", map[string][]byte{"NEWS": []byte("busy\n")}, "News on main", ghemu.DefaultMaintainer)
			if err != nil {
				t.Fatal(err)
			}
			return "refs/heads/main", mainSHA, after
		}, commits: []string{"News on main"}},
	}
	seen := 0
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref, before, after := tt.move(t)
			pushes := hooksOf[*github.PushEvent](t, e, rc, "")
			if tt.silent {
				if len(pushes) != seen {
					t.Fatalf("a push webhook for %s", ref)
				}
				return
			}
			if len(pushes) != seen+1 {
				t.Fatalf("push webhooks = %d, want %d", len(pushes), seen+1)
			}
			seen++
			p := pushes[len(pushes)-1]
			wantBefore, wantAfter := before, after
			if wantBefore == "" {
				wantBefore = zero
			}
			if wantAfter == "" {
				wantAfter = zero
			}
			var msgs []string
			for _, c := range p.Commits {
				msgs = append(msgs, c.GetMessage())
			}
			if p.GetRef() != ref || p.GetBefore() != wantBefore || p.GetAfter() != wantAfter || p.GetCreated() != tt.created ||
				p.GetDeleted() != tt.gone || p.GetForced() != tt.forced || strings.Join(msgs, "|") != strings.Join(tt.commits, "|") {
				t.Fatalf("push = ref %s %s..%s created %v deleted %v forced %v commits %q", p.GetRef(), p.GetBefore(), p.GetAfter(),
					p.GetCreated(), p.GetDeleted(), p.GetForced(), msgs)
			}
			if (after == "") != (p.GetHeadCommit() == nil) || (after != "" && p.GetHeadCommit().GetID() != after) {
				t.Errorf("head_commit = %+v, want %s", p.GetHeadCommit(), after)
			}
		})
	}
	news := hooksOf[*github.PushEvent](t, e, rc, "")
	last := news[len(news)-1]
	if last.GetPusher().GetName() != ghemu.DefaultMaintainer || last.GetSender().GetLogin() != ghemu.DefaultMaintainer ||
		last.Commits[0].GetAuthor().GetLogin() != ghemu.DefaultMaintainer || len(last.Commits[0].Added) != 1 || last.Commits[0].Added[0] != "NEWS" {
		t.Errorf("the push to main names pusher %+v, sender %s, commit %+v", last.GetPusher(), last.GetSender().GetLogin(), last.Commits[0])
	}
	_ = maint
}
