package scriptedmodel

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// fit resolves one call against tools in dialect d.
func fit(t *testing.T, c Call, d dialect, tools ...DeclaredTool) (resolvedCall, error) {
	t.Helper()
	n := 0
	calls, err := Do(c).resolve(d, tools, func(p string) string { n++; return p + "x" })
	if err != nil {
		return resolvedCall{}, err
	}
	return calls[0], nil
}

// claudeTools and codexTools are what Claude Code 2.1.328 and Codex 0.171.0 (gpt-5.5)
// declare (testdata/*-request-3.json).
var (
	claudeTools = []DeclaredTool{{Name: "Agent"}, {Name: "Bash"}, {Name: "Edit"}, {Name: "Read"}, {Name: "Write"}}
	codexTools  = []DeclaredTool{{Name: "exec_command", Type: "function"}, {Name: "write_stdin", Type: "function"}, {Name: "apply_patch", Type: "custom"}, {Name: "view_image", Type: "function"}, {Type: "tool_search"}}
)

func TestHelpersFitTheDeclaredTools(t *testing.T) {
	cases := []struct {
		name  string
		call  Call
		d     dialect
		tools []DeclaredTool
		tool  string
		input string // JSON input, or a freeform tool's text
	}{
		{"claude write", WriteFile("/w/a.txt", "x\n"), dialectAnthropic, claudeTools, "Write", `{"file_path":"/w/a.txt","content":"x\n"}`},
		{"claude run", RunCommand("go test ./..."), dialectAnthropic, claudeTools, "Bash", `{"command":"go test ./...","description":"Run go test ./..."}`},
		{"anthropic text editor", WriteFile("a.txt", "x"), dialectAnthropic, []DeclaredTool{{Name: "str_replace_based_edit_tool", Type: "text_editor_20250728"}}, "str_replace_based_edit_tool", `{"command":"create","path":"a.txt","file_text":"x"}`},
		{"anthropic bash tool", RunCommand("ls"), dialectAnthropic, []DeclaredTool{{Name: "bash", Type: "bash_20250124"}}, "bash", `{"command":"ls"}`},
		{"anthropic write with Bash only", WriteFile("a.txt", "x"), dialectAnthropic, []DeclaredTool{{Name: "Bash"}}, "Bash", `{"command":"printf '%s' 'x' > 'a.txt'","description":"Run printf '%s' 'x' > 'a.txt'"}`},
		{"codex write", WriteFile("a.txt", "one\ntwo"), dialectResponses, codexTools, "apply_patch", "*** Begin Patch\n*** Add File: a.txt\n+one\n+two\n*** End Patch\n"},
		{"codex run", RunCommand("sh test.sh"), dialectResponses, codexTools, "exec_command", `{"cmd":"sh test.sh"}`},
		{"apply_patch as a function", WriteFile("a.txt", "x\n"), dialectResponses, []DeclaredTool{{Name: "apply_patch", Type: "function"}}, "apply_patch", `{"input":"*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch\n"}`},
		{"shell_command", RunCommand("ls"), dialectResponses, []DeclaredTool{{Name: "shell_command", Type: "function"}}, "shell_command", `{"command":"ls"}`},
		{"shell", RunCommand("ls"), dialectResponses, []DeclaredTool{{Name: "shell", Type: "function"}}, "shell", `{"command":["bash","-lc","ls"]}`},
		{"codex write with a shell only", WriteFile("a.txt", "x"), dialectResponses, []DeclaredTool{{Name: "exec_command", Type: "function"}}, "exec_command", `{"cmd":"printf '%s' 'x' > 'a.txt'"}`},
		{"chat run", RunCommand("ls"), dialectChat, []DeclaredTool{{Name: "exec_command", Type: "function"}}, "exec_command", `{"cmd":"ls"}`},
		{"freeform in chat", FreeformTool("apply_patch", "p"), dialectChat, nil, "apply_patch", `{"input":"p"}`},
		{"generic tool", Tool("Read", map[string]any{"file_path": "/etc/hostname"}), dialectAnthropic, claudeTools, "Read", `{"file_path":"/etc/hostname"}`},
		{"undeclared tool", Tool("Nope", nil), dialectAnthropic, claudeTools, "Nope", `{}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := fit(t, tc.call, tc.d, tc.tools...)
			if err != nil {
				t.Fatal(err)
			}
			input := string(c.Input)
			if c.Free {
				input = c.Raw
			}
			if c.Name != tc.tool || input != tc.input {
				t.Errorf("%s %s, want %s %s", c.Name, input, tc.tool, tc.input)
			}
		})
	}
}

func TestHelpersWithoutATool(t *testing.T) {
	for _, c := range []Call{RunCommand("ls"), WriteFile("a", "b")} {
		_, err := fit(t, c, dialectResponses, DeclaredTool{Name: "functions.exec", Type: "custom"}, DeclaredTool{Name: "wait", Type: "function"})
		if err == nil || !strings.Contains(err.Error(), "declares no tool that runs a command") || !strings.Contains(err.Error(), "wait (function)") {
			t.Errorf("%s: %v", c, err)
		}
	}
	// Served, the script's mistake is a 400 the agent shows, not a made-up answer.
	s := start(t, Script{Do(RunCommand("ls"))}, Options{Key: testKey})
	resp := openai(t, s, "/v1/responses", `{"model":"m","input":"go","tools":[{"type":"function","name":"wait"}]}`)
	if m := decode(t, resp.body); resp.status != 400 || !strings.HasPrefix(get(m, "error", "message").(string), "scriptedmodel: turn 0: failed to fit call 0") {
		t.Errorf("%d %s", resp.status, resp.body)
	}
	if r := s.Requests()[0]; r.Status != 400 || !strings.Contains(r.Note, "no tool that runs a command") {
		t.Errorf("record = %+v", r)
	}
}

func TestToolInputMustBeAnObject(t *testing.T) {
	for _, in := range []any{[]int{1}, "text", 5, map[string]any(nil)} {
		if _, err := fit(t, Tool("x", in), dialectAnthropic); err == nil || !strings.Contains(err.Error(), "JSON object") {
			t.Errorf("input %v: %v", in, err)
		}
	}
	if _, err := fit(t, Tool("x", func() {}), dialectAnthropic); err == nil {
		t.Error("an input that does not encode was accepted")
	}
	if _, err := fit(t, Tool("", nil), dialectAnthropic); err == nil {
		t.Error("a call without a tool name was accepted")
	}
}

// TestShellFallbackWritesTheContent runs the command WriteFile falls back to: the file
// holds the content exactly, quotes, backslashes, percent signs and all.
func TestShellFallbackWritesTheContent(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	dir := t.TempDir()
	content := "it's \"quoted\" \\n %s %% $HOME `id`\nline 2\n\n"
	c, err := fit(t, WriteFile(filepath.Join(dir, "it's.txt"), content), dialectResponses, DeclaredTool{Name: "exec_command", Type: "function"})
	if err != nil {
		t.Fatal(err)
	}
	var in struct{ Cmd string }
	if err := json.Unmarshal(c.Input, &in); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(sh, "-c", in.Cmd).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", in.Cmd, err, out)
	}
	got, err := os.ReadFile(filepath.Join(dir, "it's.txt"))
	if err != nil || string(got) != content {
		t.Errorf("the file holds %q, %v; want %q", got, err, content)
	}
}

func TestChunks(t *testing.T) {
	for _, s := range []string{"", "short", strings.Repeat("é", 40), "mixed 日本語のテキスト and ascii " + strings.Repeat("🙂", 9)} {
		pieces := chunks(s, chunkSize)
		if strings.Join(pieces, "") != s {
			t.Errorf("%q: pieces %q do not join back", s, pieces)
		}
		for _, p := range pieces {
			if !utf8.ValidString(p) || len(p) > chunkSize || p == "" {
				t.Errorf("%q: bad piece %q", s, p)
			}
		}
	}
	if got := chunks("🙂", 2); len(got) != 1 {
		t.Errorf("a rune longer than the chunk size was split: %q", got)
	}
}

// TestGolden keeps the exact bytes of each dialect's answers in testdata/golden, for
// review: one turn with text and calls, as JSON and as a stream. go test -update
// rewrites them.
func TestGolden(t *testing.T) {
	turn := Do(WriteFile("hello.txt", "hello\n"), RunCommand("sh test.sh")).
		WithText("I'll write the file, then run the test.").
		WithUsage(Usage{Input: 1200, Output: 48, CacheWrite: 100, CacheRead: 900, Reasoning: 16})
	for _, tc := range []struct {
		name, path, body string
	}{
		{"anthropic", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":1000,"stream":%s,"messages":[],"tools":[{"name":"Bash"},{"name":"Write"}]}`},
		{"responses", "/v1/responses", `{"model":"gpt-5.5","stream":%s,"input":"go","tools":[{"type":"function","name":"exec_command"},{"type":"custom","name":"apply_patch"}]}`},
		{"chat", "/v1/chat/completions", `{"model":"gpt-4.1","stream":%s,"stream_options":{"include_usage":true},"messages":[],"tools":[{"type":"function","function":{"name":"exec_command"}}]}`},
	} {
		for _, stream := range []bool{false, true} {
			name, ext := tc.name, ".json"
			if stream {
				ext = ".sse"
			}
			t.Run(name+ext, func(t *testing.T) {
				s := start(t, Script{turn}, Options{Key: testKey, Now: fixedClock})
				resp := call(t, s, "POST", tc.path, map[string]string{"X-Api-Key": testKey, "Authorization": "Bearer " + testKey},
					strings.Replace(tc.body, "%s", map[bool]string{true: "true", false: "false"}[stream], 1))
				if resp.status != 200 {
					t.Fatalf("%d %s", resp.status, resp.body)
				}
				golden := filepath.Join("testdata", "golden", name+ext)
				if *update {
					if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(golden, resp.body, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (go test -update writes it)", err)
				}
				if !bytes.Equal(resp.body, want) {
					t.Errorf("%s differs from what the server sends now (go test -update rewrites it):\n%s", golden, resp.body)
				}
			})
		}
	}
}
