package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bumperdev/bumper/internal/repoconfig"
)

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		cfg     repoconfig.Harness
		wantErr string
	}{
		{"command", repoconfig.Harness{Name: "command", Command: "./agent.sh"}, ""},
		{"command without a program", repoconfig.Harness{Name: "command"}, "set harness.command"},
		{"claude-code", repoconfig.Harness{Name: "claude-code", Version: "2.1.328"}, ""},
		{"claude-code, another release", repoconfig.Harness{Name: "claude-code", Version: "2.2.0-beta.1"}, ""},
		{"codex", repoconfig.Harness{Name: "codex", Version: "0.171.0"}, ""},
		{"claude-code unpinned", repoconfig.Harness{Name: "claude-code"}, "needs its exact release pinned: set harness.version in .github/bumper.yml (this build was checked with `version: 2.1.328`)"},
		{"codex unpinned", repoconfig.Harness{Name: "codex"}, "this build was checked with `version: 0.171.0`"},
		{"codex latest", repoconfig.Harness{Name: "codex", Version: "latest"}, `harness.version "latest" of the codex harness is not an exact release`},
		{"claude-code range", repoconfig.Harness{Name: "claude-code", Version: "^2.1.0"}, "not an exact release"},
		{"claude-code partial", repoconfig.Harness{Name: "claude-code", Version: "2.1"}, "not an exact release"},
		{"claude-code with a leading v", repoconfig.Harness{Name: "claude-code", Version: "v2.1.328"}, "not an exact release"},
		{"codex with a command", repoconfig.Harness{Name: "codex", Version: "0.171.0", Command: "./x"}, "only for `name: command`"},
		{"none", repoconfig.Harness{}, "names no harness"},
		{"unknown", repoconfig.Harness{Name: "aider", Version: "1.0.0"}, "not one of"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := New(tt.cfg)
			if tt.wantErr == "" {
				if err != nil || h.Name() != tt.cfg.Name {
					t.Fatalf("New = %v, %v", h, err)
				}
				if v, ok := h.(interface{ Version() string }); ok && v.Version() != tt.cfg.Version {
					t.Fatalf("Version %q, want %q", v.Version(), tt.cfg.Version)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
			if h != nil {
				t.Fatalf("a harness with an error: %v", h)
			}
		})
	}
}

func TestExitStatus(t *testing.T) {
	tests := []struct {
		st   ExitStatus
		ok   bool
		code int
		says string
	}{
		{ExitStatus{Code: 0}, true, 0, "exited with status 0"},
		{ExitStatus{Code: 3}, false, 3, "exited with status 3"},
		{ExitStatus{Code: -1, Signal: "killed"}, false, 137, "was killed by signal killed"},
		{ExitStatus{Code: -1, Signal: "segmentation fault"}, false, 139, "was killed by signal segmentation fault"},
		{ExitStatus{Code: -1, Signal: "no such signal"}, false, 137, "was killed by signal no such signal"},
		{ExitStatus{Code: -1, TimedOut: true}, false, 124, "timed out"},
		{ExitStatus{Code: 0, TimedOut: true}, false, 124, "timed out"},
		{ExitStatus{Code: -1, Error: "exec: \"sh\": not found"}, false, 127, "did not start: exec: \"sh\": not found"},
		{ExitStatus{Code: 300}, false, 255, "exited with status 300"},
	}
	for _, tt := range tests {
		t.Run(tt.says, func(t *testing.T) {
			if tt.st.OK() != tt.ok || tt.st.ExitCode() != tt.code || tt.st.String() != tt.says {
				t.Fatalf("%+v: OK %v, ExitCode %d, String %q; want %v, %d, %q", tt.st, tt.st.OK(), tt.st.ExitCode(), tt.st.String(), tt.ok, tt.code, tt.says)
			}
		})
	}
}

