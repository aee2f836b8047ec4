package demo

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/internal/repoconfig"
	"github.com/bumperdev/bumper/internal/repoconfig/repoconfigtest"
	"github.com/bumperdev/bumper/internal/testgate"
)

// TestSampleRepository: the sample's policy is one Bumper accepts, with the Go
// environment and the scripted reviewer, and its files are all there.
func TestSampleRepository(t *testing.T) {
	files, err := sampleFiles()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"go.mod", "widgets.go", "widgets_test.go", ".bumper/agent.sh", ".bumper/reviewer.sh", policyPath, workflowPath} {
		if files[f] == "" {
			t.Errorf("the sample has no %s (it has %d files)", f, len(files))
		}
	}
	p, err := repoconfig.Parse([]byte(files[policyPath]))
	if err != nil {
		t.Fatalf("the sample's policy: %v", err)
	}
	if p.Environment == nil || strings.Join(p.Environment.Packages, ",") != "golang-go" || !p.ReviewerOn() ||
		p.ReviewerHarness().Command != "sh .bumper/reviewer.sh" || strings.Join(p.Verification, ",") != "go test ./..." {
		t.Fatalf("policy %+v", p)
	}
	if is := sampleIssue(); is.Title != "Total skips the first box" || !strings.Contains(is.Body, "TestTotal") {
		t.Fatalf("issue %+v", is)
	}
}

// TestSampleFix: the sample's test fails as the issue says, and passes after the edit
// the scripted agent and the scripted model make (the same sed), with the host's Go.
func TestSampleFix(t *testing.T) {
	testgate.Command(t, "go", "golang-go")
	files, err := sampleFiles()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range []string{"go.mod", "widgets.go", "widgets_test.go"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(files[f]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goTest := func() (string, error) {
		cmd := exec.Command("go", "test", "./...")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=", "GOTOOLCHAIN=local")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := goTest(); err == nil || !strings.Contains(out, "Total([3 4 2]) = 6, want 9") {
		t.Fatalf("before the fix, go test: %v\n%s", err, out)
	}
	// The agent's and the model's edit, taken from their scripts so they cannot drift.
	if seds := regexpSeds(t, files[".bumper/agent.sh"]); len(seds) != 2 || seds[1] != fixSed || seds[0] != rangeSed {
		t.Fatalf("the agent's edits %q are not the model's: the round's %q, the fix %q", seds, rangeSed, fixSed)
	}
	cmd := exec.Command("sed", "-i", fixSed, "widgets.go")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sed: %v\n%s", err, out)
	}
	if out, err := goTest(); err != nil {
		t.Fatalf("after the fix, go test: %v\n%s", err, out)
	}
}

// regexpSeds are the sed expressions of the agent script's edits, in the script's
// order.
func regexpSeds(t *testing.T, script string) []string {
	t.Helper()
	var seds []string
	for _, l := range strings.Split(script, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "sed -i '"); ok {
			expr, _, _ := strings.Cut(rest, "'")
			seds = append(seds, expr)
		}
	}
	if len(seds) == 0 {
		t.Fatal("the agent script makes no sed edit")
	}
	return seds
}

// TestPolicyExample: the file the demo offers a repository without one is one Bumper
// reads and an editor with the schema does not flag.
func TestPolicyExample(t *testing.T) {
	repoconfigtest.Valid(t, "policyExample", []byte(policyExample))
}

func TestAgentPolicy(t *testing.T) {
	files, err := sampleFiles()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, agent, cmd string
		scripted         bool
		want             repoconfig.Harness
	}{
		{name: "the scripted agent", agent: AgentCommand, want: repoconfig.Harness{Name: "command", Command: "sh .bumper/agent.sh"}},
		{name: "the user's program, quoted", agent: AgentCommand, cmd: `my-agent --task "$BUMPER_TASK": go`, want: repoconfig.Harness{Name: "command", Command: `my-agent --task "$BUMPER_TASK": go`}},
		{name: "claude code", agent: AgentClaudeCode, scripted: true, want: repoconfig.Harness{Name: "claude-code"}},
		{name: "codex against the scripted model", agent: AgentCodex, scripted: true, want: repoconfig.Harness{Name: "codex", Model: "gpt-5.5"}},
		{name: "codex against a real endpoint", agent: AgentCodex, want: repoconfig.Harness{Name: "codex"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, err := agentPolicy(files[policyPath], tc.agent, tc.cmd, tc.scripted)
			if err != nil {
				t.Fatal(err)
			}
			p, err := repoconfig.Parse([]byte(text))
			if err != nil {
				t.Fatalf("%v\n%s", err, text)
			}
			repoconfigtest.Valid(t, "the demo's policy", []byte(text))
			h := p.Harness
			if h.Name != tc.want.Name || h.Command != tc.want.Command || h.Model != tc.want.Model || (h.Name != "command") != (h.Version != "") {
				t.Fatalf("harness %+v, want %+v", h, tc.want)
			}
			// The reviewer stays the scripted one whatever the agent.
			if p.ReviewerHarness().Command != "sh .bumper/reviewer.sh" {
				t.Fatalf("reviewer %+v", p.ReviewerHarness())
			}
		})
	}
}

