package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/harness"
	"github.com/bumperdev/bumper/action/workspace"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/firewall/audit"
	"github.com/bumperdev/bumper/internal/repoconfig"
	"github.com/bumperdev/bumper/sandbox"
)

// TestConfigValidate: every problem of a run's configuration is reported at once, each
// saying what to set; every stage the App dispatches is taken.
func TestConfigValidate(t *testing.T) {
	good := Config{
		ServeURL: "https://bumper.example", OIDCToken: func(context.Context) (string, error) { return "t", nil },
		WorkItem: wire.WorkItem{Repository: "acme/widgets", Issue: 3}, Attempt: 1, Nonce: "n", Stage: wire.StageImplement,
		ServerURL: "https://github.com", APIURL: "https://api.github.com", Out: t.TempDir(),
		VM: sandbox.Config{Kernel: "vmlinux", Rootfs: "rootfs.ext4"},
	}
	for _, stage := range wire.Stages() {
		c := good
		c.Stage = stage
		if err := c.validate(); err != nil {
			t.Fatalf("a good config of stage %s: %v", stage, err)
		}
	}
	tests := []struct {
		name   string
		mutate func(*Config)
		want   []string
	}{
		{"everything missing", func(c *Config) { *c = Config{} }, []string{
			"no serve URL", "no OIDC token source", "work item \"\"", "attempt 0", "no nonce", "stage \"\"",
			"server URL", "API URL", "no output directory", "no VM image"}},
		{"a stage that is none", func(c *Config) { c.Stage = "deploy" }, []string{"want one of plan, implement, fix, review, revise, update"}},
		{"a work item that is not one", func(c *Config) { c.WorkItem = wire.WorkItem{Repository: "acme/widgets", Issue: 0} }, []string{"owner/repo#issue"}},
		{"a work item made by hand", func(c *Config) { c.WorkItem = wire.WorkItem{Repository: "acme", Issue: 3} }, []string{"work item \"acme#3\": want owner/repo#issue"}},
		{"a URL that is not one", func(c *Config) { c.APIURL = "ftp://x" }, []string{"API URL (GITHUB_API_URL) \"ftp://x\""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.mutate(&c)
			err := c.validate()
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v lacks %q", err, w)
				}
			}
		})
	}
}

// TestClassify: each way a run ends maps to its outcome.
func TestClassify(t *testing.T) {
	tests := []struct {
		err  error
		want evidence.Outcome
	}{
		{nil, evidence.OutcomeSuccess},
		{failWith(evidence.OutcomeOverBudget, "spent"), evidence.OutcomeOverBudget},
		{fmt.Errorf("phase: %w", failWith(evidence.OutcomeTimedOut, "late")), evidence.OutcomeTimedOut},
		{fmt.Errorf("%w: the item was stopped", errStopped), evidence.OutcomeStopped},
		{errors.New("anything else"), evidence.OutcomeFailure},
	}
	for _, tc := range tests {
		if got, _ := classify(tc.err); got != tc.want {
			t.Errorf("classify(%v) = %s, want %s", tc.err, got, tc.want)
		}
	}
}

// TestLimitWriter: a transcript keeps its first bytes and never fails the live log.
func TestLimitWriter(t *testing.T) {
	var buf bytes.Buffer
	w := &limitWriter{w: &buf, left: 5}
	for _, p := range []string{"abc", "defg", "hij"} {
		if n, err := w.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", p, n, err)
		}
	}
	if buf.String() != "abcde" {
		t.Fatalf("kept %q", buf.String())
	}
}