// fakeExec records what it was asked to run and plays a scripted output.
type fakeExec struct {
	writes []string // to stdout, one Write each
	stderr string
	status ExitStatus
	err    error

	argv, env []string
	// input is what the command was asked to take, feed what it was fed.
	input *Input
	feed  *fakeFeed
	// during, when set, runs after the input is ready and before the output is played:
	// the harness's steers come meanwhile.
	during func(f *fakeFeed)
	// placeFiles says the VM places every file: Placed is told so before Exec returns,
	// else that the command ended first.
	placeFiles bool
}

func (f *fakeExec) exec(_ context.Context, argv, env []string, stdout, stderr io.Writer, in ...Input) (ExitStatus, error) {
	f.argv, f.env = argv, env
	if len(in) > 1 {
		return ExitStatus{}, fmt.Errorf("%d inputs", len(in))
	}
	if len(in) == 1 {
		f.input = &in[0]
		f.feed = newFakeFeed()
		if in[0].Ready != nil {
			in[0].Ready(f.feed)
		}
	}
	if f.during != nil {
		f.during(f.feed)
	}
	for _, w := range f.writes {
		if n, err := stdout.Write([]byte(w)); n != len(w) || err != nil {
			return ExitStatus{}, fmt.Errorf("stdout Write = %d, %w", n, err)
		}
	}
	io.WriteString(stderr, f.stderr)
	if f.feed != nil {
		f.feed.end(f.input, f.placeFiles)
	}
	return f.status, f.err
}

// lookup is the last value of key in env, as exec would see it.
func lookup(env []string, key string) (string, bool) {
	v, ok := "", false
	for _, e := range env {
		if k, val, _ := strings.Cut(e, "="); k == key {
			v, ok = val, true
		}
	}
	return v, ok
}

func newTestCommand(t *testing.T, command string) *Command {
	t.Helper()
	h, err := New(repoconfig.Harness{Name: "command", Command: command})
	if err != nil {
		t.Fatal(err)
	}
	return h.(*Command)
}

