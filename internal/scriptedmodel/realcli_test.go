//go:build unix

package scriptedmodel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/bumperdev/bumper/internal/testgate"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The real agents' binaries, when a test may run them. The versions are the ones these
// tests were written against; their request and stream formats change between versions.
const (
	envClaude = "BUMPER_TEST_CLAUDE" // npm @anthropic-ai/claude-code@2.1.328: node_modules/@anthropic-ai/claude-code/bin/claude.exe
	envCodex  = "BUMPER_TEST_CODEX"  // npm @openai/codex@0.171.0: node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex
)

// testSH is the repository's test: it passes once the agent wrote hello.txt.
const testSH = "#!/bin/sh\ngrep -qx 'hello from the script' hello.txt && echo TEST-SH-PASSED\n"

// envCapture names a directory where the real-agent tests save every request body they
// receive (<test>-<n>.json), to refresh testdata when a CLI's version changes.
const envCapture = "BUMPER_TEST_CAPTURE_DIR"

// startAgentServer starts a server for a real agent, through a handler that saves the
// request bodies when envCapture is set.
func startAgentServer(t *testing.T, script Script, opts Options) *Server {
	t.Helper()
	dir := os.Getenv(envCapture)
	if dir == "" {
		return start(t, script, opts)
	}
	s := New(script, opts)
	n := 0
	var mu sync.Mutex
	capture := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		name := fmt.Sprintf("%s-%d.json", strings.ReplaceAll(t.Name(), "/", "-"), n)
		n++
		mu.Unlock()
		if len(body) > 0 {
			if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
				t.Errorf("failed to capture a request: %v", err)
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		s.ServeHTTP(w, r)
	})
	hs := httptest.NewServer(capture)
	t.Cleanup(hs.Close)
	s.url = hs.URL
	return s
}

// workspace is a temporary home and git repository for one agent run, owned by the
// user the agent runs as.
type workspace struct {
	dir, home, repo string
	cred            *syscall.Credential // nil: run as the test's own user
}

// newWorkspace makes the workspace. As root, the agent runs as nobody: Claude Code
// refuses to bypass its permission prompts as root, and an agent has no business being
// root anyway.
func newWorkspace(t *testing.T) *workspace {
	t.Helper()
	dir, err := os.MkdirTemp("", "scriptedmodel-agent-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ws := &workspace{dir: dir, home: filepath.Join(dir, "home"), repo: filepath.Join(dir, "repo")}
	for _, d := range []string{ws.home, ws.repo} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ws.repo, "test.sh"), []byte(testSH), 0o755); err != nil {
		t.Fatal(err)
	}
	if git, err := exec.LookPath("git"); err == nil {
		cmd := exec.Command(git, "init", "-q", ws.repo)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git init: %v\n%s", err, out)
		}
	}
	if os.Geteuid() != 0 {
		return ws
	}
	uid, gid := uint32(65534), uint32(65534)
	if u, err := user.Lookup("nobody"); err == nil {
		if n, err := strconv.ParseUint(u.Uid, 10, 32); err == nil {
			uid = uint32(n)
		}
		if n, err := strconv.ParseUint(u.Gid, 10, 32); err == nil {
			gid = uint32(n)
		}
	}
	ws.cred = &syscall.Credential{Uid: uid, Gid: gid}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(uid), int(gid))
	})
	if err != nil {
		t.Fatalf("failed to give the workspace to uid %d: %v", uid, err)
	}
	return ws
}

// run runs the agent in the repository with only env (and PATH, HOME, LANG), stdin
// empty, and returns its stdout.
func (ws *workspace) run(t *testing.T, bin string, env []string, args ...string) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = ws.repo
	cmd.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + ws.home, "LANG=C.UTF-8"}, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: ws.cred, Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	t.Logf("%s exited after %v: %v", filepath.Base(bin), time.Since(start).Round(time.Millisecond), err)
	t.Logf("stdout:\n%s", stdout.Bytes())
	if stderr.Len() > 0 {
		t.Logf("stderr:\n%s", stderr.Bytes())
	}
	return stdout.Bytes(), err
}