func TestParseIssue(t *testing.T) {
	for _, tc := range []struct {
		name, in, title, body, err string
	}{
		{name: "title and body", in: "Fix the parser\nIt drops the last line.\n", title: "Fix the parser", body: "It drops the last line.\n"},
		{name: "a heading as title", in: "# Fix the parser\n\nIt drops the last line.", title: "Fix the parser", body: "It drops the last line.\n"},
		{name: "title only", in: "Fix the parser", title: "Fix the parser", body: "\n"},
		{name: "empty first line", in: "\nIt drops the last line.", err: "title"},
		{name: "empty file", in: "", err: "title"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is, err := parseIssue([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one about %q", err, tc.err)
				}
				return
			}
			if err != nil || is.Title != tc.title || is.Body != tc.body {
				t.Fatalf("%+v, %v", is, err)
			}
		})
	}
}

func TestCheckFlags(t *testing.T) {
	keys := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-x"}
	getenv := func(k string) string { return keys[k] }
	for _, tc := range []struct {
		name string
		cfg  Config
		err  string
	}{
		{name: "the default", cfg: Config{Agent: AgentCommand}},
		{name: "an unknown agent", cfg: Config{Agent: "gpt"}, err: "want command, claude-code or codex"},
		{name: "--agent-cmd with a CLI", cfg: Config{Agent: AgentCodex, AgentCmd: "x"}, err: "does not go with --agent codex"},
		{name: "--model-base-url with the command harness", cfg: Config{Agent: AgentCommand, ModelBaseURL: "https://api.anthropic.com"}, err: "for --agent claude-code or codex"},
		{name: "--model-base-url not a URL", cfg: Config{Agent: AgentClaudeCode, ModelBaseURL: "api.anthropic.com"}, err: "want an http(s) URL"},
		{name: "--model-base-url without the key", cfg: Config{Agent: AgentCodex, ModelBaseURL: "https://api.openai.com"}, err: "OPENAI_API_KEY"},
		{name: "--model-base-url with the key", cfg: Config{Agent: AgentClaudeCode, ModelBaseURL: "https://api.anthropic.com"}},
		{name: "--repo without --issue", cfg: Config{Agent: AgentCommand, RepoDir: "."}, err: "--repo needs --issue"},
		{name: "--repo with --agent", cfg: Config{Agent: AgentClaudeCode, RepoDir: ".", IssueFile: "i.md"}, err: "chooses the agent"},
		{name: "--issue without --repo", cfg: Config{Agent: AgentCommand, IssueFile: "i.md"}, err: "--issue is the task for --repo"},
		{name: "--repo and --issue", cfg: Config{Agent: AgentCommand, RepoDir: ".", IssueFile: "i.md"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkFlags(&tc.cfg, getenv)
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("err %v, want %q", err, tc.err)
			}
		})
	}
}

func TestCheckHost(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	err = checkHost(self, 1000)
	if err == nil || !strings.Contains(err.Error(), "root: each run makes a network namespace") {
		t.Fatalf("as a user: %v", err)
	}
	t.Run("a dynamically linked binary is named", func(t *testing.T) {
		// The test binary links the C library when cgo is on; /bin/sh always does.
		if err := staticBinary("/bin/sh"); err == nil || !strings.Contains(err.Error(), "make build") {
			t.Fatalf("%v", err)
		}
	})
}

