package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/rs/zerolog"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"

	"github.com/bumperdev/bumper/action/appclient"
	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/publish"
	"github.com/bumperdev/bumper/action/workspace"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
	"github.com/bumperdev/bumper/ghemu/gitserver"
	"github.com/bumperdev/bumper/internal/repoconfig"
	"github.com/bumperdev/bumper/internal/testgate"
)

// TestRoundConventions: a review round's agent is told to answer the comments and how
// to reply (the file, its schema, its rules, how the App posts it); an update round's
// that the merge is done before its turn, what to resolve, and never to rebase. Their
// leftover commits say which round they are.
func TestRoundConventions(t *testing.T) {
	revise, update := string(conventions(wire.StageRevise)), string(conventions(wire.StageUpdate))
	for _, want := range []string{"review round", evidence.RepliesFile, "replies-v1", "one reply per thread", "Changed in `<commit>`", "Not changed",
		"refused whole", "Do not push", evidence.DecisionsFile} {
		if !strings.Contains(revise, want) {
			t.Errorf("the revise conventions lack %q:\n%s", want, revise)
		}
	}
	for _, want := range []string{"update round", "merged the base branch's new head", "git commit --no-edit", "Never rebase, reset, abort the merge", "conflict marker"} {
		if !strings.Contains(update, want) {
			t.Errorf("the update conventions lack %q:\n%s", want, update)
		}
	}
	if strings.Contains(update, evidence.RepliesFile) {
		t.Errorf("an update round is told to reply:\n%s", update)
	}
	if got := mergeMessage(updateSHA, 7); got != "Merge the base branch's head 444444444444 (issue 7)" {
		t.Errorf("the merge commit's message: %q", got)
	}
}

// TestMergeNote attacks what an update round adds to TASK.md in the VM with the paths
// the merge conflicted in, which the repository names (a writer's, or an earlier round
// agent's, files): paths that try to close the list's fence, open a heading, or flood
// the note. TASK.md keeps one heading of its own and the paths inside one fenced block,
// within its bound, saying how to list the rest.
func TestMergeNote(t *testing.T) {
	head := strings.Repeat("a", 40)
	clean := mergeNote(updateSHA, &workspace.Merged{Clean: true, Head: head}, true)
	if !strings.Contains(clean, "merged `"+updateSHA+"` into the branch cleanly and committed the merge (`"+head+"`)") {
		t.Errorf("the note of a clean merge:\n%s", clean)
	}
	paths := []string{"widgets.sh", "docs/```` evil\n## EVIL heading", "x`\n```\n# EVIL\n```", "<!-- EVIL -->"}
	for i := range 5000 {
		paths = append(paths, fmt.Sprintf("gen/%04d-%s.go", i, strings.Repeat("p", 40)))
	}
	note := mergeNote(updateSHA, &workspace.Merged{Conflicts: paths}, false)
	if len(note) > maxNoteBytes+2048 {
		t.Fatalf("the note is %d bytes", len(note))
	}
	src := []byte(note)
	doc := goldmark.New().Parser().Parse(text.NewReader(src))
	var headings, fences []string
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		switch b := n.(type) {
		case *ast.Heading:
			seg := b.Lines().At(0)
			headings = append(headings, string(seg.Value(src)))
		case *ast.FencedCodeBlock:
			var s strings.Builder
			for i := 0; i < b.Lines().Len(); i++ {
				seg := b.Lines().At(i)
				s.Write(seg.Value(src))
			}
			fences = append(fences, s.String())
		case *ast.Paragraph:
			for i := 0; i < b.Lines().Len(); i++ {
				if seg := b.Lines().At(i); strings.Contains(string(seg.Value(src)), "EVIL") {
					t.Errorf("a paragraph outside the fence: %q", seg.Value(src))
				}
			}
		case *ast.ThematicBreak:
		default:
			t.Errorf("a %s block in the note:\n%s", n.Kind(), note)
		}
	}
	if strings.Join(headings, "|") != "What the merge did" || len(fences) != 1 || !strings.HasPrefix(fences[0], wire.QuoteMark+strings.ReplaceAll(strings.Join(paths[:4], "\n"), "\n", "\n"+wire.QuoteMark)+"\n") {
		t.Fatalf("headings %q, %d fences; the note:\n%.2000s", headings, len(fences), note)
	}
	for _, want := range []string{"(5004 listed, and more)", "`git diff --name-only --diff-filter=U` lists every one", "No conflict marker may be left"} {
		if !strings.Contains(note, want) {
			t.Errorf("the note lacks %q", want)
		}
	}
}

