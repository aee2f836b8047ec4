package harness

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/internal/release"
	"github.com/bumperdev/bumper/internal/repoconfig"
)

func TestOneLine(t *testing.T) {
	tests := []struct {
		name, in string
		n        int
		want     string
	}{
		{"plain", "go test ./...", 100, "go test ./..."},
		{"new lines and runs of spaces", "line one\n\n  line two\r\n\tend ", 100, "line one line two end"},
		{"terminal escapes", "\x1b[2J\x1b]0;title\x07ok", 100, "[2J ]0;title ok"},
		{"bidi override and separators", "a\u202eb\u2028c\u2029d\u200be", 100, "a b c d e"},
		{"NUL", "a\x00b", 100, "a b"},
		{"cut with an ellipsis", strings.Repeat("é", 20), 10, strings.Repeat("é", 9) + "…"},
		{"exactly the bound", strings.Repeat("x", 10), 10, strings.Repeat("x", 10)},
		{"only blanks", " \n\t\r ", 10, ""},
		{"a huge input is looked at from its start", "head " + strings.Repeat("y", 10<<20), 8, "head yy…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := oneLine(tt.in, tt.n); got != tt.want {
				t.Fatalf("oneLine = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestMicroUSD(t *testing.T) {
	tests := []struct {
		usd  float64
		want int64
		ok   bool
	}{
		{0, 0, true},
		{0.028627500000000004, 28628, true},
		{0.0048000000000000004, 4800, true},
		{1e6, 1e12, true},
		{1e6 + 1, 0, false},
		{-0.01, 0, false},
		{math.NaN(), 0, false},
		{math.Inf(1), 0, false},
		{1e300, 0, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.usd), func(t *testing.T) {
			if got, ok := microUSD(tt.usd); got != tt.want || ok != tt.ok {
				t.Fatalf("microUSD(%v) = %d, %v; want %d, %v", tt.usd, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestTailWriter(t *testing.T) {
	var out bytes.Buffer
	tw := newTailWriter(&out)
	for _, w := range []string{"first\n", "sec", "ond\n\n  \n", "\x1b[31mlast\x00 words\xff", ""} {
		if _, err := tw.Write([]byte(w)); err != nil {
			t.Fatal(err)
		}
	}
	tw.flush()
	if out.String() != "first\nsecond\n\n  \n\x1b[31mlast\x00 words\xff" {
		t.Fatalf("transcript %q", out.String())
	}
	if got := tw.withStderr("r"); got != "r (stderr: [31mlast words\uFFFD)" {
		t.Fatalf("withStderr = %q", got)
	}
	if got := newTailWriter(&out).withStderr("r"); got != "r" {
		t.Fatalf("withStderr without stderr = %q", got)
	}
}

func TestInputSummary(t *testing.T) {
	tests := []struct {
		name, tool, input, want string
	}{
		{"Bash", "Bash", `{"command":"go test ./...","description":"run the tests"}`, "go test ./..."},
		{"Read", "Read", `{"file_path":"/workspace/repo/main.go","offset":10}`, "/workspace/repo/main.go"},
		{"Edit", "Edit", `{"file_path":"a.go","old_string":"x","new_string":"y"}`, "a.go"},
		{"NotebookEdit", "NotebookEdit", `{"notebook_path":"n.ipynb","new_source":"x"}`, "n.ipynb"},
		{"Grep with a path", "Grep", `{"pattern":"func New","path":"action"}`, "func New in action"},
		{"Glob", "Glob", `{"pattern":"**/*.go"}`, "**/*.go"},
		{"a task", "TaskCreate", `{"subject":"write the tests","description":"all of them"}`, "write the tests"},
		{"an unknown tool", "Mystery", `{"a":1,"b":[true]}`, `{"a":1,"b":[true]}`},
		{"input that is not an object", "Bash", `"just a string"`, `"just a string"`},
		{"Bash without its command", "Bash", `{"timeout":5}`, `{"timeout":5}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := claudeToolSummary(tt.tool, []byte(tt.input)); got != tt.want {
				t.Fatalf("summary %q, want %q", got, tt.want)
			}
		})
	}
}

// TestCLIEventsBounded: a stream that floods events cannot make OnEvent run without
// end; the rest are still counted.
func TestCLIEventsBounded(t *testing.T) {
	var b strings.Builder
	for i := range MaxEvents + 25 {
		fmt.Fprintf(&b, `{"type":"assistant","message":{"id":"m%d","content":[{"type":"tool_use","id":"t%d","name":"Bash","input":{"command":"true"}}]}}`+"\n", i, i)
	}
	b.WriteString(`{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.01}` + "\n")
	fake := &fakeExec{writes: []string{b.String()}}
	delivered := 0
	res, err := newCLI(t, "claude-code", "2.1.328").Run(context.Background(), fake.exec, Request{Round: 1, Env: runnerEnv(), OnEvent: func(Event) { delivered++ }})
	if err != nil {
		t.Fatal(err)
	}
	// Each line is a turn and a tool call; the result's cost and message come last.
	if want := 2*(MaxEvents+25) + 2 - MaxEvents; delivered != MaxEvents || res.DroppedEvents != want || res.ToolCalls != MaxEvents+25 || !res.OK ||
		res.SelfReportedMicroUSD == nil || *res.SelfReportedMicroUSD != 10000 {
		t.Fatalf("delivered %d, dropped %d, tool calls %d, OK %v", delivered, res.DroppedEvents, res.ToolCalls, res.OK)
	}
	// The parser remembers a bounded number of calls to name their results.
	p := &claudeParser{sink: &eventSink{}, calls: callNames{}}
	for i := range maxCalls + 10 {
		p.line([]byte(fmt.Sprintf(`{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"t%d","name":"Bash","input":{}}]}}`, i)))
	}
	if len(p.calls) != maxCalls {
		t.Fatalf("%d calls remembered", len(p.calls))
	}
}

func TestDefaultCLIs(t *testing.T) {
	clis := DefaultCLIs()
	want := map[string][2]string{
		repoconfig.HarnessClaudeCode: {"@anthropic-ai/claude-code", "claude"},
		repoconfig.HarnessCodex:      {"@openai/codex", "codex"},
	}
	if len(clis) != len(want) {
		t.Fatalf("CLIs %+v", clis)
	}
	for _, c := range clis {
		w, ok := want[c.Harness]
		if !ok || c.Package != w[0] || c.Binary != w[1] || !release.IsExact(c.Version) {
			t.Fatalf("CLI %+v", c)
		}
		if _, err := time.Parse(time.DateOnly, c.Checked); err != nil {
			t.Fatalf("CLI %+v: checked %v", c, err)
		}
		if h, err := New(repoconfig.Harness{Name: c.Harness, Version: c.Version}); err != nil || h.Name() != c.Harness {
			t.Fatalf("New(%+v) = %v, %v", c, h, err)
		}
		if got, ok := DefaultCLI(c.Harness); !ok || got != c {
			t.Fatalf("DefaultCLI(%s) = %+v, %v", c.Harness, got, ok)
		}
	}
	clis[0].Version = "9.9.9"
	if c, _ := DefaultCLI(repoconfig.HarnessClaudeCode); c.Version != DefaultClaudeCodeVersion {
		t.Fatal("the defaults changed through a returned copy")
	}
	for _, name := range []string{repoconfig.HarnessCommand, "", "aider"} {
		if c, ok := DefaultCLI(name); ok {
			t.Fatalf("DefaultCLI(%q) = %+v", name, c)
		}
	}
	// The same rule as the file's parser: what one takes, the other takes.
	for _, v := range []string{"2.1.328", "0.171.0", "1.0.0-alpha.2", "1.0.0+build.5", "2.1", "v2.1.3", "latest", "^1.2.3", "1.2.3 ", ""} {
		_, errFile := repoconfig.Parse([]byte("version: 1\nharness: {name: codex, version: \"" + v + "\"}\n"))
		if (errFile == nil) != release.IsExact(v) {
			t.Fatalf("version %q: repoconfig %v, harness %v", v, errFile, release.IsExact(v))
		}
	}
}
