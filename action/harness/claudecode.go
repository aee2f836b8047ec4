package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/bumperdev/bumper/internal/repoconfig"
)

// ClaudeMaxTurns bounds the model turns of one claude-code round (--max-turns). The
// firewall's cost cap and the run's wall time are the real bounds; this one stops a
// loop of cheap turns that would otherwise run until the wall time.
const ClaudeMaxTurns = 200

// claudeTools are the built-in tools the claude-code harness gives the agent (--tools:
// the others do not exist for it). They read, search, run and edit in the VM. Left
// out: the web tools (WebSearch runs on Anthropic's side, beyond the firewall's
// allowlist, and WebFetch would only meet the firewall's refusal), subagents (Task:
// their spend and events nest out of sight), worktrees (work must stay on the
// checked-out branch the runner commits), and scheduling, messaging and workflow tools
// that outlive a round or talk to someone who is not there.
const claudeTools = "Bash,Read,Write,Edit,NotebookEdit,Glob,Grep,TaskCreate,TaskGet,TaskList,TaskUpdate"

// claudeRefusedTools are denied outright as well (--disallowedTools), so a settings
// file or a later default cannot bring them back.
const claudeRefusedTools = "WebFetch,WebSearch"

// ClaudeTools returns the tools the claude-code harness allows the agent.
func ClaudeTools() []string { return strings.Split(claudeTools, ",") }

// ClaudeCode is the claude-code harness: Anthropic's Claude Code CLI in print mode, the
// round's prompt and the writers' steers written on its stream-json input
// (claudeInput), its stream-json output read as events. The model gateway and the
// sentinel key come from the runner (ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY in
// Request.Env).
type ClaudeCode struct{ pinned }

// Name is "claude-code".
func (c *ClaudeCode) Name() string { return repoconfig.HarnessClaudeCode }

// argv is the CLI's command line for a round. The prompt is not on it: it is the first
// message on the CLI's input.
func (c *ClaudeCode) argv() []string {
	argv := []string{
		ClaudeCodeBinary, "-p",
		"--input-format", "stream-json",
		"--output-format", "stream-json", "--verbose",
		// Each message of the input comes back on the output when the CLI takes it.
		"--replay-user-messages",
		"--max-turns", strconv.Itoa(ClaudeMaxTurns),
		// The VM is the sandbox: nobody is there to answer a permission prompt. The CLI
		// refuses this mode as root; the VM runs it as the unprivileged user.
		"--permission-mode", "bypassPermissions",
		"--tools", claudeTools,
		"--allowedTools", claudeTools,
		"--disallowedTools", claudeRefusedTools,
		// No MCP servers but the (empty) list given here: a repository's .mcp.json does not
		// add tools.
		"--strict-mcp-config",
	}
	if c.model != "" {
		argv = append(argv, "--model", c.model)
	}
	return argv
}

// env is the runner's environment with the harness's variables after it. They keep
// the CLI from reaching anything but the model gateway: no telemetry, error reports,
// auto-update or feedback survey (behind the firewall those would only fill the audit
// log with refusals). In 2.1.328 the first covers the others; each is set too, as the
// CLI documents them one by one.
func (c *ClaudeCode) env(req Request) []string {
	return append(append([]string(nil), req.Env...),
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		"CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY=1",
	)
}

// Run runs the CLI for one round and reads its stream.
func (c *ClaudeCode) Run(ctx context.Context, exec Exec, req Request) (*Result, error) {
	if req.Round < 1 {
		return nil, fmt.Errorf("round %d: rounds count from 1", req.Round)
	}
	if err := requireEnv(c.Name(), req.Env, "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"); err != nil {
		return nil, err
	}
	argv := c.argv()
	sink := &eventSink{round: req.Round, onEvent: req.OnEvent}
	input := newClaudeInput(req, agentPrompt(req))
	p := &claudeParser{sink: sink, calls: callNames{}, input: input}
	stream := newJSONStream(orDiscard(req.Stdout), sink, "claude-code stream-json", p.line)
	stderr := newTailWriter(orDiscard(req.Stderr))
	st, err := exec(ctx, argv, c.env(req), stream, stderr, Input{Stdin: true, Ready: input.ready})
	input.finish()
	if err != nil {
		return nil, fmt.Errorf("failed to run the claude-code harness (round %d): %w", req.Round, err)
	}
	stream.flush()
	stderr.flush()
	res := &Result{
		Command: strings.Join(argv, " ") + " " + fmt.Sprintf("<prompt of round %d on stdin>", req.Round),
		Exit:    st,
		Counts:  sink.counts,
	}
	res.OK, res.Reason = p.judge(st, stderr)
	if res.OK && input.err != nil {
		res.OK, res.Reason = false, clean("the prompt could not be written to claude-code's input: "+input.err.Error(), maxReason)
	}
	return res, nil
}