func TestCommandRun(t *testing.T) {
	cost := func(v int64) *int64 { return &v }
	tests := []struct {
		name       string
		req        Request
		fake       fakeExec
		wantOK     bool
		wantReason string
		wantCounts Counts
		wantKinds  []EventKind
		wantEnv    map[string]string
	}{
		{
			name: "round 1, events on stdout",
			req:  Request{Round: 1, Env: []string{"ANTHROPIC_BASE_URL=http://10.0.2.2:3128/anthropic", "BUMPER_ROUND=99", "BUMPER_FEEDBACK_FILE=/etc/passwd"}},
			fake: fakeExec{writes: []string{
				"starting\n",
				`::bumper-event::{"kind":"turn","turn":1}` + "\n",
				`::bumper-event::{"kind":"tool_call","turn":1,"tool":"Bash","call_id":"t1","summary":"go test ./..."}` + "\n" + `::bumper-ev`,
				`ent::{"kind":"tool_result","turn":1,"call_id":"t1","status":"error","summary":"FAIL\nexit 1"}` + "\r\n",
				"not an event ::bumper-event::{\"kind\":\"turn\"}\n",
				`::bumper-event::{"kind":"cost","cost_micro_usd":1200}` + "\n",
				`::bumper-event::{"kind":"cost","cost_micro_usd":4800}` + "\n",
				`::bumper-event::{"kind":"message","summary":"done"}`, // no newline at the end
			}, status: ExitStatus{Code: 0}},
			wantOK:     true,
			wantCounts: Counts{Turns: 1, ToolCalls: 1, SelfReportedMicroUSD: cost(4800)},
			wantKinds:  []EventKind{EventTurn, EventToolCall, EventToolResult, EventCost, EventCost, EventMessage},
			wantEnv: map[string]string{
				"ANTHROPIC_BASE_URL":   "http://10.0.2.2:3128/anthropic",
				"BUMPER_TASK":          "/workspace/task/TASK.md",
				"BUMPER_TASK_JSON":     "/workspace/task/task.json",
				"BUMPER_TASK_DIR":      "/workspace/task",
				"BUMPER_REPO":          "/workspace/repo",
				"BUMPER_OUT":           "/out",
				"BUMPER_ROUND":         "1",
				"BUMPER_DECISIONS":     "/out/decisions.json",
				"BUMPER_EVENTS":        "/out/bumper-events.jsonl",
				"BUMPER_FEEDBACK_FILE": "",
				"BUMPER_FEEDBACK":      "",
			},
		},
		{
			name:   "round 2 carries the feedback",
			req:    Request{Round: 2, Feedback: "## Verification round 1\n`TestX` failed\n"},
			fake:   fakeExec{status: ExitStatus{Code: 0}},
			wantOK: true,
			wantEnv: map[string]string{
				"BUMPER_ROUND":         "2",
				"BUMPER_FEEDBACK_FILE": "/workspace/task/feedback-2.md",
				"BUMPER_FEEDBACK":      "## Verification round 1\n`TestX` failed\n",
			},
		},
		{
			name: "events that are not understood are counted",
			req:  Request{Round: 1},
			fake: fakeExec{writes: []string{
				"::bumper-event::{not json\n",
				"::bumper-event::{\"kind\":\"telepathy\"}\n",
				"::bumper-event::{\"kind\":\"cost\",\"cost_micro_usd\":-5}\n",
				"::bumper-event::{\"kind\":\"cost\"}\n",
				"::bumper-event::{\"kind\":\"turn\",\"turn\":-1}\n",
				"::bumper-event::[1,2]\n",
				"::bumper-event::null\n",
				"::bumper-event::\"\xff\xfe\"\n",
				"::bumper-event::{\"kind\":\"unknown\"}\n",
				"::bumper-event::{\"kind\":\"message\",\"summary\":\"" + strings.Repeat("x", MaxEventLineBytes) + "\"}\n",
				"::bumper-event::{\"kind\":\"turn\",\"turn\":2}\n",
			}, status: ExitStatus{Code: 0}},
			wantOK:     true,
			wantCounts: Counts{Turns: 1, UnknownEvents: 10},
			wantKinds:  []EventKind{EventUnknown, EventUnknown, EventUnknown, EventUnknown, EventUnknown, EventUnknown, EventUnknown, EventUnknown, EventUnknown, EventUnknown, EventTurn},
		},
		{
			name:       "exit status",
			req:        Request{Round: 1},
			fake:       fakeExec{status: ExitStatus{Code: 3}, stderr: "boom\n"},
			wantReason: "the program exited with status 3",
		},
		{
			name:       "killed",
			req:        Request{Round: 1},
			fake:       fakeExec{writes: []string{"::bumper-event::{\"kind\":\"turn\",\"turn\":1}\n"}, status: ExitStatus{Code: -1, Signal: "killed"}},
			wantReason: "the program was killed by signal killed",
			wantCounts: Counts{Turns: 1},
			wantKinds:  []EventKind{EventTurn},
		},
		{
			name:       "timed out",
			req:        Request{Round: 1},
			fake:       fakeExec{status: ExitStatus{Code: -1, TimedOut: true}},
			wantReason: "the program timed out",
		},
		{
			name:       "never started",
			req:        Request{Round: 1},
			fake:       fakeExec{status: ExitStatus{Code: -1, Error: "no such file"}},
			wantReason: "the program did not start: no such file",
		},
		{
			name:       "the wrapper's status in round 2",
			req:        Request{Round: 2, Feedback: "x"},
			fake:       fakeExec{status: ExitStatus{Code: WrapperExitCode}},
			wantReason: "cannot write /workspace/task/feedback-2.md",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newTestCommand(t, "./scripts/agent.sh --task \"$BUMPER_TASK\"")
			var stdout, stderr bytes.Buffer
			var got []Event
			tt.req.Stdout, tt.req.Stderr = &stdout, &stderr
			tt.req.OnEvent = func(e Event) { got = append(got, e) }
			res, err := h.Run(context.Background(), tt.fake.exec, tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{"sh", "-c", wrapper, wrapperName, "./scripts/agent.sh --task \"$BUMPER_TASK\""}; !slices.Equal(tt.fake.argv, want) {
				t.Fatalf("argv %q, want %q", tt.fake.argv, want)
			}
			for k, v := range tt.wantEnv {
				if got, ok := lookup(tt.fake.env, k); !ok || got != v {
					t.Errorf("%s=%q (set: %v), want %q", k, got, ok, v)
				}
			}
			if res.OK != tt.wantOK || !strings.Contains(res.Reason, tt.wantReason) || (tt.wantOK && res.Reason != "") {
				t.Fatalf("OK %v, Reason %q; want %v, %q", res.OK, res.Reason, tt.wantOK, tt.wantReason)
			}
			if res.Exit != tt.fake.status || res.Command != h.command {
				t.Fatalf("Exit %+v, Command %q", res.Exit, res.Command)
			}
			if !sameCounts(res.Counts, tt.wantCounts) {
				t.Fatalf("counts %s, want %s", showCounts(res.Counts), showCounts(tt.wantCounts))
			}
			kinds := make([]EventKind, len(got))
			for i, e := range got {
				kinds[i] = e.Kind
				if e.Round != tt.req.Round {
					t.Fatalf("event %+v: round %d, want %d", e, e.Round, tt.req.Round)
				}
			}
			if !slices.Equal(kinds, tt.wantKinds) {
				t.Fatalf("events %+v, want kinds %v", got, tt.wantKinds)
			}
			if want := strings.Join(tt.fake.writes, ""); stdout.String() != want || stderr.String() != tt.fake.stderr {
				t.Fatalf("transcript %q / %q, want every byte: %q / %q", stdout.String(), stderr.String(), want, tt.fake.stderr)
			}
		})
	}
}