// jsonLines decodes a JSONL stream, failing on a line that is not JSON.
func jsonLines(t *testing.T, out []byte) []map[string]any {
	t.Helper()
	var lines []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("the agent's output has a line that is not JSON: %v\n%s", err, sc.Bytes())
		}
		lines = append(lines, m)
	}
	return lines
}

// logRequests shows what the agent sent, for whoever reads the test's output.
func logRequests(t *testing.T, s *Server) {
	t.Helper()
	for i, r := range s.Requests() {
		var tools []string
		for _, tl := range r.Tools {
			tools = append(tools, tl.String())
		}
		var results []string
		for _, res := range r.ToolResults {
			results = append(results, fmt.Sprintf("%s(%s)=%q", res.Tool, res.CallID, clip(res.Output, 80)))
		}
		var calls []string
		for _, c := range r.Calls {
			calls = append(calls, c.Tool+" "+clip(c.Input, 120))
		}
		if r.Query != "" {
			r.Path += "?" + r.Query
		}
		t.Logf("request %d: %s %s api=%s key=%s matched=%v model=%q stream=%v outcome=%s turn=%d status=%d\n  user-agent=%q anthropic-beta=%q\n  tools=[%s]\n  results=[%s]\n  calls=[%s] note=%q",
			i, r.Method, r.Path, r.API, r.KeyHeader, r.KeyMatched, r.Model, r.Stream, r.Outcome, r.Turn, r.Status,
			r.UserAgent, r.Header.Get("Anthropic-Beta"), strings.Join(tools, ", "), strings.Join(results, "; "), strings.Join(calls, "; "), r.Note)
	}
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// turnRequests are the records of the requests that played script turns.
func turnRequests(s *Server) []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Outcome == OutcomeTurn {
			out = append(out, r)
		}
	}
	return out
}

// checkAgentRun checks what every real-agent run must show: the script played to its
// end, with the key, each turn after the first carrying the previous turn's results,
// and the file written and the test run by the agent's own tools.
func checkAgentRun(t *testing.T, s *Server, ws *workspace, key string) {
	t.Helper()
	if !s.Finished() {
		t.Errorf("the agent played %d of the script's turns", s.Played())
	}
	for _, r := range s.Requests() {
		if !r.KeyMatched {
			t.Errorf("%s %s presented %s (fingerprint %s), not the key", r.Method, r.Path, r.KeyRedacted, r.KeySHA256)
		}
		if r.KeySHA256 != "" && r.KeySHA256 != Fingerprint(key) {
			t.Errorf("%s %s: fingerprint %s is not the key's", r.Method, r.Path, r.KeySHA256)
		}
	}
	turns := turnRequests(s)
	if len(turns) != 3 {
		t.Fatalf("%d requests played turns, want 3", len(turns))
	}
	wrote, ran := turns[1].ToolResults, turns[2].ToolResults
	if len(wrote) != 1 || wrote[0].IsError {
		t.Errorf("turn 1's request carries results %+v, want the write's", wrote)
	}
	if len(ran) != 1 || !strings.Contains(ran[0].Output, "TEST-SH-PASSED") {
		t.Errorf("turn 2's request carries results %+v, want test.sh's output", ran)
	}
	got, err := os.ReadFile(filepath.Join(ws.repo, "hello.txt"))
	if err != nil || string(got) != "hello from the script\n" {
		t.Errorf("hello.txt = %q, %v; want the script's line", got, err)
	}
}

