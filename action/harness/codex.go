package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/repoconfig"
)

// codexProvider is the model provider the codex harness defines on the command line:
// the firewall's OpenAI gateway with the key from OPENAI_API_KEY. 0.171 ignores
// OPENAI_BASE_URL for its built-in provider (it went to api.openai.com), so the
// gateway has to be a provider of its own.
const codexProvider = "bumper"

// Codex is the codex harness: OpenAI's Codex CLI (`codex exec --json`), its JSONL
// events read as events. The model gateway and the sentinel key come from the runner
// (OPENAI_BASE_URL, OPENAI_API_KEY in Request.Env). codex takes its prompt when it
// starts and no input after: the writers' steers waiting when a round starts go in its
// prompt; those that come while it runs are reported not delivered (NoteCodexMidRun),
// for the agent's next round.
type Codex struct{ pinned }

// Name is "codex".
func (c *Codex) Name() string { return repoconfig.HarnessCodex }

// argv is the CLI's command line for a round, with the gateway's base URL from the
// runner's environment.
func (c *Codex) argv(req Request, prompt string) []string {
	p := "model_providers." + codexProvider + "."
	argv := []string{
		CodexBinary, "exec", "--json",
		// The VM is the sandbox: codex builds none of its own (bubblewrap, landlock) and
		// asks no approval, which nobody would be there to give.
		"--dangerously-bypass-approvals-and-sandbox",
		"--skip-git-repo-check",
		"-c", "model_provider=" + tomlString(codexProvider),
		"-c", p + "name=" + tomlString("Bumper model gateway"),
		"-c", p + "base_url=" + tomlString(envValue(req.Env, "OPENAI_BASE_URL")),
		"-c", p + "env_key=" + tomlString("OPENAI_API_KEY"),
		"-c", p + "wire_api=" + tomlString("responses"),
		// Nothing but the gateway: no update check, analytics or feedback upload, no
		// plugin marketplace or ChatGPT apps (0.171 reaches chatgpt.com and github.com
		// for those), no web search (it would run on OpenAI's side, beyond the
		// firewall's allowlist).
		"-c", "check_for_update_on_startup=false",
		"-c", "analytics.enabled=false",
		"-c", "feedback.enabled=false",
		"-c", "web_search=" + tomlString("disabled"),
		"--disable", "plugins",
		"--disable", "apps",
	}
	if c.model != "" {
		argv = append(argv, "-m", c.model)
	}
	return append(argv, "--", prompt)
}

