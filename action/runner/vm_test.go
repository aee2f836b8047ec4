package runner

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/publish"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
	"github.com/bumperdev/bumper/ghemu/gitserver"
	"github.com/bumperdev/bumper/internal/testgate"
	"github.com/bumperdev/bumper/sandbox"
	"github.com/bumperdev/bumper/sandbox/image/imagetest"
)

// roundAgent is the scripted agent of TestRoundsInVM (the command harness runs it in
// the VM; it is test infrastructure, not a model). In an update round it checks that
// TASK.md says what the merge did and resolves the conflict in widgets.sh, leaving the
// merge for the runner to commit; in a review round it answers the inline comment and
// replies in its thread.
const roundAgent = `set -eu
if grep -q '^## What the merge did' "$BUMPER_TASK"; then
	grep -q 'widgets.sh' "$BUMPER_TASK"
	grep -q '^<<<<<<< ' widgets.sh
	printf '#!/bin/sh\necho 4 # counted\n' > widgets.sh
	echo "agent: resolved widgets.sh"
	exit 0
fi
grep -q '^## Review round 1: what the writers asked' "$BUMPER_TASK"
grep -q 'Its review thread is 10' "$BUMPER_TASK"
printf '#!/bin/sh\n# Prints the widget count.\necho 4\n' > widgets.sh
git commit -q -am "Say what widgets.sh does"
cat > "$BUMPER_OUT/replies.json" <<'JSON'
{"schema_version": 1, "replies": [{"thread_id": 10, "changed": true, "body": "Added the comment, @maintainer."}]}
JSON
echo "agent: answered thread 10"
`

// playServe plays serve for one run: the grant and the task it is given, should-stop
// always no, and what the run reports, recorded.
type playServe struct {
	grant    wire.ExchangeResponse
	task     wire.Task
	mu       sync.Mutex
	progress []wire.Progress
	evidence []wire.Evidence
}