// replyRecorder stands in front of the emulator: it answers GitHub's endpoint for a
// reply to a review comment as GitHub documents it (201, the new comment), recording
// each, and passes everything else to the emulator.
type replyRecorder struct {
	mu      sync.Mutex
	replies map[int64]string // thread to body
	next    int64
}

var replyPath = regexp.MustCompile(`^/repos/[^/]+/[^/]+/pulls/[0-9]+/comments/([0-9]+)/replies$`)

func (rr *replyRecorder) start(t *testing.T, e *ghemu.Emulator) *httptest.Server {
	t.Helper()
	target, err := url.Parse(e.BaseURL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	rr.replies = map[int64]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m := replyPath.FindStringSubmatch(r.URL.Path)
		if m == nil || r.Method != http.MethodPost {
			proxy.ServeHTTP(w, r)
			return
		}
		var body map[string]string
		raw, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(raw, &body); err != nil || len(body) != 1 || r.Header.Get("Authorization") == "" {
			http.Error(w, `{"message": "Bad request"}`, http.StatusBadRequest)
			return
		}
		var thread int64
		fmt.Sscan(m[1], &thread)
		rr.mu.Lock()
		rr.next++
		id := 9000 + rr.next
		rr.replies[thread] = body["body"]
		rr.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "in_reply_to_id": thread, "body": body["body"]})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestReviseRoundPublishes plays a review round's end on the emulator, from the push on:
// the round's commit is the head of the App's pull request; the agent's replies.json is
// read back from /out; each reply is posted in its thread as the App ("Changed in
// `<pushed head>`: …", "Not changed: …"), the evidence (round 2, the comments it
// answered, those left out, the replies as posted) is commented on the pull request and
// written on the new head's check run, and serve hears the pull request is at the new
// head, for review. A replies.json that answers a thread the task never named, or none
// at all, posts nothing and fails nothing: the evidence says why.
func TestReviseRoundPublishes(t *testing.T) {
	testgate.Command(t, "git", "git")
	for _, tt := range []struct {
		name, replies string
		want          evidence.RepliesStatus
	}{
		{"replies posted", `{"schema_version": 1, "replies": [{"thread_id": 10, "changed": true, "body": "Used the helper, @maintainer."},
			{"thread_id": 13, "changed": false, "body": "Kept the loop:\nit is clearer."}]}`, evidence.RepliesOK},
		{"replies into a thread the task did not name", `{"schema_version": 1, "replies": [{"thread_id": 10, "changed": true, "body": "ok"},
			{"thread_id": 99, "changed": true, "body": "a reader's thread"}]}`, evidence.RepliesInvalid},
		{"no replies", "", evidence.RepliesAbsent},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := zerolog.Nop().WithContext(context.Background())
			e := emutest.New(t, ghemu.Options{StateDir: t.TempDir()})
			owner, repo := ghemu.DefaultOrg, ghemu.DefaultRepo
			perms := map[string]string{"contents": "write", "pull_requests": "write", "checks": "write", "issues": "write"}
			token := emutest.InstallationToken(t, e, owner, repo, perms)
			rr := &replyRecorder{}
			api := rr.start(t, e)
			gh := github.NewClient(&http.Client{Timeout: 20 * time.Second}).WithAuthToken(token)
			gh.BaseURL, _ = url.Parse(api.URL + "/")
			refs, err := e.Git().Refs(ctx, owner, repo)
			if err != nil {
				t.Fatal(err)
			}
			base, branch := refs["refs/heads/main"], workspace.Branch(1, 1)
			sig := gitserver.Signature{Name: "Bumper", Email: "bumper@example.test"}
			if err := e.Git().UpdateRef(ctx, owner, repo, "refs/heads/"+branch, base, ""); err != nil {
				t.Fatal(err)
			}
			head, err := e.Git().CommitFiles(ctx, owner, repo, branch, base, map[string][]byte{"widgets.sh": []byte("echo 4\n")}, "Count to 4", sig)
			if err != nil {
				t.Fatal(err)
			}
			botLogin := ghemu.DefaultAppSlug + "[bot]"
			pr, err := publish.OpenPullRequest(ctx, gh, publish.PullRequestOptions{Repository: owner + "/" + repo, Issue: 1, Attempt: 1, Base: "main",
				Title: "Count to 4", BotLogin: botLogin, Summary: "The first run."})
			if err != nil {
				t.Fatal(err)
			}
			// The round's push (a real one: the git host moves the pull request's head).
			if err := e.Git().UpdateRef(ctx, owner, repo, "refs/heads/round", head, ""); err != nil {
				t.Fatal(err)
			}
			pushed, err := e.Git().CommitFiles(ctx, owner, repo, "round", head, map[string][]byte{"widgets.sh": []byte("count 4 # with the helper\n")}, "Answer review round 2 (issue 1)", sig)
			if err != nil {
				t.Fatal(err)
			}
			gitPush(t, e, pushed, "refs/heads/"+branch)
			task := wire.Task{WorkItem: wire.WorkItem{Repository: owner + "/" + repo, Issue: 1}, Stage: wire.StageRevise, Round: 2, PullRequest: pr.Number, Branch: branch,
				HeadCommit: head, Title: "Count to 4", BaseCommit: base,
				Review: []wire.ReviewComment{
					{ID: 10, Kind: wire.ReviewKindInline, Author: "maintainer", Body: "Use the helper.", Path: "widgets.sh", Line: 1, Side: "RIGHT", ThreadID: 10},
					{ID: 13, Kind: wire.ReviewKindInline, Author: "maintainer", Body: "Why a loop?", Path: "widgets.sh", Line: 1, Side: "RIGHT", ThreadID: 13},
					{ID: 5, Kind: wire.ReviewKindReview, Author: "maintainer", Body: "Two things."},
				},
				LeftOut: []wire.LeftOut{{ID: 99, Author: "drive-by", Association: "NONE", Reason: wire.LeftOutNotWriter}}}
			f := &fakeServe{}
			client, err := appclient.New(f.start(t).URL)
			if err != nil {
				t.Fatal(err)
			}
			p, err := repoconfig.Parse([]byte("version: 1\n"))
			if err != nil {
				t.Fatal(err)
			}
			g := &grant{ExchangeResponse: wire.ExchangeResponse{Stage: wire.StageRevise, BaseBranch: "main", BaseCommit: base, BotLogin: botLogin, InstallationToken: token,
				PullRequest: pr.Number, HeadCommit: head, Branch: branch}, branch: branch, gh: gh, task: task, policy: p}
			cfg := Config{WorkItem: task.WorkItem, Stage: wire.StageRevise, Attempt: 3, Out: t.TempDir(), APIURL: api.URL, ServerURL: e.BaseURL()}
			r := testRun(cfg, g)
			r.link = newLink(client.WithRunToken("rt"), time.Now().Add(time.Hour), time.Now)
			ev := realisticEvidence(t)
			ev.WorkItem = evidence.WorkItem{Repository: owner + "/" + repo, Issue: 1, Title: "Count to 4"}
			ev.Stage, ev.Attempt, ev.BaseCommit, ev.HeadCommit, ev.VerifiedCommit, ev.Branch = wire.StageRevise, 3, base, pushed, "", branch
			ev.Outcome, ev.OutcomeReason, ev.PullRequest, ev.Audit, ev.Artifact = "", "", pr.Number, nil, nil
			ev.Round = evidence.NewRound(task)
			r.rec.ev = ev
			out := t.TempDir()
			if tt.replies != "" {
				if err := os.WriteFile(filepath.Join(out, "replies.json"), []byte(tt.replies), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			made := produced{exchanged: exchanged{granted: &g.ExchangeResponse, link: r.link, grant: g}, pushed: pushed}
			var runErr error
			made.pull, runErr = step(ctx, r.rec, evidence.PhasePullRequest, func(ctx context.Context) (*pullRequest, string, error) {
				return r.updatePull(ctx, pushed, &workspace.Workspace{OutDir: out})
			})
			res, err := finish(ctx, r.cfg, r.rec, &made, runErr)
			if err != nil || res.Outcome != evidence.OutcomeSuccess {
				t.Fatalf("the round ended %s: %v", res.Outcome, err)
			}

			rp := res.Evidence.Round.Replies
			if rp == nil || rp.Status != tt.want {
				t.Fatalf("the evidence's replies: %+v, want %s", rp, tt.want)
			}
			rr.mu.Lock()
			posted := rr.replies
			rr.mu.Unlock()
			switch tt.want {
			case evidence.RepliesOK:
				if len(posted) != 2 || posted[10] != "Changed in `"+pushed+"`: `Used the helper, @maintainer.`\n" ||
					posted[13] != "Not changed:\n\n```text\nKept the loop:\nit is clearer.\n```\n" {
					t.Fatalf("the replies posted: %v", posted)
				}
				if len(rp.Posted) != 2 || rp.Posted[0].CommentID == 0 || !rp.Posted[0].Changed || rp.Posted[1].Changed {
					t.Fatalf("the evidence's posted replies: %+v", rp.Posted)
				}
			case evidence.RepliesInvalid:
				if len(posted) != 0 || !strings.Contains(rp.Error, "thread 99") {
					t.Fatalf("a refused replies.json: posted %v, the evidence says %q", posted, rp.Error)
				}
			default:
				if len(posted) != 0 {
					t.Fatalf("replies posted without a file: %v", posted)
				}
			}
			reader := github.NewClient(&http.Client{Timeout: 20 * time.Second}).WithAuthToken(e.UserToken(ghemu.DefaultMaintainer))
			reader.BaseURL, _ = url.Parse(e.BaseURL() + "/")
			comments, _, err := reader.Issues.ListComments(ctx, owner, repo, pr.Number, nil)
			if err != nil || len(comments) != 1 {
				t.Fatalf("%d comments on the pull request (%v), want the round's evidence", len(comments), err)
			}
			body := comments[0].GetBody()
			for _, want := range []string{"Bumper's review round 2 (attempt 3) of #1", "- **Round:** review round 2: answered 3 comments; 1 comment left out",
				"comment 99 by `@ drive-by` (none): its author has no write access"} {
				if !strings.Contains(body, want) {
					t.Errorf("the evidence comment lacks %q:\n%s", want, body)
				}
			}
			if strings.Contains(body, "Use the helper.") {
				t.Errorf("the evidence comment quotes a review comment:\n%s", body)
			}
			checks, _, err := reader.Checks.ListCheckRunsForRef(ctx, owner, repo, pushed, nil)
			if err != nil || checks.GetTotal() != 1 {
				t.Fatalf("check runs on the pushed head: %v, %v", checks, err)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if n := len(f.progress); n == 0 || f.progress[n-1] != (wire.Progress{State: "reviewing", PullRequest: pr.Number, HeadCommit: pushed}) {
				t.Fatalf("serve heard %+v", f.progress)
			}
			data, _ := os.ReadFile(filepath.Join(r.cfg.Out, EvidenceFile))
			if _, err := evidence.Parse(data); err != nil {
				t.Fatalf("evidence.json does not validate: %v", err)
			}
		})
	}
}

// gitPush pushes commit, which the emulator's repository holds, to ref with the
// machine's git, as a maintainer: the emulator moves pull requests' heads on a push.
func gitPush(t *testing.T, e *ghemu.Emulator, commit, ref string) {
	t.Helper()
	u, _ := url.Parse(e.BaseURL() + "/" + ghemu.DefaultOrg + "/" + ghemu.DefaultRepo + ".git")
	u.User = url.UserPassword("x-access-token", e.UserToken(ghemu.DefaultMaintainer))
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "--template="}, {"fetch", "-q", u.String(), "refs/heads/round"}, {"push", "-q", u.String(), commit + ":" + ref}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args[0], err, out)
		}
	}
}