// claudeEvent is one line of `--output-format stream-json --verbose`, the fields the
// harness reads of every type it knows. Fields whose type the CLI has changed between
// releases are raw.
type claudeEvent struct {
	Type    string         `json:"type"`
	Subtype string         `json:"subtype"`
	Message *claudeMessage `json:"message"`

	// a user message of the input, written back as the CLI takes it
	// (--replay-user-messages)
	UUID     string `json:"uuid"`
	IsReplay bool   `json:"isReplay"`

	// system/init
	Version        string   `json:"claude_code_version"`
	Model          string   `json:"model"`
	PermissionMode string   `json:"permissionMode"`
	Tools          []string `json:"tools"`

	// system/api_retry
	Attempt     int             `json:"attempt"`
	MaxRetries  int             `json:"max_retries"`
	ErrorStatus json.RawMessage `json:"error_status"`
	Error       json.RawMessage `json:"error"`

	// an assistant message the CLI made up to report a failed API call
	IsAPIErrorMessage bool `json:"is_api_error_message"`

	// result
	IsError      *bool             `json:"is_error"`
	Result       json.RawMessage   `json:"result"`
	Errors       []json.RawMessage `json:"errors"`
	TotalCostUSD *float64          `json:"total_cost_usd"`
	NumTurns     int               `json:"num_turns"`
}

type claudeMessage struct {
	ID      string          `json:"id"`
	Model   string          `json:"model"`
	Content json.RawMessage `json:"content"`
}

type claudeBlock struct {
	Type string `json:"type"`
	// text
	Text string `json:"text"`
	// tool_use
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
	// tool_result
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// claudeParser turns the stream into events and keeps what judges the round: the last
// result event.
type claudeParser struct {
	sink  *eventSink
	calls callNames
	// turn counts assistant messages; msgID is the current one's id: the CLI sends
	// each content block of a message as an event of its own, with the same id.
	turn  int
	msgID string
	// result is the last result event, nil until one came.
	result *claudeEvent
	// input is what the harness writes on the CLI's input, told when the CLI takes a
	// message and when a turn ends; nil when only the output is read.
	input *claudeInput
}

func (p *claudeParser) line(b []byte) {
	var ev claudeEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		p.sink.add(Event{Kind: EventUnknown, Summary: "invalid claude-code event: " + clean(err.Error(), maxSummary)})
		return
	}
	switch ev.Type {
	case "system":
		p.system(&ev)
	case "assistant":
		p.assistant(&ev)
	case "user":
		p.user(&ev)
	case "result":
		p.resultEvent(&ev)
		if p.input != nil {
			p.input.turnEnded(ev.IsError == nil || *ev.IsError)
		}
	case "command_lifecycle":
		// A message of the input queued, started, completed: the replay says when the
		// agent got it.
	case "":
		p.sink.add(Event{Kind: EventUnknown, Summary: "claude-code event without a type"})
	default:
		p.sink.add(Event{Kind: EventUnknown, Summary: clean("unknown claude-code event type "+ev.Type, maxSummary)})
	}
}

func (p *claudeParser) system(ev *claudeEvent) {
	switch ev.Subtype {
	case "init":
		p.sink.add(Event{Kind: EventMessage, Summary: oneLine(fmt.Sprintf("claude-code %s started: model %s, permission mode %s, tools %s",
			ev.Version, ev.Model, ev.PermissionMode, strings.Join(ev.Tools, ", ")), maxSummary)})
	case "api_retry":
		p.sink.add(Event{Kind: EventMessage, Status: "error", Summary: oneLine(fmt.Sprintf("model API call failed (%s %s), retry %d of %d",
			rawText(ev.ErrorStatus), rawText(ev.Error), ev.Attempt, ev.MaxRetries), maxSummary)})
	default:
		p.sink.add(Event{Kind: EventMessage, Summary: oneLine("claude-code: "+ev.Subtype, maxSummary)})
	}
}

func (p *claudeParser) assistant(ev *claudeEvent) {
	if ev.Message == nil {
		p.sink.add(Event{Kind: EventUnknown, Summary: "claude-code assistant event without a message"})
		return
	}
	blocks, ok := claudeBlocks(ev.Message.Content)
	if ev.IsAPIErrorMessage || ev.Message.Model == "<synthetic>" {
		// Not a model turn: the CLI's own account of a failed call.
		var text []string
		for _, b := range blocks {
			text = append(text, b.Text)
		}
		p.sink.add(Event{Kind: EventMessage, Turn: p.turn, Status: "error", Summary: oneLine(strings.Join(text, " "), maxSummary)})
		return
	}
	if ev.Message.ID == "" || ev.Message.ID != p.msgID {
		p.turn = min(p.turn+1, maxTurn)
		p.msgID = ev.Message.ID
		p.sink.add(Event{Kind: EventTurn, Turn: p.turn})
	}
	if !ok {
		p.sink.add(Event{Kind: EventUnknown, Turn: p.turn, Summary: "claude-code assistant message whose content is not a list of blocks"})
		return
	}
	for _, b := range blocks {
		switch b.Type {
		case "text":
			if s := oneLine(b.Text, maxSummary); s != "" {
				p.sink.add(Event{Kind: EventMessage, Turn: p.turn, Summary: s})
			}
		case "thinking", "redacted_thinking":
			// The model's reasoning: long, and not what it did.
		case "tool_use", "server_tool_use", "mcp_tool_use":
			p.calls.put(b.ID, b.Name)
			p.sink.add(Event{Kind: EventToolCall, Turn: p.turn, Tool: clean(b.Name, maxTool), CallID: clean(b.ID, maxCallID), Summary: claudeToolSummary(b.Name, b.Input)})
		default:
			p.sink.add(Event{Kind: EventUnknown, Turn: p.turn, Summary: clean("unknown claude-code content block "+b.Type, maxSummary)})
		}
	}
}

