package harness

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

const (
	cxSuccess    = "codex/captured/codex-0.171.0-bumper-argv.success.jsonl"
	cxFailed     = "codex/captured/codex-0.171.0-bumper-argv.turn-failed.jsonl"
	cxUnauth     = "codex/captured/codex-0.171.0-bumper-argv.unauthorized.jsonl"
	cxNoTurnEnd  = "codex/captured/codex-0.171.0-builtin-provider-behind-firewall.no-turn-end.jsonl"
	cx169Success = "codex/generated/codex-exec-json.success-command.jsonl"
	cx169Failed  = "codex/generated/codex-exec-json.turn-failed.jsonl"
	cx169Notice  = "codex/generated/codex-exec-json.with-error-item.jsonl"
	cxDocs       = "codex/openai-codex-docs-exec.sample.jsonl"
)

// TestCodexStreams plays real event streams of the CLI, and those streams cut or
// padded, through the adapter.
func TestCodexStreams(t *testing.T) {
	ok, exit1 := ExitStatus{Code: 0}, ExitStatus{Code: 1}
	commandRun := []EventKind{EventTurn, EventToolCall, EventToolResult, EventMessage, EventMessage}
	tests := []streamCase{
		{
			name:       "0.171: a command through Bumper's argv",
			stream:     func(t *testing.T) []byte { return fixture(t, cxSuccess) },
			status:     ok,
			wantOK:     true,
			wantCounts: Counts{Turns: 1, ToolCalls: 1},
			wantKinds:  commandRun,
			check: func(t *testing.T, p played) {
				call, res := p.events[1], p.events[2]
				if call.Tool != "command_execution" || call.CallID != "item_0" || !strings.HasPrefix(call.Summary, `/usr/bin/bash -lc "printf 'written by the scripted model`) {
					t.Fatalf("tool call %+v", call)
				}
				if res.Tool != "command_execution" || res.CallID != "item_0" || res.Status != "ok" || res.Summary != "exit 0: written by the scripted model" {
					t.Fatalf("tool result %+v", res)
				}
				if u := p.events[4]; u.Summary != "turn completed: 2000 input tokens (400 cached), 100 output tokens (20 reasoning)" {
					t.Fatalf("usage %+v", u)
				}
			},
		},
		{
			name:       "0.169: a command, with reasoning",
			stream:     func(t *testing.T) []byte { return fixture(t, cx169Success) },
			status:     ok,
			wantOK:     true,
			wantCounts: Counts{Turns: 1, ToolCalls: 1},
			wantKinds:  []EventKind{EventTurn, EventMessage, EventToolCall, EventToolResult, EventMessage, EventMessage},
			check: func(t *testing.T, p played) {
				if r := p.events[1]; r.Summary != "(reasoning) **Listing files**" {
					t.Fatalf("reasoning %+v", r)
				}
			},
		},
		{
			name:       "0.169: an error item is a notice, not a failure",
			stream:     func(t *testing.T) []byte { return fixture(t, cx169Notice) },
			status:     ok,
			wantOK:     true,
			wantCounts: Counts{Turns: 1, ToolCalls: 1},
			check: func(t *testing.T, p played) {
				if n := p.events[0]; n.Kind != EventMessage || n.Status != "error" || !strings.HasPrefix(n.Summary, "Model metadata for `gpt-5` not found.") {
					t.Fatalf("notice %+v", n)
				}
			},
		},
		{
			name:       "the documentation's sample",
			stream:     func(t *testing.T) []byte { return fixture(t, cxDocs) },
			status:     ok,
			wantOK:     true,
			wantCounts: Counts{Turns: 1, ToolCalls: 1},
		},
		{
			name:       "0.171: retries, then turn.failed",
			stream:     func(t *testing.T) []byte { return fixture(t, cxFailed) },
			status:     exit1,
			wantReason: "codex reported the turn failed: stream disconnected before completion: scripted upstream failure",
			wantCounts: Counts{Turns: 1},
			check: func(t *testing.T, p played) {
				errs := ofKind(p.events, EventMessage)
				if len(errs) != 7 || errs[0].Summary != "Reconnecting... 1/5 (stream disconnected before completion: scripted upstream failure)" || errs[6].Status != "error" {
					t.Fatalf("messages %+v", errs)
				}
			},
		},
		{
			name:       "0.169: turn.failed with exit 0 is a failure",
			stream:     func(t *testing.T) []byte { return fixture(t, cx169Failed) },
			status:     ok,
			wantReason: "codex reported the turn failed: stream disconnected before completion: mock upstream failure",
			wantCounts: Counts{Turns: 1},
		},
		{
			name:       "0.171: a key the model API refuses",
			stream:     func(t *testing.T) []byte { return fixture(t, cxUnauth) },
			status:     exit1,
			wantReason: "codex reported the turn failed: unexpected status 401 Unauthorized",
			wantCounts: Counts{Turns: 1},
		},
		{
			name:       "0.171 behind the firewall with its own provider: never completes, timed out",
			stream:     func(t *testing.T) []byte { return fixture(t, cxNoTurnEnd) },
			status:     ExitStatus{Code: -1, TimedOut: true},
			wantReason: "codex timed out; its last error: Reconnecting... waiting for network (Connection failed: error sending request)",
			wantCounts: Counts{Turns: 1},
		},
		{
			name:       "never completes its turn, exits 0",
			stream:     func(t *testing.T) []byte { return fixture(t, cxNoTurnEnd) },
			status:     ok,
			wantReason: "codex ended without completing its turn (its stream ended or was cut before turn.completed); the CLI exited with status 0; its last error: Reconnecting...",
			wantCounts: Counts{Turns: 1},
		},
		{
			name:       "cut before turn.completed",
			stream:     func(t *testing.T) []byte { return withoutLastLine(fixture(t, cxSuccess)) },
			status:     ExitStatus{Code: -1, Signal: "killed"},
			wantReason: "codex was killed by signal killed",
			wantCounts: Counts{Turns: 1, ToolCalls: 1},
		},
		{
			name:       "cut in the middle of turn.completed",
			stream:     func(t *testing.T) []byte { return lastLineCut(fixture(t, cxSuccess)) },
			status:     ok,
			wantReason: "codex ended without completing its turn",
			wantCounts: Counts{Turns: 1, ToolCalls: 1, UnknownEvents: 1},
		},
		{
			name:       "no events at all",
			stream:     func(t *testing.T) []byte { return nil },
			status:     ok,
			wantReason: "codex ended without completing its turn",
		},
		{
			name:       "a completed turn that exits 1",
			stream:     func(t *testing.T) []byte { return fixture(t, cxSuccess) },
			status:     exit1,
			wantReason: "codex completed its turn but exited with status 1",
			wantCounts: Counts{Turns: 1, ToolCalls: 1},
		},
		{
			name: "a second turn that never completes",
			stream: func(t *testing.T) []byte {
				return append(fixture(t, cxSuccess), []byte(`{"type":"turn.started"}`+"\n")...)
			},
			status:     ok,
			wantReason: "codex ended without completing its turn",
			wantCounts: Counts{Turns: 2, ToolCalls: 1},
		},
		{
			name: "error events alone: retries that went on to succeed",
			stream: func(t *testing.T) []byte {
				return insertBefore(fixture(t, cxSuccess), `{"type":"error","message":"Reconnecting... 1/5 (stream disconnected before completion)"}`)
			},
			status:     ok,
			wantOK:     true,
			wantCounts: Counts{Turns: 1, ToolCalls: 1},
		},
		{
			name: "other tools and items",
			stream: func(t *testing.T) []byte {
				return insertBefore(fixture(t, cxSuccess),
					`{"type":"item.completed","item":{"id":"item_5","type":"file_change","changes":[{"path":"a.go","kind":"update"},{"path":"b.go","kind":"add"}],"status":"completed"}}`,
					`{"type":"item.started","item":{"id":"item_6","type":"mcp_tool_call","server":"docs","tool":"search","arguments":{"query":"retry"},"status":"in_progress"}}`,
					`{"type":"item.completed","item":{"id":"item_6","type":"mcp_tool_call","server":"docs","tool":"search","arguments":{"query":"retry"},"status":"failed","error":{"message":"no"}}}`,
					`{"type":"item.completed","item":{"id":"item_7","type":"web_search","query":"golang retry"}}`,
					`{"type":"item.started","item":{"id":"item_8","type":"todo_list","items":[{"text":"a","completed":true},{"text":"b","completed":false}]}}`,
					`{"type":"item.updated","item":{"id":"item_8","type":"todo_list","items":[{"text":"a","completed":true},{"text":"b","completed":true}]}}`,
					`{"type":"item.completed","item":{"id":"item_8","type":"todo_list","items":[{"text":"a","completed":true},{"text":"b","completed":true}]}}`,
					`{"type":"item.completed","item":{"id":"item_9","type":"command_execution","command":"false","aggregated_output":"","exit_code":1,"status":"failed"}}`,
				)
			},
			status:     ok,
			wantOK:     true,
			wantCounts: Counts{Turns: 1, ToolCalls: 5},
			check: func(t *testing.T, p played) {
				calls, results := ofKind(p.events, EventToolCall), ofKind(p.events, EventToolResult)
				if calls[1].Tool != "file_change" || calls[1].Summary != "update a.go, add b.go" || results[1].Status != "ok" {
					t.Fatalf("file change %+v %+v", calls[1], results[1])
				}
				if calls[2].Tool != "mcp:docs/search" || calls[2].Summary != "retry" || results[2].Status != "error" {
					t.Fatalf("mcp call %+v %+v", calls[2], results[2])
				}
				if calls[3].Tool != "web_search" || calls[3].Summary != "golang retry" {
					t.Fatalf("web search %+v", calls[3])
				}
				if calls[4].Summary != "false" || results[4].Status != "error" || results[4].Summary != "exit 1:" {
					t.Fatalf("failed command %+v %+v", calls[4], results[4])
				}
				var plan []Event
				for _, e := range ofKind(p.events, EventMessage) {
					if strings.HasPrefix(e.Summary, "plan:") {
						plan = append(plan, e)
					}
				}
				if len(plan) != 1 || plan[0].Summary != "plan: 2 of 2 steps done" {
					t.Fatalf("plan %+v", plan)
				}
			},
		},
		{
			name: "unknown and invalid events are counted, never fatal",
			stream: func(t *testing.T) []byte {
				return insertBefore(fixture(t, cxSuccess),
					`{"type":"thread.telepathy"}`,
					`{"type":"item.completed","item":{"id":"x","type":"hologram"}}`,
					`{"type":"item.completed"}`,
					`{"thread_id":"no type"}`,
					`[1]`, `null`, `"s"`, `{nope`, `{"type":{"nested":1}}`,
					"", " ",
				)
			},
			status:     ok,
			wantOK:     true,
			wantCounts: Counts{Turns: 1, ToolCalls: 1, UnknownEvents: 9},
		},
		{
			name: "a line past the bound, NUL bytes, invalid UTF-8, CRLF",
			stream: func(t *testing.T) []byte {
				huge := `{"type":"item.completed","item":{"id":"big","type":"command_execution","command":"cat big","aggregated_output":"` + strings.Repeat("B", MaxStreamLineBytes) + `","exit_code":0,"status":"completed"}}`
				s := insertBefore(fixture(t, cxSuccess), huge, "\x00", "{\"type\":\"error\",\"message\":\"\xff\"}", `{"type":"error","message":"nul\u0000"}`)
				return bytes.ReplaceAll(s, []byte("\n"), []byte("\r\n"))
			},
			status:     ok,
			wantOK:     true,
			wantCounts: Counts{Turns: 1, ToolCalls: 1, UnknownEvents: 3},
		},
	}
	playStreams(t, "codex", "0.171.0", 5, tests)
}