// TestRealClaudeCode runs the real Claude Code CLI against the server, as the harness
// runs it in the VM: the script makes it write a file with Write, run the repository's
// test with Bash, and finish. Then the same CLI with a sentinel key is refused with
// 401 and plays nothing: through the firewall, a test passes only if the gateway put
// the real key in.
func TestRealClaudeCode(t *testing.T) {
	bin := testgate.AgentCLI(t, envClaude, "claude")
	const key = "sk-ant-api03-scripted-real-key-for-tests-0123456789"
	claude := func(t *testing.T, ws *workspace, s *Server, apiKey string) ([]byte, error) {
		return ws.run(t, bin, []string{
			"ANTHROPIC_BASE_URL=" + s.URL(),
			"ANTHROPIC_API_KEY=" + apiKey,
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		}, "-p", "Write hello.txt, then run sh test.sh.",
			"--output-format", "stream-json", "--verbose",
			"--max-turns", "5",
			"--allowedTools", "Bash,Write",
			"--permission-mode", "bypassPermissions")
	}

	t.Run("script", func(t *testing.T) {
		ws := newWorkspace(t)
		s := startAgentServer(t, Script{
			Do(WriteFile(filepath.Join(ws.repo, "hello.txt"), "hello from the script\n")).WithUsage(Usage{Input: 1200, Output: 40, CacheRead: 300}),
			Do(RunCommand("sh test.sh")),
			Say("Done: hello.txt is written and test.sh passes."),
		}, Options{Key: key})
		out, err := claude(t, ws, s, key)
		logRequests(t, s)
		if err != nil {
			t.Fatalf("claude failed: %v\n%s", err, out)
		}
		checkAgentRun(t, s, ws, key)
		lines := jsonLines(t, out)
		last := lines[len(lines)-1]
		if last["type"] != "result" || last["is_error"] != false || last["result"] != "Done: hello.txt is written and test.sh passes." {
			t.Errorf("claude's last event = %v, want a result without error that says the final text", last)
		}
		// The first turn's usage reached the CLI as scripted.
		for _, l := range lines {
			if l["type"] != "assistant" {
				continue
			}
			u, _ := l["message"].(map[string]any)["usage"].(map[string]any)
			if u["input_tokens"] != 1200.0 || u["cache_read_input_tokens"] != 300.0 {
				t.Errorf("claude's first assistant message reports usage %v, want the script's", u)
			}
			break
		}
	})

	t.Run("sentinel refused", func(t *testing.T) {
		ws := newWorkspace(t)
		s := start(t, Script{Do(RunCommand("touch pwned"))}, Options{Key: key})
		const sentinel = "sk-ant-bumper-sentinel-not-a-key"
		out, err := claude(t, ws, s, sentinel)
		logRequests(t, s)
		if err == nil {
			t.Errorf("claude with the sentinel key succeeded:\n%s", out)
		}
		if s.Played() != 0 {
			t.Errorf("a request with the sentinel played %d turns", s.Played())
		}
		reqs := s.Requests()
		if len(reqs) == 0 {
			t.Fatal("claude sent no request")
		}
		for _, r := range reqs {
			if r.Outcome != OutcomeUnauthorized || r.Status != 401 || r.KeyMatched || r.KeySHA256 != Fingerprint(sentinel) {
				t.Errorf("%s %s: outcome %s, status %d, matched %v, fingerprint %s; want 401 for the sentinel", r.Method, r.Path, r.Outcome, r.Status, r.KeyMatched, r.KeySHA256)
			}
		}
		if _, err := os.Stat(filepath.Join(ws.repo, "pwned")); err == nil {
			t.Error("the refused script's command ran")
		}
	})
}