// TestReadAudit: the egress summary is read from a log whose chain verifies; a line the
// VM's side could have altered makes the whole log refused.
func TestReadAudit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []audit.Entry{
		{Time: time.Now(), Kind: "git", Target: "/git/acme/widgets.git/git-upload-pack", Allowed: true, Reason: "git git-upload-pack"},
		{Time: time.Now(), Kind: "connect", Target: "evil.example:443", Allowed: false, Reason: "not in the allowlist"},
	} {
		if err := l.Write(&e); err != nil {
			t.Fatal(err)
		}
	}
	head := l.Head().Hash
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	entries, err := readAudit(path, head)
	if err != nil || len(entries) != 2 || entries[1].Allowed || entries[1].Target != "evil.example:443" {
		t.Fatalf("readAudit = %+v, %v", entries, err)
	}
	data, _ := os.ReadFile(path)
	if err := os.WriteFile(path, bytes.Replace(data, []byte(`"allowed":false`), []byte(`"allowed":true`), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readAudit(path, head); err == nil {
		t.Fatal("a tampered audit log was read")
	}
}

// TestConventions: the agent is told how the run works, a plan run that it writes a plan
// and changes nothing.
func TestConventions(t *testing.T) {
	impl, plan := string(conventions("implement")), string(conventions("plan"))
	for _, want := range []string{"Do not push", evidence.DecisionsFile, "AGENTS.md"} {
		if !strings.Contains(impl, want) {
			t.Errorf("the implement conventions lack %q:\n%s", want, impl)
		}
	}
	if !strings.Contains(plan, "/out/"+PlanFile) || strings.Contains(plan, "Commit your work") {
		t.Errorf("the plan conventions:\n%s", plan)
	}
}

// TestCommitMessage: the issue's title on one line, with its number, bounded; a title
// an issue's author wrote to close other issues, mention or cross-reference closes,
// mentions and references nothing ('#', "GH-" or '@' touching what follows).
func TestCommitMessage(t *testing.T) {
	tests := []struct{ title, want string }{
		{"Fix\nthe  widgets\t", "Fix the widgets (issue 7)"},
		{"Fixes #7: crash", "Fixes # 7: crash (issue 7)"},
		{"closes acme/widgets#6 and GH-5, cc @maintainer", "closes acme/widgets# 6 and GH- 5, cc @ maintainer (issue 7)"},
	}
	live := regexp.MustCompile(`(?i)#[0-9]|gh-[0-9]|@[a-z0-9]`)
	for _, tt := range tests {
		got := commitMessage(tt.title, 7)
		if got != tt.want || live.MatchString(got) {
			t.Errorf("commitMessage(%q) = %q, want %q", tt.title, got, tt.want)
		}
	}
	if got := commitMessage(strings.Repeat("é", 300), 7); len(got) > 204 {
		t.Errorf("commitMessage is %d bytes", len(got))
	}
}

// TestVMDeadline: the VM's work ends TokenMargin before the installation token does.
func TestVMDeadline(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	if got := vmDeadline(now.Add(time.Hour), now); !got.Equal(now.Add(time.Hour - TokenMargin)) {
		t.Errorf("deadline %v", got)
	}
	if got := vmDeadline(time.Time{}, now); got.Sub(now) < time.Hour {
		t.Errorf("an unknown expiry gives deadline %v", got)
	}
}

// TestEnvironmentNeedsTheImageCache: a runner given a prebuilt image cannot build a
// repository's environment, and says so instead of running the agent without it.
func TestEnvironmentNeedsTheImageCache(t *testing.T) {
	p, err := repoconfig.Parse([]byte("version: 1\nenvironment: {packages: [golang-go], setup: scripts/setup.sh}\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := testRun(Config{Out: t.TempDir()}, &grant{policy: p})
	if _, err := r.buildEnvironment(context.Background(), &session{}, &workspace.Workspace{}); err == nil || !strings.Contains(err.Error(), "prebuilt image") || !strings.Contains(err.Error(), "environment:") {
		t.Fatalf("error %v", err)
	}
	if r.rec.ev.Environment != nil {
		t.Fatalf("evidence of an environment that was never looked for: %+v", r.rec.ev.Environment)
	}
}

// TestReportedReasonIsValidUTF8: serve refuses a report whose reason is not valid UTF-8
// (or longer than wire.MaxReason), and then the work item never learns how its run
// ended. A failed environment setup's reason quotes the end of the setup's output,
// which the repository's script writes: raw bytes, or a tail cut inside a character.
func TestReportedReasonIsValidUTF8(t *testing.T) {
	for _, reason := range []string{
		"failed to build the repository's environment: the setup scripts/setup.sh failed (exit status 1); nothing was cached. Its output ended with:\n\xff\xfe\x80 binary junk \xc3",
		"the setup failed. Its output ended with:\n" + string([]byte("€")[1:]) + strings.Repeat("€", 400),
		strings.Repeat("\xff", 3*wire.MaxReason),
	} {
		got := wireReason(reason)
		if !utf8.ValidString(got) || len(got) > wire.MaxReason {
			t.Errorf("reason sent to serve: %d bytes, valid UTF-8 %v", len(got), utf8.ValidString(got))
		}
		if !strings.HasPrefix(reason, "\xff") && !strings.HasPrefix(got, reason[:20]) {
			t.Errorf("reason sent to serve %.40q does not start as the run's %.40q", got, reason)
		}
	}
}

// TestOutputBounded attacks the run's logs as an agent (or a repository's setup or
// tests) that prints without end would: 100 MiB in one round. The artifact's file keeps
// at most DefaultMaxTranscript, never filling the runner host's disk; the job log gets
// at most the run's share (DefaultMaxJobLog, all phases together) and then says, in a
// line of the runner's own, how much it left out and which file of the artifact holds it.
// A later phase finds the share spent and says so at once.
func TestOutputBounded(t *testing.T) {
	var job bytes.Buffer
	rec := newRecorder(Config{Log: &job})
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "agent-round-1.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := rec.logTo(f, "agent-round-1.log")
	chunk := bytes.Repeat([]byte("yes é\n"), 1<<17) // 1 MiB less a little
	written := 0
	for written < 100<<20 {
		if n, err := w.Write(chunk); err != nil || n != len(chunk) {
			t.Fatalf("Write = %d, %v", n, err)
		}
		written += len(chunk)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if info.Size() != DefaultMaxTranscript {
		t.Errorf("the transcript holds %d bytes, want the first %d", info.Size(), DefaultMaxTranscript)
	}
	log := job.String()
	if job.Len() > DefaultMaxJobLog+4096 {
		t.Fatalf("the job log got %d bytes of %d: more than the run's share of %d", job.Len(), written, DefaultMaxJobLog)
	}
	if !utf8.ValidString(log) {
		t.Error("the job log's cut split a character")
	}
	omitted := written - strings.Index(log, "\n[bumper: ")
	for _, want := range []string{
		"[bumper: the job log shows at most 8 MiB of what runs in the VM; the rest of this output is in agent-round-1.log in the run's artifact]",
		fmt.Sprintf("[bumper: %d bytes of this output (of %d) are not in the job log; agent-round-1.log in the run's artifact holds its first 64 MiB]", omitted, written),
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the job log does not say %q; it ends:\n%s", want, log[max(len(log)-600, 0):])
		}
	}
	// The next phase: its output is in its own file, and the job log says where.
	job.Reset()
	v, err := os.Create(filepath.Join(dir, "verification-round-1.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	w = rec.logTo(v, "verification-round-1.log")
	if _, err := w.Write([]byte("FAIL: widgets\n")); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	if data, _ := os.ReadFile(v.Name()); string(data) != "FAIL: widgets\n" || strings.Contains(job.String(), "FAIL: widgets") ||
		!strings.Contains(job.String(), "verification-round-1.log in the run's artifact") {
		t.Errorf("the next phase: file %q, job log %q", data, job.String())
	}
}

// TestCheckPins: a repository cannot turn the runner host's pin of a mirror into a way
// to every service on its address: the pinned name (or a wildcard over it) on any port
// but 443 is refused; the default port, other hosts and no pins pass.
func TestCheckPins(t *testing.T) {
	pins := map[string]string{"npm.corp.internal": "10.0.0.5"}
	tests := []struct {
		name, policy string
		pins         map[string]string
		want         string
	}{
		{"the pinned host on its default port", "version: 1\nallowlist: [npm.corp.internal]\n", pins, ""},
		{"the pinned host on 443", "version: 1\nallowlist: [\"npm.corp.internal:443\"]\n", pins, ""},
		{"another host on any port", "version: 1\nallowlist: [\"registry.npmjs.org:8443\"]\n", pins, ""},
		{"no pins", "version: 1\nallowlist: [\"npm.corp.internal:22\"]\n", nil, ""},
		{"the pinned host's ssh", "version: 1\nallowlist: [\"npm.corp.internal:22\"]\n", pins, "port 22"},
		{"a wildcard over it, on redis", "version: 1\nallowlist: [\"*.corp.internal:443,6379\"]\n", pins, "port 6379"},
		{"upper case, in the setup's list", "version: 1\nenvironment: {setup: s.sh, allow: [\"NPM.Corp.Internal:9200\"]}\n", pins, "environment.allow"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := repoconfig.Parse([]byte(tt.policy))
			if err != nil {
				t.Fatal(err)
			}
			err = checkPins(p, tt.pins)
			if (tt.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("checkPins = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestToolCounter: tool calls are counted by name, at most maxToolNames names, the rest
// under otherTools; an agent that floods events past what the harness delivers, or
// calls tools without names, still has every call counted.
func TestToolCounter(t *testing.T) {
	h := &evidence.Harness{Name: "claude-code", ToolCalls: map[string]int{}}
	c := &toolCounter{h: h}
	for i := range maxToolNames + 5 {
		c.event(harness.Event{Kind: harness.EventToolCall, Tool: fmt.Sprintf("tool-%d", i)})
	}
	c.event(harness.Event{Kind: harness.EventToolCall, Tool: "tool-0"})
	c.event(harness.Event{Kind: harness.EventMessage, Tool: "not a call"})
	// The harness counted 50 more calls than it delivered (a flood past MaxEvents).
	c.settle(harness.Counts{Turns: 3, ToolCalls: maxToolNames + 6 + 50, UnknownEvents: 2})
	total := 0
	for _, n := range h.ToolCalls {
		total += n
	}
	if len(h.ToolCalls) != maxToolNames || h.ToolCalls["tool-0"] != 2 || h.ToolCalls[otherTools] != 6+50 || total != maxToolNames+6+50 {
		t.Fatalf("%d names, tool-0 %d, others %d, total %d", len(h.ToolCalls), h.ToolCalls["tool-0"], h.ToolCalls[otherTools], total)
	}
	if h.Turns != 3 || h.UnknownEvents != 2 {
		t.Fatalf("turns %d, unknown %d", h.Turns, h.UnknownEvents)
	}
}

// TestReasonsSayWhatTheAgentLeft: what the agent's command left running is said in the
// reason of whatever fails after it (a fork bomb at the process limit, processes the VM
// could not end), and a failed command of the runner's own is quoted by its last lines,
// where its error is, not by its exit status alone.
func TestReasonsSayWhatTheAgentLeft(t *testing.T) {
	for _, tt := range []struct {
		name  string
		agent sandbox.Result
		want  string
	}{
		{"nothing left", sandbox.Result{}, ""},
		{"a background job", sandbox.Result{Leftover: 3}, "the agent left 3 processes running; the VM ended them"},
		{"a fork bomb", sandbox.Result{Leftover: sandbox.DefaultMaxProcs - 3},
			"the agent left 509 processes running, at the VM's process limit of 512 per command; the VM ended them"},
		{"many, below the limit", sandbox.Result{Leftover: 400}, "the agent left 400 processes running; the VM ended them"},
		{"processes that would not die", sandbox.Result{Leftover: 512, KillError: "3 processes of uid 1000 still alive 10s after SIGKILL"},
			"the agent left 512 processes running, at the VM's process limit of 512 per command, and the VM could not end them all (3 processes of uid 1000 still alive 10s after SIGKILL)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := leftover(tt.agent, 0); got != tt.want {
				t.Errorf("leftover = %q, want %q", got, tt.want)
			}
		})
	}
	tail := &tailWriter{max: 64}
	_, _ = tail.Write([]byte(strings.Repeat("x", 100) + "\nbumper: committing what the agent left uncommitted:\n?? a\n\nsh: 1: Cannot fork\n"))
	if got := lastLines(tail.String(), 3, 300); got != "?? a / sh: 1: Cannot fork" {
		t.Errorf("lastLines = %q", got)
	}
	if got := lastLines("fatal: "+strings.Repeat("é", 400), 3, 100); len(got) > 100 || !utf8.ValidString(got) || !strings.HasPrefix(got, ellipsis) {
		t.Errorf("a long last line: %q", got)
	}
}

// testRun is a run after its exchange, as execute makes it, with cfg's defaults and a
// fresh recorder.
func testRun(cfg Config, g *grant) *run {
	cfg = cfg.withDefaults()
	return &run{cfg: cfg, grant: g, rec: newRecorder(cfg)}
}

// TestJobLogMasksSecrets: an agent that prints a token, in pieces across writes or with
// a zero-width space inside it, does not get it into the job log, which GitHub keeps and
// shows to every reader of the repository; the line holding it still shows.
func TestJobLogMasksSecrets(t *testing.T) {
	tok := "ghp_" + strings.Repeat("Zq8", 12)
	for _, c := range []struct {
		name   string
		writes []string
		want   string
	}{
		{"in one write", []string{"wrote " + tok + " to config.js\n"}, "wrote ghp_******** (40 characters) to config.js\n"},
		{"split across writes", []string{"wrote " + tok[:10], tok[10:] + " to config.js\nnext\n"}, "wrote ghp_******** (40 characters) to config.js\nnext\n"},
		{"a last line without a newline", []string{"token " + tok}, "token ghp_******** (40 characters)"},
		{"a zero-width space inside", []string{"ok\nwrote " + tok[:20] + "\u200b" + tok[20:] + "\n"}, "ok\n[masked: 48 characters holding a secret]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var job bytes.Buffer
			rec := newRecorder(Config{Log: &job})
			var file bytes.Buffer
			w := rec.logTo(&file, "agent-round-1.log")
			for _, s := range c.writes {
				if _, err := w.Write([]byte(s)); err != nil {
					t.Fatal(err)
				}
			}
			_ = w.Close()
			if got := job.String(); strings.Contains(got, tok[4:20]) || !strings.HasPrefix(got, c.want) {
				t.Errorf("the job log: %q, want %q", got, c.want)
			}
			// The artifact's file is whole until the gate has run (maskKept).
			if file.String() != strings.Join(c.writes, "") {
				t.Errorf("the artifact's file: %q", file.String())
			}
		})
	}
}

func TestRunBudget(t *testing.T) {
	tests := []struct {
		policy  float64
		granted int64
		want    float64
	}{
		{0, 0, 0},
		{3, 0, 3},
		{0, 2_500_000, 2.5},
		{3, 2_500_000, 2.5},
		{2, 2_500_000, 2},
	}
	for _, tc := range tests {
		if got := runBudget(tc.policy, tc.granted); got != tc.want {
			t.Errorf("runBudget(%v, %d) = %v, want %v", tc.policy, tc.granted, got, tc.want)
		}
	}
}