func sameCounts(a, b Counts) bool { return showCounts(a) == showCounts(b) }

func showCounts(c Counts) string {
	cost := "nil"
	if c.SelfReportedMicroUSD != nil {
		cost = fmt.Sprint(*c.SelfReportedMicroUSD)
	}
	return fmt.Sprintf("turns %d, tool calls %d, unknown %d, dropped %d, cost %s", c.Turns, c.ToolCalls, c.UnknownEvents, c.DroppedEvents, cost)
}

// TestCommandEventFields: an event's fields arrive bounded and on one line.
func TestCommandEventFields(t *testing.T) {
	h := newTestCommand(t, "true")
	long := strings.Repeat("é", 2000)
	fake := fakeExec{writes: []string{
		`::bumper-event::{"kind":"tool_result","turn":3,"tool":"Bash","call_id":"t\u0007","status":"ok","summary":"line one\nline two\u202e` + long + `"}` + "\n",
	}}
	var got []Event
	if _, err := h.Run(context.Background(), fake.exec, Request{Round: 2, OnEvent: func(e Event) { got = append(got, e) }}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("events %+v", got)
	}
	e := got[0]
	if e.Kind != EventToolResult || e.Turn != 3 || e.Tool != "Bash" || e.CallID != "t " || e.Status != "ok" || e.Round != 2 {
		t.Fatalf("event %+v", e)
	}
	if !strings.HasPrefix(e.Summary, "line one line two é") || strings.ContainsAny(e.Summary, "\n\u202e") ||
		len([]rune(e.Summary)) != maxSummary || !strings.HasSuffix(e.Summary, "…") {
		t.Fatalf("summary %q (%d characters)", e.Summary, len([]rune(e.Summary)))
	}
}

// TestCommandEventsBounded: a program that floods events cannot make OnEvent run
// without end; the rest are still counted.
func TestCommandEventsBounded(t *testing.T) {
	h := newTestCommand(t, "true")
	var out strings.Builder
	for i := range MaxEvents + 25 {
		fmt.Fprintf(&out, "::bumper-event::{\"kind\":\"tool_call\",\"tool\":\"t%d\"}\n", i)
	}
	fake := fakeExec{writes: []string{out.String()}}
	delivered := 0
	res, err := h.Run(context.Background(), fake.exec, Request{Round: 1, OnEvent: func(Event) { delivered++ }})
	if err != nil {
		t.Fatal(err)
	}
	if delivered != MaxEvents || res.ToolCalls != MaxEvents+25 || res.DroppedEvents != 25 {
		t.Fatalf("delivered %d, tool calls %d, dropped %d", delivered, res.ToolCalls, res.DroppedEvents)
	}
}