func (p *claudeParser) user(ev *claudeEvent) {
	if ev.Message == nil {
		p.sink.add(Event{Kind: EventUnknown, Summary: "claude-code user event without a message"})
		return
	}
	if ev.IsReplay {
		// A message the harness wrote (the prompt, a steer), taken by the CLI.
		if p.input != nil {
			p.input.replayed(ev.UUID)
		}
		return
	}
	// A user message is the CLI answering the model: tool results. Other blocks (the
	// CLI's reminders) are not the agent's doing.
	blocks, _ := claudeBlocks(ev.Message.Content)
	for _, b := range blocks {
		if b.Type != "tool_result" {
			continue
		}
		status := "ok"
		if b.IsError {
			status = "error"
		}
		p.sink.add(Event{Kind: EventToolResult, Turn: p.turn, Tool: clean(p.calls[b.ToolUseID], maxTool), CallID: clean(b.ToolUseID, maxCallID),
			Status: status, Summary: oneLine(claudeResultText(b.Content), maxSummary)})
	}
}

func (p *claudeParser) resultEvent(ev *claudeEvent) {
	p.result = ev
	if ev.TotalCostUSD != nil {
		if v, ok := microUSD(*ev.TotalCostUSD); ok {
			p.sink.add(Event{Kind: EventCost, Turn: p.turn, CostMicroUSD: v})
		} else {
			p.sink.add(Event{Kind: EventUnknown, Summary: fmt.Sprintf("claude-code result with an invalid total_cost_usd %g", *ev.TotalCostUSD)})
		}
	}
	status := ""
	if ev.IsError == nil || *ev.IsError {
		status = "error"
	}
	p.sink.add(Event{Kind: EventMessage, Turn: p.turn, Status: status, Summary: oneLine(claudeOutcome(ev), maxSummary)})
}

// claudeOutcome says what a result event reports: its subtype, then its text or its
// errors.
func claudeOutcome(ev *claudeEvent) string {
	parts := []string{"result " + ev.Subtype}
	if s := strings.TrimSpace(rawText(ev.Result)); s != "" && s != "null" {
		parts = append(parts, s)
	}
	for _, e := range ev.Errors {
		parts = append(parts, rawText(e))
	}
	return strings.Join(parts, ": ")
}

// judge decides the round from the exit status and the result event's is_error, never
// from its subtype: 2.1.328 reports an API error as subtype "success" with is_error
// true.
func (p *claudeParser) judge(st ExitStatus, stderr *tailWriter) (bool, string) {
	r := p.result
	switch {
	case st.TimedOut || st.Signal != "" || st.Error != "":
		return false, clean("claude-code "+st.String(), maxReason)
	case r == nil:
		return false, clean(stderr.withStderr("claude-code sent no result event (its stream ended or was cut before one); the CLI "+st.String()), maxReason)
	case r.IsError == nil:
		return false, clean("claude-code's result event does not say is_error, so the round cannot be judged a success; the CLI "+st.String(), maxReason)
	case *r.IsError:
		return false, oneLine("claude-code reported an error: "+claudeOutcome(r), maxReason)
	case !st.OK():
		return false, clean(stderr.withStderr("claude-code reported success but "+st.String()), maxReason)
	}
	return true, ""
}

// claudeBlocks reads a message's content: a list of blocks, or a plain string (false).
func claudeBlocks(raw json.RawMessage) ([]claudeBlock, bool) {
	var blocks []claudeBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, false
	}
	return blocks, true
}

// claudeResultText is a tool result's text: a string, or the text of its blocks.
func claudeResultText(raw json.RawMessage) string {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s
	}
	var blocks []claudeBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return ""
	}
	var parts []string
	for _, b := range blocks {
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
		default:
			parts = append(parts, "["+b.Type+"]")
		}
	}
	return strings.Join(parts, " ")
}

// claudeToolSummary says in one line what a tool call asked for: Bash's command, the
// file a file tool touches, the pattern of a search and where.
func claudeToolSummary(tool string, input json.RawMessage) string {
	switch tool {
	case "Glob", "Grep":
		var in struct {
			Pattern string `json:"pattern"`
			Path    string `json:"path"`
		}
		if json.Unmarshal(input, &in) == nil && in.Pattern != "" {
			if in.Path != "" {
				return oneLine(in.Pattern+" in "+in.Path, maxSummary)
			}
			return oneLine(in.Pattern, maxSummary)
		}
	case "Bash":
		return inputSummary(input, "command")
	case "Read", "Write", "Edit", "MultiEdit":
		return inputSummary(input, "file_path")
	case "NotebookEdit":
		return inputSummary(input, "notebook_path")
	}
	return inputSummary(input)
}