// TestRealCodex runs the real Codex CLI against the server, as the harness runs it in
// the VM: the script makes it write a file with apply_patch, run the repository's test
// with exec_command, and finish; then the same CLI with a sentinel key is refused.
// Codex is given a custom model provider (base_url, env_key, wire_api responses):
// the built-in openai provider tries a WebSocket first (GET /v1/responses with
// Upgrade) and falls back to HTTPS only after five failures.
func TestRealCodex(t *testing.T) {
	bin := testgate.AgentCLI(t, envCodex, "codex")
	const key = "sk-proj-scripted-real-key-for-tests-0123456789"
	codex := func(t *testing.T, ws *workspace, s *Server, apiKey string) ([]byte, error) {
		provider := fmt.Sprintf(`model_providers.bumper={name="bumper",base_url=%q,env_key="OPENAI_API_KEY",wire_api="responses"}`, s.OpenAIBaseURL())
		return ws.run(t, bin, []string{"OPENAI_API_KEY=" + apiKey},
			"exec", "--json", "--skip-git-repo-check",
			"--sandbox", "danger-full-access",
			"-m", "gpt-5.5",
			"-c", "model_provider=bumper",
			"-c", provider,
			"-c", "web_search=disabled",
			"Write hello.txt, then run sh test.sh.")
	}

	t.Run("script", func(t *testing.T) {
		ws := newWorkspace(t)
		s := startAgentServer(t, Script{
			Do(WriteFile("hello.txt", "hello from the script\n")).WithUsage(Usage{Input: 5000, Output: 50, CacheRead: 4096, Reasoning: 10}),
			Do(RunCommand("sh test.sh")),
			Say("Done: hello.txt is written and test.sh passes."),
		}, Options{Key: key})
		out, err := codex(t, ws, s, key)
		logRequests(t, s)
		if err != nil {
			t.Fatalf("codex failed: %v\n%s", err, out)
		}
		checkAgentRun(t, s, ws, key)
		turns := turnRequests(s)
		if c := turns[0].Calls; len(c) != 1 || c[0].Tool != "apply_patch" {
			t.Errorf("turn 0 called %+v, want apply_patch", c)
		}
		if c := turns[1].Calls; len(c) != 1 || c[0].Tool != "exec_command" {
			t.Errorf("turn 1 called %+v, want exec_command", c)
		}
		var sawPatch, sawCommand, sawAnswer bool
		for _, l := range jsonLines(t, out) {
			if l["type"] == "turn.completed" {
				// Codex adds up the turns' usage: only turn 0 reports cached and
				// reasoning tokens.
				u, _ := l["usage"].(map[string]any)
				if u["cached_input_tokens"] != 4096.0 || u["reasoning_output_tokens"] != 10.0 {
					t.Errorf("codex reports usage %v, want the script's cache and reasoning tokens", u)
				}
			}
			item, _ := l["item"].(map[string]any)
			if l["type"] != "item.completed" || item == nil {
				continue
			}
			switch item["type"] {
			case "file_change":
				sawPatch = true
			case "command_execution":
				sawCommand = item["exit_code"] == 0.0 && strings.Contains(fmt.Sprint(item["aggregated_output"]), "TEST-SH-PASSED")
			case "agent_message":
				sawAnswer = item["text"] == "Done: hello.txt is written and test.sh passes."
			}
		}
		if !sawPatch || !sawCommand || !sawAnswer {
			t.Errorf("codex's events show patch %v, command %v, answer %v; want all three:\n%s", sawPatch, sawCommand, sawAnswer, out)
		}
	})

	t.Run("sentinel refused", func(t *testing.T) {
		ws := newWorkspace(t)
		s := start(t, Script{Do(RunCommand("touch pwned"))}, Options{Key: key})
		const sentinel = "sk-bumper-sentinel-not-a-key"
		out, err := codex(t, ws, s, sentinel)
		logRequests(t, s)
		if err == nil {
			t.Errorf("codex with the sentinel key succeeded:\n%s", out)
		}
		if s.Played() != 0 {
			t.Errorf("a request with the sentinel played %d turns", s.Played())
		}
		reqs := s.Requests()
		if len(reqs) == 0 {
			t.Fatal("codex sent no request")
		}
		for _, r := range reqs {
			if r.Outcome != OutcomeUnauthorized || r.KeyMatched || r.KeySHA256 != Fingerprint(sentinel) {
				t.Errorf("%s %s: outcome %s, matched %v, fingerprint %s; want 401 for the sentinel", r.Method, r.Path, r.Outcome, r.KeyMatched, r.KeySHA256)
			}
		}
		if _, err := os.Stat(filepath.Join(ws.repo, "pwned")); err == nil {
			t.Error("the refused script's command ran")
		}
	})
}
