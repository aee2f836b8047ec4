package demo

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/publish"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/testgate"
	"github.com/bumperdev/bumper/internal/verdict"
)

// sampleCheckout is the sample's code and scripts in a git repository of its own, at
// its first commit, as the VM's checkout has them.
type sampleCheckout struct {
	t    *testing.T
	dir  string
	task string // where TASK.md goes
	out  string // /out
}

func newSampleCheckout(t *testing.T) *sampleCheckout {
	t.Helper()
	testgate.Command(t, "go", "golang-go")
	testgate.Command(t, "git", "git")
	files, err := sampleFiles()
	if err != nil {
		t.Fatal(err)
	}
	c := &sampleCheckout{t: t, dir: filepath.Join(t.TempDir(), "repo"), task: filepath.Join(t.TempDir(), "TASK.md"), out: t.TempDir()}
	for _, f := range []string{"go.mod", "widgets.go", "widgets_test.go", ".bumper/agent.sh", ".bumper/reviewer.sh"} {
		p := filepath.Join(c.dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(files[f]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c.git("init", "-q", "-b", "main")
	c.git("add", ".")
	c.git("commit", "-q", "-m", "The sample")
	return c
}

// run runs a command in the checkout with the VM's variables and the host's Go.
func (c *sampleCheckout) run(name string, args ...string) string {
	c.t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOTOOLCHAIN=local", "BUMPER_TASK="+c.task, "BUMPER_OUT="+c.out,
		"BUMPER_DECISIONS="+filepath.Join(c.out, "decisions.json"),
		"GIT_AUTHOR_NAME=agent", "GIT_AUTHOR_EMAIL=agent@bumper.invalid", "GIT_COMMITTER_NAME=agent", "GIT_COMMITTER_EMAIL=agent@bumper.invalid")
	out, err := cmd.CombinedOutput()
	if err != nil {
		c.t.Fatalf("%s %q: %v\n%s", name, args, err, out)
	}
	return string(out)
}

func (c *sampleCheckout) git(args ...string) string {
	c.t.Helper()
	return strings.TrimSpace(c.run("git", args...))
}

// writeTask writes the task's TASK.md as the runner does.
func (c *sampleCheckout) writeTask(task wire.Task) {
	c.t.Helper()
	files, err := task.Files()
	if err != nil {
		c.t.Fatal(err)
	}
	if err := os.WriteFile(c.task, files[wire.TaskMarkdown], 0o644); err != nil {
		c.t.Fatal(err)
	}
}

// sampleTask is the implementing run's task, and roundTask the conversation round's,
// with the maintainer's review as the App hands it to the runner.
func sampleTask() wire.Task {
	is := sampleIssue()
	return wire.Task{Stage: wire.StageImplement, Title: is.Title, Body: is.Body, SpecRevision: strings.Repeat("a", 64), BaseCommit: strings.Repeat("b", 40)}
}

func roundTask(ask string) wire.Task {
	at := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	t := sampleTask()
	t.Stage, t.Round, t.PullRequest, t.Branch, t.HeadCommit = wire.StageRevise, 1, 2, "bumper/1-1", strings.Repeat("c", 40)
	t.Review = []wire.ReviewComment{
		{ID: 880101, Kind: wire.ReviewKindInline, Author: "maintainer", CreatedAt: at, Body: ask, Path: roundPath, Line: roundLine, Side: "RIGHT",
			DiffHunk: "@@ -4,7 +4,7 @@\n func Total(boxes []int) int {\n \ttotal := 0\n-\tfor i := 1; i < len(boxes); i++ {\n+\tfor i := 0; i < len(boxes); i++ {", ThreadID: 880101},
		{ID: 77, Kind: wire.ReviewKindReview, Author: "maintainer", CreatedAt: at, Body: roundReviewBody},
	}
	return t
}

// TestSampleAgentAnswersRound: the scripted agent fixes the issue, then answers the
// conversation round's TASK.md (as app/wire writes it, every quoted line after its
// mark) with a commit on top of its first and a reply that the runner accepts for the
// thread the task names; a comment asking for something it cannot make gets a "not
// changed" reply and no commit. The tests pass after each commit.
func TestSampleAgentAnswersRound(t *testing.T) {
	c := newSampleCheckout(t)
	c.writeTask(sampleTask())
	c.run("sh", ".bumper/agent.sh")
	fixed := c.git("rev-parse", "HEAD")
	if c.git("rev-list", "--count", "HEAD") != "2" {
		t.Fatal("the implementing run made no commit")
	}
	c.run("go", "test", "./...")

	t.Run("a comment asking for the range loop", func(t *testing.T) {
		task := roundTask(roundAsk)
		c.writeTask(task)
		c.run("sh", ".bumper/agent.sh")
		if c.git("rev-parse", "HEAD^") != fixed {
			t.Fatalf("the round's commit is not on top of the reviewed head %s", fixed)
		}
		src, _ := os.ReadFile(filepath.Join(c.dir, "widgets.go"))
		if !strings.Contains(string(src), "\tfor _, n := range boxes {\n\t\ttotal += n\n") {
			t.Fatalf("widgets.go after the round:\n%s", src)
		}
		c.run("go", "test", "./...")
		replies := readReplies(t, c.out, task)
		if len(replies) != 1 || replies[0].ThreadID != 880101 || !replies[0].Changed {
			t.Fatalf("replies %+v, want one changed reply in thread 880101", replies)
		}
	})
	t.Run("a comment asking for something else", func(t *testing.T) {
		head := c.git("rev-parse", "HEAD")
		task := roundTask("Rename Total to Sum.")
		c.writeTask(task)
		c.run("sh", ".bumper/agent.sh")
		if c.git("rev-parse", "HEAD") != head {
			t.Fatal("the agent committed a change nobody asked for")
		}
		replies := readReplies(t, c.out, task)
		if len(replies) != 1 || replies[0].ThreadID != 880101 || replies[0].Changed {
			t.Fatalf("replies %+v, want one not-changed reply in thread 880101", replies)
		}
	})
}

// TestModelAnswersRound: the scripted model's round turn, run as the CLI would run it
// (its paths moved to the test's), makes the agent's change and a reply the runner
// accepts for the thread TASK.md names.
func TestModelAnswersRound(t *testing.T) {
	c := newSampleCheckout(t)
	c.run("sed", "-i", fixSed, "widgets.go")
	c.git("commit", "-q", "-am", "fix")
	task := roundTask(roundAsk)
	c.writeTask(task)
	script := modelScript()
	if len(script) != 4 || len(script[2].Calls) != 1 || len(script[3].Calls) != 0 {
		t.Fatalf("the model's script is not: fix, say, answer the round, say: %v", script)
	}
	cmd := "sed -i '" + rangeSed + "' widgets.go && go test ./... && " + repliesCommand
	if got := script[2].Calls[0].String(); got != fmt.Sprintf("run %q", "cd /workspace/repo && "+cmd) {
		t.Fatalf("the model's round turn %s is not the one tested", got)
	}
	cmd = strings.ReplaceAll(strings.ReplaceAll(cmd, "/workspace/task/TASK.md", c.task), "/out/", c.out+"/")
	c.run("sh", "-c", cmd)
	src, _ := os.ReadFile(filepath.Join(c.dir, "widgets.go"))
	if !strings.Contains(string(src), "\tfor _, n := range boxes {\n\t\ttotal += n\n") {
		t.Fatalf("widgets.go after the model's round:\n%s", src)
	}
	replies := readReplies(t, c.out, task)
	if len(replies) != 1 || replies[0].ThreadID != 880101 || !replies[0].Changed || replies[0].Body != roundReplyText {
		t.Fatalf("replies %+v", replies)
	}
}

// readReplies reads /out/replies.json as the runner does, for the task's threads.
func readReplies(t *testing.T, out string, task wire.Task) []wire.Reply {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(out, "replies.json"))
	if err != nil {
		t.Fatal(err)
	}
	replies, err := evidence.ParseReplies(raw, evidence.Threads(task))
	if err != nil {
		t.Fatalf("the runner refuses replies.json: %v\n%s", err, raw)
	}
	return replies
}

// TestSampleReviewer: the scripted reviewer approves the fix with its nit, approves the
// round's range loop with no finding, and asks for changes when the loop is unchanged.
func TestSampleReviewer(t *testing.T) {
	c := newSampleCheckout(t)
	base := c.git("rev-parse", "HEAD")
	verdictOf := func(t *testing.T) verdict.Verdict {
		t.Helper()
		diff := filepath.Join(t.TempDir(), "pr.diff")
		if err := os.WriteFile(diff, []byte(c.run("git", "diff", base+"...HEAD")), 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), "verdict.json")
		cmd := exec.Command("sh", ".bumper/reviewer.sh")
		cmd.Dir = c.dir
		cmd.Env = append(os.Environ(), "BUMPER_REVIEW_DIFF="+diff, "BUMPER_VERDICT="+out)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("reviewer.sh: %v\n%s", err, b)
		}
		raw, _ := os.ReadFile(out)
		v, err := verdict.Parse(raw)
		if err != nil {
			t.Fatalf("the verdict: %v\n%s", err, raw)
		}
		return v
	}
	t.Run("no change", func(t *testing.T) {
		if v := verdictOf(t); v.Verdict != verdict.RequestChanges {
			t.Fatalf("%+v", v)
		}
	})
	c.run("sed", "-i", fixSed, "widgets.go")
	c.git("commit", "-q", "-am", "fix")
	t.Run("the fix", func(t *testing.T) {
		if v := verdictOf(t); v.Verdict != verdict.Approve || len(v.Findings) != 1 || !strings.Contains(v.Findings[0].Message, "range boxes") {
			t.Fatalf("%+v", v)
		}
	})
	c.run("sed", "-i", rangeSed, "widgets.go")
	c.git("commit", "-q", "-am", "range")
	t.Run("the round's range loop", func(t *testing.T) {
		if v := verdictOf(t); v.Verdict != verdict.Approve || len(v.Findings) != 0 {
			t.Fatalf("%+v", v)
		}
	})
}