func (s *playServe) start(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		s.mu.Lock()
		defer s.mu.Unlock()
		var out any = struct{}{}
		switch r.URL.Path {
		case wire.PathTokenExchange:
			out = s.grant
		case wire.PathTask:
			out = s.task
		case wire.PathShouldStop:
			out = wire.ShouldStop{}
		case wire.PathProgress:
			var p wire.Progress
			_ = json.Unmarshal(body, &p)
			s.progress = append(s.progress, p)
		case wire.PathEvidence:
			var e wire.Evidence
			_ = json.Unmarshal(body, &e)
			s.evidence = append(s.evidence, e)
		}
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestRoundsInVM runs a review round and an update round whole, in a real VM behind the
// real firewall, against the emulator, with serve played: the runner as production runs
// it, from the exchange to the report.
//
// The update round: the base branch moved on with a maintainer's commits that conflict
// with the pull request, whose head is a maintainer's commit on top of Bumper's. The
// runner merges the base branch's head in the VM before the agent and lists the
// conflict at the end of TASK.md; the agent resolves it and leaves the merge to the
// runner's commit step; verification passes; the push goes on from the old head through
// the firewall's push_from. On the branch: the merge commit, the App's, whose parents
// are exactly the old head and the base branch's head; every earlier commit keeps its
// id and its author.
//
// The review round: the agent answers the inline comment of the task and replies in its
// thread; after the push the reply is posted there as the App, naming the pushed head.
func TestRoundsInVM(t *testing.T) {
	testgate.RequiresQEMU(t)
	testgate.RequiresRoot(t)
	testgate.Command(t, "git", "git")
	im := imagetest.Image(t)
	ctx := zerolog.Nop().WithContext(context.Background())
	seed := ghemu.DefaultSeed()
	files := seed.Repositories[0].Files
	files["widgets.sh"] = "#!/bin/sh\necho 3\n"
	files["test.sh"] = "#!/bin/sh\ngot=$(sh widgets.sh)\n[ \"$got\" = 4 ] || { echo \"FAIL: widgets.sh printed $got\"; exit 1; }\necho PASS\n"
	files[".bumper/agent.sh"] = roundAgent
	files[".github/bumper.yml"] = "version: 1\nharness:\n  name: command\n  command: sh .bumper/agent.sh\nverification:\n  - sh test.sh\n" +
		"bounds:\n  verification_rounds: 1\n  wall_time: 10m\nreviewer: false\n"
	e := emutest.New(t, ghemu.Options{StateDir: t.TempDir(), Seed: seed})
	owner, repo := ghemu.DefaultOrg, ghemu.DefaultRepo
	full := owner + "/" + repo
	perms := map[string]string{"contents": "write", "pull_requests": "write", "checks": "write", "issues": "write"}
	refs, err := e.Git().Refs(ctx, owner, repo)
	if err != nil {
		t.Fatal(err)
	}
	base := refs["refs/heads/main"]
	bumper := gitserver.Signature{Name: ghemu.DefaultAppSlug + "[bot]", Email: "1+bumper[bot]@users.noreply.127.0.0.1"}
	mae := gitserver.Signature{Name: "Mae Maintainer", Email: "maintainer@example.test"}
	commit := func(branch, parent string, files map[string]string, msg string, by gitserver.Signature) string {
		t.Helper()
		if parent == base {
			if err := e.Git().UpdateRef(ctx, owner, repo, "refs/heads/"+branch, base, ""); err != nil {
				t.Fatal(err)
			}
		}
		fs := map[string][]byte{}
		for p, c := range files {
			fs[p] = []byte(c)
		}
		sha, err := e.Git().CommitFiles(ctx, owner, repo, branch, parent, fs, msg, by)
		if err != nil {
			t.Fatal(err)
		}
		return sha
	}
	botLogin := ghemu.DefaultAppSlug + "[bot]"
	// run plays serve for one run of issue's pull request and runs it.
	run := func(t *testing.T, issue int, stage wire.Stage, head string, task wire.Task, updateTo string, api string) (*Result, *playServe, error) {
		token := emutest.InstallationToken(t, e, owner, repo, perms)
		gh := github.NewClient(&http.Client{Timeout: 20 * time.Second}).WithAuthToken(token)
		gh.BaseURL, _ = url.Parse(e.BaseURL() + "/")
		branch := "bumper/" + strconv.Itoa(issue) + "-1"
		pr, err := publish.OpenPullRequest(ctx, gh, publish.PullRequestOptions{Repository: full, Issue: issue, Attempt: 1, Base: "main", Title: task.Title, BotLogin: botLogin})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		task.WorkItem, task.Stage, task.PullRequest, task.Branch, task.HeadCommit, task.BaseCommit, task.UpdateTo = wire.WorkItem{Repository: full, Issue: issue}, stage, pr.Number, branch, head, base, updateTo
		task.SpecRevision = "sha256:" + strings.Repeat("a", 64)
		s := &playServe{task: task, grant: wire.ExchangeResponse{InstallationToken: token, TokenExpiresAt: now.Add(time.Hour), Permissions: perms,
			Repository: full, RunToken: "rt", RunTokenExpiresAt: now.Add(time.Hour), WorkItem: task.WorkItem, Revision: task.SpecRevision, Attempt: 2,
			Stage: stage, BaseCommit: base, BaseBranch: "main", BotLogin: botLogin, Branch: branch, PullRequest: pr.Number, HeadCommit: head, UpdateTo: updateTo,
			Approvals: []wire.Approval{{By: ghemu.DefaultMaintainer, At: now.Add(-time.Hour), Revision: task.SpecRevision, CommentID: 1}}}}
		// A short run directory: QEMU's socket paths must be under 108 bytes.
		runDir, err := os.MkdirTemp("", "vm")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(runDir) })
		vm := sandbox.Config{Kernel: im.KernelPath(), Initrd: im.InitrdPath(), Rootfs: im.RootfsPath(), RootfsFormat: im.RootfsFormat(), Cmdline: im.Manifest().Cmdline, CPUs: 2, MemoryMB: 1024,
			RunDir: runDir, StateDir: filepath.Join(os.TempDir(), "bumper-sandbox-test-state")}
		cfg := Config{ServeURL: s.start(t).URL, OIDCToken: func(context.Context) (string, error) { return "oidc", nil },
			WorkItem: task.WorkItem, Attempt: 2, Nonce: "n", Stage: stage, ServerURL: e.BaseURL(), APIURL: api,
			VM: vm, ImageDigest: im.Manifest().Digest, VMM: "qemu", Out: t.TempDir(), WorkDir: t.TempDir(),
			Trigger: evidence.Trigger{Event: "workflow_dispatch", WorkflowRef: full + "/.github/workflows/bumper-run.yml@refs/heads/main", RunID: 1, RunAttempt: 1, Actor: botLogin}}
		res, err := Run(ctx, cfg)
		return res, s, err
	}
	reader := github.NewClient(&http.Client{Timeout: 20 * time.Second}).WithAuthToken(e.UserToken(ghemu.DefaultMaintainer))
	reader.BaseURL, _ = url.Parse(e.BaseURL() + "/")

	t.Run("update", func(t *testing.T) {
		bumpers := commit("bumper/1-1", base, map[string]string{"widgets.sh": "#!/bin/sh\necho 4\n"}, "Count to 4 (issue 1)", bumper)
		theirs := commit("bumper/1-1", bumpers, map[string]string{"NOTES": "a maintainer's note\n"}, "A maintainer's note", mae)
		m1 := commit("main-next", base, map[string]string{"widgets.sh": "#!/bin/sh\necho 3 # counted\n"}, "Say it is counted", mae)
		m2 := commit("main-next", m1, map[string]string{"CHANGELOG.md": "- counted\n"}, "Changelog", mae)
		res, s, err := run(t, 1, wire.StageUpdate, theirs, wire.Task{Round: 1, Title: "Count to 4", Body: "widgets.sh should print 4."}, m2, e.BaseURL())
		if err != nil || res.Outcome != evidence.OutcomeSuccess {
			t.Fatalf("the update round: %v (%+v)", err, res)
		}
		ev := res.Evidence
		if m := ev.Round.Merge; m == nil || !m.Conflicted || strings.Join(m.Files, ",") != "widgets.sh" || m.From != theirs || m.To != m2 {
			t.Fatalf("the evidence's merge: %+v", ev.Round.Merge)
		}
		refs, _ := e.Git().Refs(ctx, owner, repo)
		head := refs["refs/heads/bumper/1-1"]
		if head != ev.HeadCommit || head == theirs {
			t.Fatalf("the branch is at %s, the evidence says %s", head, ev.HeadCommit)
		}
		c, err := e.Git().Commit(ctx, owner, repo, head)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(c.Parents, " ") != theirs+" "+m2 || c.Author.Name != botLogin {
			t.Fatalf("the pushed head %s: parents %v, by %s; want the old head then the base branch's, by the App", head, c.Parents, c.Author.Name)
		}
		// Published through GitHub's API: the App's merge commit is signed (Verified).
		if gc, _, err := reader.Git.GetCommit(ctx, owner, repo, head); err != nil || !gc.GetVerification().GetVerified() || ev.PublishedVia != publish.ViaAPI {
			t.Fatalf("the published head %s: %v, verification %+v, published via %q", head, err, gc.GetVerification(), ev.PublishedVia)
		}
		for _, old := range []string{bumpers, theirs, m1, m2} {
			if ok, err := e.Git().IsAncestor(ctx, owner, repo, old, head); err != nil || !ok {
				t.Errorf("%s is not in the branch's history under its own id", old)
			}
		}
		if got, _, err := e.Git().ReadFile(ctx, owner, repo, head, "widgets.sh"); err != nil || string(got) != "#!/bin/sh\necho 4 # counted\n" {
			t.Errorf("widgets.sh on the branch: %q, %v", got, err)
		}
		if n := len(s.progress); n == 0 || s.progress[n-1].HeadCommit != head || s.progress[n-1].State != "in-review" {
			t.Errorf("serve heard %+v", s.progress)
		}
	})

	t.Run("revise", func(t *testing.T) {
		rr := &replyRecorder{}
		api := rr.start(t, e)
		head := commit("bumper/2-1", base, map[string]string{"widgets.sh": "#!/bin/sh\necho 4\n"}, "Count to 4 (issue 2)", bumper)
		task := wire.Task{Round: 1, Title: "Count to 4 again", Body: "widgets.sh should print 4.",
			Review: []wire.ReviewComment{{ID: 10, Kind: wire.ReviewKindInline, Author: ghemu.DefaultMaintainer, Body: "Say what the script does.",
				Path: "widgets.sh", Line: 2, Side: "RIGHT", DiffHunk: "@@ -1,2 +1,2 @@\n #!/bin/sh\n-echo 3\n+echo 4", ThreadID: 10}},
			LeftOut: []wire.LeftOut{{ID: 11, Author: ghemu.DefaultReader, Association: "NONE", Reason: wire.LeftOutNotWriter}}}
		res, _, err := run(t, 2, wire.StageRevise, head, task, "", api.URL)
		if err != nil || res.Outcome != evidence.OutcomeSuccess {
			t.Fatalf("the review round: %v (%+v)", err, res)
		}
		rr.mu.Lock()
		defer rr.mu.Unlock()
		if got := rr.replies[10]; got != "Changed in `"+res.Evidence.HeadCommit+"`: `Added the comment, @maintainer.`\n" {
			t.Fatalf("the reply in thread 10: %q", got)
		}
		rd := res.Evidence.Round
		if rd.Number != 1 || len(rd.Answered) != 1 || len(rd.LeftOut) != 1 || rd.Replies == nil || rd.Replies.Status != evidence.RepliesOK || rd.Replies.Posted[0].CommentID == 0 {
			t.Fatalf("the evidence's round: %+v, replies %+v", rd, rd.Replies)
		}
		comments, _, err := reader.Issues.ListComments(ctx, owner, repo, res.PullRequest, nil)
		if err != nil || len(comments) != 1 || !strings.Contains(comments[0].GetBody(), "review round 1: answered 1 comment; 1 comment left out; 1 reply posted") {
			t.Fatalf("the evidence comment (%v): %+v", err, comments)
		}
	})
}