func TestCommandRunErrors(t *testing.T) {
	h := newTestCommand(t, "true")
	t.Run("broken session", func(t *testing.T) {
		broken := errors.New("agent channel closed")
		fake := fakeExec{err: broken}
		if res, err := h.Run(context.Background(), fake.exec, Request{Round: 1}); !errors.Is(err, broken) || res != nil {
			t.Fatalf("Run = %v, %v", res, err)
		}
	})
	t.Run("round 0", func(t *testing.T) {
		fake := fakeExec{}
		if _, err := h.Run(context.Background(), fake.exec, Request{}); err == nil || fake.argv != nil {
			t.Fatalf("Run = %v, ran %q", err, fake.argv)
		}
	})
	t.Run("nil sinks", func(t *testing.T) {
		fake := fakeExec{writes: []string{"::bumper-event::{\"kind\":\"turn\"}\n"}, stderr: "x"}
		res, err := h.Run(context.Background(), fake.exec, Request{Round: 1})
		if err != nil || res.Turns != 1 {
			t.Fatalf("Run = %+v, %v", res, err)
		}
	})
}

// TestConcurrentSinks: stdout and stderr may be written from two goroutines at once.
func TestConcurrentSinks(t *testing.T) {
	h := newTestCommand(t, "true")
	exec := func(_ context.Context, _, _ []string, stdout, stderr io.Writer, _ ...Input) (ExitStatus, error) {
		var wg sync.WaitGroup
		wg.Go(func() {
			for range 1000 {
				io.WriteString(stdout, "::bumper-event::{\"kind\":\"turn\"}\n")
			}
		})
		wg.Go(func() {
			for range 1000 {
				io.WriteString(stderr, "noise\n")
			}
		})
		wg.Wait()
		return ExitStatus{}, nil
	}
	res, err := h.Run(context.Background(), exec, Request{Round: 1})
	if err != nil || res.Turns != 1000 {
		t.Fatalf("Run = %+v, %v", res, err)
	}
}

func TestReadEvents(t *testing.T) {
	file := strings.Join([]string{
		`{"kind":"turn","turn":1}`,
		``,
		`{"kind":"tool_call","tool":"Edit","summary":"main.go"}`,
		`garbage`,
		`{"kind":"cost","cost_micro_usd":300}`,
		`{"kind":"message","summary":"` + strings.Repeat("y", MaxEventLineBytes) + `"}`,
		`{"kind":"turn","turn":2}`,
	}, "\n")
	var got []Event
	c, err := ReadEvents(strings.NewReader(file), 2, func(e Event) { got = append(got, e) })
	if err != nil {
		t.Fatal(err)
	}
	if c.Turns != 2 || c.ToolCalls != 1 || c.UnknownEvents != 2 || c.SelfReportedMicroUSD == nil || *c.SelfReportedMicroUSD != 300 {
		t.Fatalf("counts %+v", c)
	}
	if len(got) != 6 || got[1].Tool != "Edit" || got[5].Round != 2 {
		t.Fatalf("events %+v", got)
	}
	broken := io.MultiReader(strings.NewReader(`{"kind":"turn"}`+"\n"), iotestErr{})
	if c, err := ReadEvents(broken, 1, nil); err == nil || c.Turns != 1 {
		t.Fatalf("ReadEvents of a failing reader = %+v, %v", c, err)
	}
}

type iotestErr struct{}

func (iotestErr) Read([]byte) (int, error) { return 0, errors.New("disk gone") }

// TestInstallDepsPinsTheDefaults: the CLIs scripts/install-deps.sh fetches for the
// host tests are the releases the adapters were checked against.
func TestInstallDepsPinsTheDefaults(t *testing.T) {
	raw, err := os.ReadFile("../../scripts/install-deps.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CLAUDE_CODE_VERSION=" + DefaultClaudeCodeVersion + "\n", "CODEX_VERSION=" + DefaultCodexVersion + "\n"} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("scripts/install-deps.sh lacks %q", strings.TrimSpace(want))
		}
	}
}