// TestReplyAsText: the demo accepts a thread reply only in the form the runner posts
// (publish.ReplyBody), and refuses one whose words would render as Markdown.
func TestReplyAsText(t *testing.T) {
	head := strings.Repeat("e", 40)
	for _, tc := range []struct {
		name, body, err string
	}{
		{name: "changed, one line", body: publish.ReplyBody(wire.Reply{Changed: true, Body: roundReplyText}, head)},
		{name: "not changed, lines", body: publish.ReplyBody(wire.Reply{Body: "Kept it.\nIt reads better."}, head)},
		{name: "hidden characters", body: publish.ReplyBody(wire.Reply{Changed: true, Body: "a\u200bb"}, head)},
		{name: "live Markdown", body: "Changed in `" + head + "`: **done** @maintainer ![x](https://outside/x.png)", err: "not in a code span"},
		{name: "a span that ends early", body: "Changed in `" + head + "`: `done` and @maintainer `x`", err: "not in a code span"},
		{name: "text after a span", body: "Changed in `" + head + "`: `done`\n\n@maintainer", err: "not in a code span"},
		{name: "a fence closed early", body: "Not changed:\n\n```text\nkept\n```\n@maintainer\n```", err: "not in a code span"},
		{name: "another head", body: publish.ReplyBody(wire.Reply{Changed: true, Body: "x"}, strings.Repeat("f", 40)), err: "does not start with"},
		{name: "no lead", body: "`done`", err: "does not start with"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := replyAsText(tc.body, head)
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("err %v, want %q\n%s", err, tc.err, tc.body)
			}
		})
	}
}

// TestConversationSkipped: the round runs on the sample with its scripted agent or a
// CLI; with a program or a repository of the user's it is skipped, saying why.
func TestConversationSkipped(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{name: "the scripted agent", cfg: Config{Agent: AgentCommand}},
		{name: "claude code", cfg: Config{Agent: AgentClaudeCode}},
		{name: "codex against a real model", cfg: Config{Agent: AgentCodex, ModelBaseURL: "https://api.openai.com"}},
		{name: "the user's program", cfg: Config{Agent: AgentCommand, AgentCmd: "my-agent"}, want: "--agent-cmd"},
		{name: "the user's repository", cfg: Config{Agent: AgentCommand, RepoDir: "x", IssueFile: "i.md"}, want: "written for the sample's code"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := (&demo{cfg: tc.cfg}).conversationSkipped()
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Fatalf("%q, want %q", got, tc.want)
			}
		})
	}
}