// TestInspectRepo: a checkout the demo cannot take is refused with what to do.
func TestInspectRepo(t *testing.T) {
	testgate.Command(t, "git", "git")
	ctx := context.Background()
	newRepo := func(t *testing.T, files map[string]string) string {
		dir := filepath.Join(t.TempDir(), "My Project")
		mustGit(t, "", "init", "-q", "-b", "main", dir)
		for name, content := range files {
			p := filepath.Join(dir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		mustGit(t, dir, "add", ".")
		mustGit(t, dir, "-c", "user.name=t", "-c", "user.email=t@example.test", "commit", "-q", "-m", "start")
		return dir
	}
	policy := "version: 1\nharness: {name: command, command: make fix}\nverification: [make test]\n"
	t.Run("a committed checkout with a policy", func(t *testing.T) {
		dir := newRepo(t, map[string]string{policyPath: policy, "Makefile": "test:\n"})
		u, err := inspectRepo(ctx, filepath.Join(dir, ".github"))
		if err != nil {
			t.Fatal(err)
		}
		if u.dir != dir || u.name != "My-Project" || u.hasWorkflow || u.policy.Harness.Command != "make fix" || len(u.head) != 40 {
			t.Fatalf("%+v", u)
		}
	})
	for _, tc := range []struct {
		name  string
		files map[string]string
		dirty func(t *testing.T, dir string)
		err   string
	}{
		{name: "no policy", files: map[string]string{"README.md": "x"}, err: "has no .github/bumper.yml at HEAD"},
		{name: "a policy Bumper refuses", files: map[string]string{policyPath: "version: 1\nharnes: {}\n"}, err: ".github/bumper.yml at HEAD"},
		{name: "a changed file", files: map[string]string{policyPath: policy}, err: "uncommitted changes",
			dirty: func(t *testing.T, dir string) {
				if err := os.WriteFile(filepath.Join(dir, policyPath), []byte(policy+"# more\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "an untracked file", files: map[string]string{policyPath: policy}, err: "only committed files go into the emulator",
			dirty: func(t *testing.T, dir string) {
				if err := os.WriteFile(filepath.Join(dir, "new.go"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := newRepo(t, tc.files)
			if tc.dirty != nil {
				tc.dirty(t, dir)
			}
			if _, err := inspectRepo(ctx, dir); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err %v, want %q", err, tc.err)
			}
		})
	}
	t.Run("not a checkout", func(t *testing.T) {
		if _, err := inspectRepo(ctx, t.TempDir()); err == nil || !strings.Contains(err.Error(), "is not a git checkout") {
			t.Fatalf("%v", err)
		}
	})
}

func mustGit(t *testing.T, dir string, args ...string) {
	t.Helper()
	if _, err := git(context.Background(), dir, args...); err != nil {
		t.Fatal(err)
	}
}

// TestPlainProgress: without a terminal, each step is a line when it starts and one
// when it ends, and notes are indented under it.
func TestPlainProgress(t *testing.T) {
	var b bytes.Buffer
	now := time.Unix(0, 0)
	p := &progress{w: &b, now: func() time.Time { return now }}
	s := p.start("Boot")
	now = now.Add(1500 * time.Millisecond)
	s.update("agent")
	s.update("agent")
	s.ok("done")
	p.note("a note")
	p.start("Fail").fail(os.ErrNotExist)
	want := "-> Boot\n   ... agent (1.5s)\n✓ Boot (1.5s): done\n    a note\n-> Fail\n✗ Fail (0s): file does not exist\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestExcerpt(t *testing.T) {
	for _, tc := range []struct {
		name, md string
		n        int
		want     []string
	}{
		{name: "text lines, blank ones skipped", md: "one\n\ntwo\nthree\n", n: 2, want: []string{"one", "two"}},
		{name: "tables, HTML and fences skipped", md: "**state**\n| a | b |\n|---|---|\n<sub>small</sub>\n```text\nquoted\n```\nreason\n", n: 5, want: []string{"**state**", "quoted", "reason"}},
		{name: "a long line cut", md: strings.Repeat("x", 120), n: 1, want: []string{strings.Repeat("x", 99) + "…"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := excerpt(tc.md, tc.n); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRunnerEnvKeys: a model key of the user's environment reaches the runs only when
// the user asked for that model; the scripted model's key replaces it otherwise.
func TestRunnerEnvKeys(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		user string // the user's repository's harness (--repo)
		want map[string]string
	}{
		{name: "the scripted agent: no key", cfg: Config{Agent: AgentCommand},
			want: map[string]string{"ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": ""}},
		{name: "claude code against a real endpoint: the user's Anthropic key only", cfg: Config{Agent: AgentClaudeCode, ModelBaseURL: "https://api.anthropic.com"},
			want: map[string]string{"OPENAI_API_KEY": "", "BUMPER_ANTHROPIC_BASE_URL": "https://api.anthropic.com"}},
		{name: "a user's codex repository against a real endpoint", cfg: Config{Agent: AgentCommand, RepoDir: "x", ModelBaseURL: "https://api.openai.com"}, user: AgentCodex,
			want: map[string]string{"ANTHROPIC_API_KEY": "", "BUMPER_OPENAI_BASE_URL": "https://api.openai.com"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &demo{cfg: tc.cfg, userHarness: tc.user, serveURL: "http://127.0.0.1:1"}
			env, err := d.runnerEnv()
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, kv := range env {
				k, v, _ := strings.Cut(kv, "=")
				if _, dup := got[k]; dup {
					t.Fatalf("%s twice in %q", k, env)
				}
				got[k] = v
			}
			for k, v := range tc.want {
				if g, ok := got[k]; !ok || g != v {
					t.Errorf("%s = %q (set %v), want %q", k, g, ok, v)
				}
			}
			// The key the user asked for is inherited, never written here.
			if tc.cfg.ModelBaseURL != "" {
				if _, ok := got[keyVar(orAgent(tc.user, tc.cfg.Agent))]; ok {
					t.Errorf("the user's key variable is overridden: %q", env)
				}
			}
		})
	}
	t.Run("claude code against the scripted model: its own key", func(t *testing.T) {
		d := &demo{cfg: Config{Agent: AgentClaudeCode}, serveURL: "http://127.0.0.1:1"}
		env, err := d.runnerEnv()
		defer d.close()
		if err != nil {
			t.Fatal(err)
		}
		joined := strings.Join(env, "\n")
		if !strings.Contains(joined, "ANTHROPIC_API_KEY=sk-demo-") || !strings.Contains(joined, "BUMPER_ANTHROPIC_BASE_URL="+d.model.URL()) ||
			strings.Count(joined, "ANTHROPIC_API_KEY=") != 1 {
			t.Fatalf("%q", env)
		}
	})
}

func orAgent(user, agent string) string {
	if user != "" {
		return user
	}
	return agent
}

// TestStatusText: the status comment's signed record never reaches the terminal.
func TestStatusText(t *testing.T) {
	body := ledger.StatusMarker + "\n**Bumper work item** · state: `awaiting-approval`\n" + ledger.RecordOpen + "sig\n{\n \"schema\": 2\n}" + ledger.RecordClose + "\n"
	got := excerpt(statusText(body), 5)
	if len(got) != 1 || got[0] != "**Bumper work item** · state: `awaiting-approval`" {
		t.Fatalf("%q", got)
	}
}

// TestProgressIsTheRunners attacks the demo's progress as an agent would that prints
// workflow commands: its "::group::" and "::error::" lines are in the job log as it
// printed them (the runner quotes its output), a "##[group]" of its own is broken by
// bumper's defuser, and neither may show as the run's phase or its reason. The runner's
// own groups and error are in the log as GitHub's runner writes them.
func TestProgressIsTheRunners(t *testing.T) {
	log := "##[group]Inputs and preconditions\n##[endgroup]\n##[group]agent (round 1)\n" +
		"agent: ::group::publish\n::group::pull_request\n::error::everything passed\n##\u2060[group]verification (round 9)\n" +
		"failed: the agent failed in round 1: the program exited with status 1 (12ms)\n##[endgroup]\n" +
		"##[error]the agent failed in round 1: the program exited with status 1\n##[error]Process completed with exit code 1.\n"
	if got := lastGroup(log); got != "agent (round 1)" {
		t.Errorf("phase %q, want the runner's agent (round 1)", got)
	}
	if got := firstError(log); got != "the agent failed in round 1: the program exited with status 1" {
		t.Errorf("reason %q, want the runner's", got)
	}
	if lastGroup("") != "" || firstError("agent: ::error::x\n") != "" {
		t.Error("a log without the runner's commands has a phase or a reason")
	}
}

// TestKeepNote: with --keep the demo says where to sign in to the web view and gives
// each local user's token.
func TestKeepNote(t *testing.T) {
	var b strings.Builder
	keepNote(&b, "http://127.0.0.1:8080", []ghemu.UserInfo{{Login: "maintainer", Token: "ghp_m"}, {Login: "reader", Token: "ghp_r"}})
	for _, want := range []string{"stay up (--keep): http://127.0.0.1:8080;", "sign in at http://127.0.0.1:8080/login",
		"user maintainer   token ghp_m", "user reader       token ghp_r", "x-access-token:TOKEN"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the note lacks %q:\n%s", want, b.String())
		}
	}
}
