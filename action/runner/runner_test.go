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
		WorkItem: "acme/widgets#3", Attempt: 1, Nonce: "n", Stage: "implement",
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
		{"a stage that is none", func(c *Config) { c.Stage = "deploy" }, []string{"want plan, implement, fix or review"}},
		{"a work item that is not one", func(c *Config) { c.WorkItem = "acme/widgets#0" }, []string{"owner/repo#issue"}},
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

// TestCommitMessage: the title on one line, with its number, bounded; a title
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
	r := &run{cfg: Config{Out: t.TempDir(), Now: time.Now}, policy: p}
	if _, err := r.buildEnvironment(context.Background()); err == nil || !strings.Contains(err.Error(), "prebuilt image") || !strings.Contains(err.Error(), "environment:") {
		t.Fatalf("error %v", err)
	}
	if r.ev != nil && r.ev.Environment != nil {
		t.Fatalf("evidence of an environment that was never looked for: %+v", r.ev.Environment)
	}
}

// TestCut: a line cut for the evidence fits the schema's bound, ellipsis included, and
// never splits a character (the reason of TestRunInGoEnvironment's first failure: a
// detail of 1001 characters that made the evidence invalid).
func TestCut(t *testing.T) {
	tests := []struct {
		name string
		in   string
		n    int
		want string
	}{
		{"short enough", "abc", 3, "abc"},
		{"cut", "abcdef", 5, "ab…"},
		{"a character kept whole", "aé€z", 6, "aé…"},
		{"a character not split", "a€€z", 6, "a…"},
		{"nothing left", "abcdef", 2, "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := cut(tt.in, tt.n); got != tt.want || !utf8.ValidString(got) {
				t.Fatalf("cut(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
			}
		})
	}
	long := strings.Repeat("é", 2000)
	if got := cut(long, maxLine); len(got) > maxLine || utf8.RuneCountInString(got) > maxLine {
		t.Fatalf("a cut line is %d bytes", len(got))
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

// TestSetupLogBounded: a repository's setup script that prints without end (until its
// timeout) fills the job log's stream, never the runner host's disk: the artifact's
// environment log keeps at most DefaultMaxTranscript bytes, as a round's transcript does.
func TestSetupLogBounded(t *testing.T) {
	var job bytes.Buffer
	r := &run{cfg: Config{Log: &job}}
	path := filepath.Join(t.TempDir(), EnvironmentLogFile)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := r.logTo(f)
	chunk := bytes.Repeat([]byte("yes\n"), 1<<18) // 1 MiB
	for range DefaultMaxTranscript/len(chunk) + 8 {
		if _, err := w.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Size() > DefaultMaxTranscript {
		t.Fatalf("the environment log holds %d bytes, more than %d", info.Size(), DefaultMaxTranscript)
	}
	if job.Len() <= DefaultMaxTranscript {
		t.Fatalf("the job log got %d bytes: all of the output goes there", job.Len())
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