// Run runs the CLI for one round and reads its events.
func (c *Codex) Run(ctx context.Context, exec Exec, req Request) (*Result, error) {
	if req.Round < 1 {
		return nil, fmt.Errorf("round %d: rounds count from 1", req.Round)
	}
	if err := requireEnv(c.Name(), req.Env, "OPENAI_BASE_URL", "OPENAI_API_KEY"); err != nil {
		return nil, err
	}
	reports := &steerReports{fn: req.OnSteer}
	prompt, given, left := withSteers(agentPrompt(req), waitingSteers(req.Steers))
	for _, s := range left {
		reports.notDelivered(s, NoteNoRoom)
	}
	argv := c.argv(req, prompt)
	sink := &eventSink{round: req.Round, onEvent: req.OnEvent}
	p := &codexParser{sink: sink, calls: callNames{}}
	stream := newJSONStream(orDiscard(req.Stdout), sink, "codex exec --json", p.line)
	stderr := newTailWriter(orDiscard(req.Stderr))
	loop := startSteers(req.Steers, func(s wire.Steer) { reports.notDelivered(s, NoteCodexMidRun) })
	// The runner's environment as it is: the key reaches codex through env_key.
	started := time.Now()
	st, err := exec(ctx, argv, append([]string(nil), req.Env...), stream, stderr)
	loop.stop()
	// In the prompt: the agent had them from its start, if it started.
	for _, s := range given {
		if err == nil && st.Error == "" {
			reports.delivered(s, started)
		} else {
			reports.notDelivered(s, NoteNotTaken)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("failed to run the codex harness (round %d): %w", req.Round, err)
	}
	stream.flush()
	stderr.flush()
	res := &Result{
		Command: strings.Join(argv[:len(argv)-1], " ") + " " + promptSummary(req),
		Exit:    st,
		Counts:  sink.counts,
	}
	res.OK, res.Reason = p.judge(st, stderr)
	return res, nil
}

// tomlString quotes s as a TOML basic string: -c takes a TOML value, and a URL is not
// one unquoted.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// codexEvent is one line of `codex exec --json`, the fields the harness reads.
type codexEvent struct {
	Type    string          `json:"type"`
	Message string          `json:"message"` // error
	Error   json.RawMessage `json:"error"`   // turn.failed: {"message": …}
	Usage   *codexUsage     `json:"usage"`   // turn.completed
	Item    *codexItem      `json:"item"`    // item.started, item.updated, item.completed
}

// codexUsage is a turn's token counts: codex reports tokens, not dollars.
type codexUsage struct {
	InputTokens           int64 `json:"input_tokens"`
	CachedInputTokens     int64 `json:"cached_input_tokens"`
	OutputTokens          int64 `json:"output_tokens"`
	ReasoningOutputTokens int64 `json:"reasoning_output_tokens"`
}

type codexItem struct {
	ID     string `json:"id"`
	Type   string `json:"type"`
	Status string `json:"status"`
	// agent_message, reasoning; error's text is in Message
	Text    string `json:"text"`
	Message string `json:"message"`
	// command_execution
	Command          string `json:"command"`
	AggregatedOutput string `json:"aggregated_output"`
	ExitCode         *int   `json:"exit_code"`
	// file_change
	Changes []struct {
		Path string `json:"path"`
		Kind string `json:"kind"`
	} `json:"changes"`
	// mcp_tool_call
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	// web_search
	Query string `json:"query"`
	// todo_list
	Items []struct {
		Completed bool `json:"completed"`
	} `json:"items"`
}

// codexParser turns the events into Events and keeps what judges the round.
type codexParser struct {
	sink  *eventSink
	calls callNames
	turn  int
	// open says a turn started and has not completed or failed.
	open      bool
	completed int
	// failed is turn.failed's message; lastError the last error event's, which also
	// reports retries that may still succeed.
	failed, lastError string
}

func (p *codexParser) line(b []byte) {
	var ev codexEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		p.sink.add(Event{Kind: EventUnknown, Summary: "invalid codex event: " + clean(err.Error(), maxSummary)})
		return
	}
	switch ev.Type {
	case "thread.started":
	case "turn.started":
		p.turn = min(p.turn+1, maxTurn)
		p.open = true
		p.sink.add(Event{Kind: EventTurn, Turn: p.turn})
	case "turn.completed":
		p.open = false
		p.completed++
		s := "turn completed"
		if u := ev.Usage; u != nil {
			s = fmt.Sprintf("turn completed: %d input tokens (%d cached), %d output tokens (%d reasoning)",
				u.InputTokens, u.CachedInputTokens, u.OutputTokens, u.ReasoningOutputTokens)
		}
		p.sink.add(Event{Kind: EventMessage, Turn: p.turn, Summary: s})
	case "turn.failed":
		p.open = false
		var e struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(ev.Error, &e) != nil || strings.TrimSpace(e.Message) == "" {
			e.Message = rawText(ev.Error)
		}
		p.failed = oneLine(e.Message, maxReason)
		if p.failed == "" {
			p.failed = "(no message)"
		}
		p.sink.add(Event{Kind: EventMessage, Turn: p.turn, Status: "error", Summary: oneLine("turn failed: "+e.Message, maxSummary)})
	case "error":
		p.lastError = oneLine(ev.Message, maxReason)
		p.sink.add(Event{Kind: EventMessage, Turn: p.turn, Status: "error", Summary: oneLine(ev.Message, maxSummary)})
	case "item.started", "item.updated", "item.completed":
		if ev.Item == nil {
			p.sink.add(Event{Kind: EventUnknown, Turn: p.turn, Summary: clean("codex "+ev.Type+" without an item", maxSummary)})
			return
		}
		p.item(ev.Type, ev.Item)
	case "":
		p.sink.add(Event{Kind: EventUnknown, Summary: "codex event without a type"})
	default:
		p.sink.add(Event{Kind: EventUnknown, Summary: clean("unknown codex event type "+ev.Type, maxSummary)})
	}
}