// TestCodexEveryCut cuts a real stream at every byte: the round is a success only when
// turn.completed arrived whole.
func TestCodexEveryCut(t *testing.T) {
	stream := fixture(t, cxSuccess)
	end := len(bytes.TrimRight(stream, "\n"))
	h := newCLI(t, "codex", "0.171.0")
	for n := range len(stream) + 1 {
		fake := &fakeExec{writes: []string{string(stream[:n])}}
		res, err := h.Run(context.Background(), fake.exec, Request{Round: 1, Env: runnerEnv()})
		if err != nil {
			t.Fatal(err)
		}
		if want := n >= end; res.OK != want {
			t.Fatalf("cut at %d of %d: OK %v, Reason %q", n, len(stream), res.OK, res.Reason)
		}
	}
}

// TestCodexHostileStrings: a command, its output or a message holding new lines,
// terminal escapes and more comes out as one bounded line.
func TestCodexHostileStrings(t *testing.T) {
	h := jsonString(t, hostile)
	tests := []struct {
		name, line string
		kind       EventKind
	}{
		{"a command", `{"type":"item.started","item":{"id":"i","type":"command_execution","command":` + h + `,"status":"in_progress"}}`, EventToolCall},
		{"a command's output", `{"type":"item.completed","item":{"id":"i","type":"command_execution","command":"x","aggregated_output":` + h + `,"exit_code":0,"status":"completed"}}`, EventToolResult},
		{"a file path", `{"type":"item.completed","item":{"id":"i","type":"file_change","changes":[{"path":` + h + `,"kind":"update"}],"status":"completed"}}`, EventToolCall},
		{"the agent's message", `{"type":"item.completed","item":{"id":"i","type":"agent_message","text":` + h + `}}`, EventMessage},
		{"an error", `{"type":"error","message":` + h + `}`, EventMessage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := play(t, newCLI(t, "codex", "0.171.0"), Request{}, []byte(tt.line+"\n"), 1<<20, ExitStatus{})
			got := ofKind(p.events, tt.kind)
			if len(got) != 1 {
				t.Fatalf("events %+v", p.events)
			}
			s := got[0].Summary
			if tt.kind == EventToolResult {
				s = strings.TrimPrefix(s, "exit 0: ")
				if utf8.RuneCountInString(got[0].Summary) != maxSummary {
					t.Fatalf("summary %q", got[0].Summary)
				}
				if !strings.HasPrefix(s, "go test ./... ::bumper-event::") || strings.ContainsAny(s, "\n\r\x1b\x07\x00\u202e\u2028\u2029") {
					t.Fatalf("summary %q", s)
				}
				return
			}
			checkHostileSummary(t, s, tt.name != "a file path") // a change's kind comes first
		})
	}
	t.Run("turn.failed's message", func(t *testing.T) {
		line := `{"type":"turn.failed","error":{"message":` + h + `}}`
		p := play(t, newCLI(t, "codex", "0.171.0"), Request{}, []byte(line+"\n"), 1<<20, ExitStatus{Code: 1})
		if r := p.res.Reason; p.res.OK || strings.ContainsAny(r, "\n\r\x1b\x00\u202e") || utf8.RuneCountInString(r) > maxReason {
			t.Fatalf("reason %q (%d characters)", r, utf8.RuneCountInString(r))
		}
	})
}