// item maps an item's life: a tool item is a call when it starts (or completes
// without having started) and a result when it completes; a message when it completes.
func (p *codexParser) item(phase string, it *codexItem) {
	tool, summary, isTool := codexTool(it)
	switch {
	case phase == "item.updated":
		// Progress of an item already reported (a plan's steps); its end comes.
	case !isTool && phase == "item.started":
	case isTool:
		if _, started := p.calls[it.ID]; !started || phase == "item.started" {
			p.calls.put(it.ID, tool)
			p.sink.add(Event{Kind: EventToolCall, Turn: p.turn, Tool: clean(tool, maxTool), CallID: clean(it.ID, maxCallID), Summary: summary})
		}
		if phase == "item.completed" {
			status, out := codexOutcome(it)
			p.sink.add(Event{Kind: EventToolResult, Turn: p.turn, Tool: clean(tool, maxTool), CallID: clean(it.ID, maxCallID), Status: status, Summary: out})
		}
	default:
		p.message(it)
	}
}

// message reports a completed item that is not a tool's.
func (p *codexParser) message(it *codexItem) {
	switch it.Type {
	case "agent_message":
		if s := oneLine(it.Text, maxSummary); s != "" {
			p.sink.add(Event{Kind: EventMessage, Turn: p.turn, Summary: s})
		}
	case "reasoning":
		if s := oneLine(it.Text, maxSummary-12); s != "" {
			p.sink.add(Event{Kind: EventMessage, Turn: p.turn, Summary: "(reasoning) " + s})
		}
	case "todo_list":
		done := 0
		for _, i := range it.Items {
			if i.Completed {
				done++
			}
		}
		p.sink.add(Event{Kind: EventMessage, Turn: p.turn, Summary: fmt.Sprintf("plan: %d of %d steps done", done, len(it.Items))})
	case "error":
		// A notice codex carries on after (a model missing from its metadata, a fallback
		// of transport): shown, not a failure.
		p.sink.add(Event{Kind: EventMessage, Turn: p.turn, Status: "error", Summary: oneLine(it.Message, maxSummary)})
	default:
		p.sink.add(Event{Kind: EventUnknown, Turn: p.turn, Summary: clean("unknown codex item type "+it.Type, maxSummary)})
	}
}

// codexTool names a tool item and says what it was asked; false for other items.
func codexTool(it *codexItem) (tool, summary string, ok bool) {
	switch it.Type {
	case "command_execution":
		return "command_execution", oneLine(it.Command, maxSummary), true
	case "file_change":
		var parts []string
		for i, c := range it.Changes {
			if i == 20 {
				parts = append(parts, fmt.Sprintf("and %d more", len(it.Changes)-i))
				break
			}
			parts = append(parts, c.Kind+" "+c.Path)
		}
		return "file_change", oneLine(strings.Join(parts, ", "), maxSummary), true
	case "mcp_tool_call":
		return clean("mcp:"+it.Server+"/"+it.Tool, maxTool), inputSummary(it.Arguments), true
	case "web_search":
		return "web_search", oneLine(it.Query, maxSummary), true
	}
	return "", "", false
}

// codexOutcome is a completed tool item's status and a line of what came of it.
func codexOutcome(it *codexItem) (status, summary string) {
	status = "ok"
	if it.Status != "" && it.Status != "completed" {
		status = "error"
	}
	if it.Type == "command_execution" {
		if it.ExitCode == nil || *it.ExitCode != 0 {
			status = "error"
		}
		code := "no exit status"
		if it.ExitCode != nil {
			code = fmt.Sprintf("exit %d", *it.ExitCode)
		}
		return status, oneLine(code+": "+it.AggregatedOutput, maxSummary)
	}
	return status, oneLine(it.Status, maxSummary)
}

// judge decides the round from the exit status and the events: a turn that failed, or
// one that never completed (a stream cut short, a CLI that crashed), is a failure
// whatever the exit status says. An error event alone is not one: codex also reports
// with it the retries it goes on after.
func (p *codexParser) judge(st ExitStatus, stderr *tailWriter) (bool, string) {
	lastErr := ""
	if p.lastError != "" {
		lastErr = "; its last error: " + p.lastError
	}
	switch {
	case st.TimedOut || st.Signal != "" || st.Error != "":
		return false, clean("codex "+st.String()+lastErr, maxReason)
	case p.failed != "":
		return false, clean("codex reported the turn failed: "+p.failed, maxReason)
	case p.completed == 0 || p.open:
		return false, clean(stderr.withStderr("codex ended without completing its turn (its stream ended or was cut before turn.completed); the CLI "+st.String()+lastErr), maxReason)
	case !st.OK():
		return false, clean(stderr.withStderr("codex completed its turn but "+st.String()+lastErr), maxReason)
	}
	return true, ""
}