// TestCodexCommandLine: the CLI runs exactly so, at the runner's gateway with the
// runner's sentinel key, and a later round's feedback reaches it in the prompt.
func TestCodexCommandLine(t *testing.T) {
	wantFlags := []string{
		"codex", "exec", "--json",
		"--dangerously-bypass-approvals-and-sandbox",
		"--skip-git-repo-check",
		"-c", `model_provider="bumper"`,
		"-c", `model_providers.bumper.name="Bumper model gateway"`,
		"-c", `model_providers.bumper.base_url="http://10.0.2.2:3128/openai/v1"`,
		"-c", `model_providers.bumper.env_key="OPENAI_API_KEY"`,
		"-c", `model_providers.bumper.wire_api="responses"`,
		"-c", "check_for_update_on_startup=false",
		"-c", "analytics.enabled=false",
		"-c", "feedback.enabled=false",
		"-c", `web_search="disabled"`,
		"--disable", "plugins",
		"--disable", "apps",
		"--",
	}
	for _, tt := range promptCases() {
		t.Run(tt.name, func(t *testing.T) {
			p := play(t, newCLI(t, "codex", "0.171.0"), Request{Round: tt.round, Feedback: tt.feedback}, fixture(t, cxSuccess), 1<<20, ExitStatus{})
			argv := p.fake.argv
			if !slices.Equal(argv[:len(argv)-1], wantFlags) {
				t.Fatalf("argv\n%q\nwant\n%q", argv[:len(argv)-1], wantFlags)
			}
			// The runner's environment as it is: the sentinel key goes to codex by env_key.
			if !slices.Equal(p.fake.env, runnerEnv()) {
				t.Fatalf("env\n%q\nwant\n%q", p.fake.env, runnerEnv())
			}
			if strings.Contains(strings.Join(argv, " "), testSentinel) {
				t.Fatal("the key is on the command line")
			}
			tt.check(t, argv[len(argv)-1])
			if want := strings.Join(wantFlags, " ") + " <prompt of round " + fmt.Sprint(tt.round) + ">"; p.res.Command != want {
				t.Fatalf("Command %q, want %q", p.res.Command, want)
			}
		})
	}
	t.Run("the base URL is quoted as TOML, the runner's last value wins", func(t *testing.T) {
		env := append(runnerEnv(), `OPENAI_BASE_URL=http://10.0.2.2:3128/openai/v1?"x\y`+"\n")
		p := play(t, newCLI(t, "codex", "0.171.0"), Request{Env: env}, fixture(t, cxSuccess), 1<<20, ExitStatus{})
		if !slices.Contains(p.fake.argv, `model_providers.bumper.base_url="http://10.0.2.2:3128/openai/v1?\"x\\y\u000A"`) {
			t.Fatalf("argv %q", p.fake.argv)
		}
	})
}

func TestTOMLString(t *testing.T) {
	tests := []struct{ in, want string }{
		{"responses", `"responses"`},
		{"", `""`},
		{`a"b\c`, `"a\"b\\c"`},
		{"tab\tnl\nnul\x00del\x7f", `"tab\u0009nl\u000Anul\u0000del\u007F"`},
		{"é ü 日本", `"é ü 日本"`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := tomlString(tt.in); got != tt.want {
				t.Fatalf("tomlString(%q) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestCodexRunErrors(t *testing.T) {
	h := newCLI(t, "codex", "0.171.0")
	runRefusals(t, h, "OPENAI_BASE_URL", "OPENAI_API_KEY")
	t.Run("stderr explains a stream that ended early", func(t *testing.T) {
		fake := fakeExec{writes: []string{`{"type":"thread.started","thread_id":"t"}` + "\n"}, stderr: "Error loading config.toml: unknown configuration field `x`\n", status: ExitStatus{Code: 1}}
		res, err := h.Run(context.Background(), fake.exec, Request{Round: 1, Env: runnerEnv()})
		if err != nil {
			t.Fatal(err)
		}
		if res.OK || !strings.HasSuffix(res.Reason, "exited with status 1 (stderr: Error loading config.toml: unknown configuration field `x`)") {
			t.Fatalf("reason %q", res.Reason)
		}
	})
}
