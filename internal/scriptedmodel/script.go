package scriptedmodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/bumperdev/bumper/internal/textcut"
)

// Script is the conversation the server plays, one Turn per model request that continues
// it (see Server for which requests those are).
type Script []Turn

// Turn is one model response: some text, then the tool calls, if any. A turn without
// calls is a final answer (stop_reason end_turn, a message item); a turn with calls asks
// the client to run them and come back with their results (stop_reason tool_use, one
// function_call or custom_tool_call item per call).
type Turn struct {
	// Text is what the model says; with Calls, it comes before them.
	Text string
	// Calls are the tools the model calls, in order.
	Calls []Call
	// Usage is the usage the response reports. Nil reports an estimate: input is the
	// request body's size over four, output the response content's size over four
	// (at least one token each), with no cache tokens.
	Usage *Usage
	// Fail, when set, answers the request with this API error instead of a message
	// (the rest of the turn is ignored): an overloaded or rate-limited turn, for the
	// client's retries.
	Fail *Failure
	// Truncate cuts the response off before it ends: a stream stops after the content
	// and before the final usage (message_delta, response.completed, the usage chunk)
	// and the connection is dropped; a JSON body is dropped halfway. The server does
	// not wait for the results of a cut-off turn's calls (Server); whether the client
	// runs them is its own affair: Claude Code 2.1.328 drops the cut-off message and
	// asks again, Codex 0.171.0 runs each call as soon as its output_item.done arrives
	// and then asks again without its result.
	Truncate bool
}

// Usage is the token usage one turn reports, in the numbers the API puts in its usage
// object, unconverted: Anthropic counts Input beside the cache tokens (input_tokens,
// cache_creation_input_tokens, cache_read_input_tokens); OpenAI counts CacheRead as a
// part of Input (input_tokens with input_tokens_details.cached_tokens, prompt_tokens
// with prompt_tokens_details.cached_tokens) and has no CacheWrite.
type Usage struct {
	Input      int64
	Output     int64
	CacheWrite int64
	CacheRead  int64
	// Reasoning is OpenAI's output_tokens_details.reasoning_tokens, a part of Output.
	Reasoning int64
}

// Failure is an API error a turn answers with, in the provider's shape: the HTTP
// status, the error's type as the provider names it (Anthropic: overloaded_error,
// rate_limit_error, api_error…; OpenAI: server_error, requests…), its message and, for
// OpenAI, its code (rate_limit_exceeded, insufficient_quota…; empty is null). A 429 or
// 5xx failure carries Retry-After: 0, so that the client's retry comes at once.
type Failure struct {
	Status  int
	Type    string
	Message string
	Code    string
}

// Call is one tool call of a turn. Tool makes a call of a named tool; WriteFile and
// RunCommand make the calls a coding agent makes, fitted to the tools each request
// declares, since Claude Code and Codex name and shape them differently.
type Call struct {
	name  string
	input any    // marshalled to the call's JSON input (Anthropic input, OpenAI arguments)
	raw   string // the whole input of a freeform (OpenAI custom) tool
	free  bool
	// fit, when set, picks the tool and input from the tools the request declares.
	fit  func(d dialect, tools []DeclaredTool) (Call, error)
	desc string // for errors and Turn.String
}

// Tool calls the tool name with input, which is encoded as JSON: the tool_use block's
// input (Anthropic), the function call's arguments string (OpenAI). The tool need not be
// one the request declares: a client answers a call of an unknown tool with an error
// result, which a script may want to test.
func Tool(name string, input any) Call {
	return Call{name: name, input: input, desc: fmt.Sprintf("tool %s", name)}
}

// FreeformTool calls an OpenAI custom (freeform) tool, such as Codex's apply_patch,
// whose input is raw text rather than JSON: a custom_tool_call item (Responses API). In
// the other dialects the call is a JSON one with input {"input": input}.
func FreeformTool(name, input string) Call {
	return Call{name: name, raw: input, free: true, desc: fmt.Sprintf("freeform tool %s", name)}
}

// WriteFile writes content to path (relative to the agent's working directory, or
// absolute) with the tool the request offers for it, in this order: Claude Code's
// Write {file_path, content}; Anthropic's text editor tool (create); Codex's apply_patch
// (an Add File patch, freeform or as a function's {"input"}), which ends the file with a
// newline and expects the file not to exist yet; or else a shell command (RunCommand)
// that prints the content into the file.
func WriteFile(path, content string) Call {
	desc := fmt.Sprintf("write %s", path)
	return Call{desc: desc, fit: func(d dialect, tools []DeclaredTool) (Call, error) {
		if d == dialectAnthropic {
			if t, ok := findTool(tools, func(t DeclaredTool) bool { return t.Name == "Write" && isAnthropicCustom(t) }); ok {
				return Tool(t.Name, obj{{"file_path", path}, {"content", content}}), nil
			}
			if t, ok := findTool(tools, func(t DeclaredTool) bool { return strings.HasPrefix(t.Type, "text_editor_") }); ok {
				return Tool(t.Name, obj{{"command", "create"}, {"path", path}, {"file_text", content}}), nil
			}
		} else if t, ok := findTool(tools, func(t DeclaredTool) bool { return t.Name == "apply_patch" }); ok {
			patch := addFilePatch(path, content)
			if t.Type == "custom" && d == dialectResponses {
				return FreeformTool(t.Name, patch), nil
			}
			if t.Type == "function" {
				return Tool(t.Name, obj{{"input", patch}}), nil
			}
		}
		c, err := RunCommand("printf '%s' "+shellQuote(content)+" > "+shellQuote(path)).fit(d, tools)
		if err != nil {
			return Call{}, fmt.Errorf("failed to find a tool to write a file with: %w", err)
		}
		return c, nil
	}}
}

// RunCommand runs cmd in the agent's shell with the tool the request offers for it:
// Claude Code's Bash {command, description}, Anthropic's bash tool {command}, or one of
// Codex's function tools: exec_command {cmd}, shell_command {command}, shell
// {command: ["bash", "-lc", cmd]}.
func RunCommand(cmd string) Call {
	desc := fmt.Sprintf("run %q", cmd)
	return Call{desc: desc, fit: func(d dialect, tools []DeclaredTool) (Call, error) {
		if d == dialectAnthropic {
			if t, ok := findTool(tools, func(t DeclaredTool) bool { return t.Name == "Bash" && isAnthropicCustom(t) }); ok {
				return Tool(t.Name, obj{{"command", cmd}, {"description", describe(cmd)}}), nil
			}
			if t, ok := findTool(tools, func(t DeclaredTool) bool { return strings.HasPrefix(t.Type, "bash_") }); ok {
				return Tool(t.Name, obj{{"command", cmd}}), nil
			}
		} else {
			function := func(name string) func(DeclaredTool) bool {
				return func(t DeclaredTool) bool { return t.Name == name && t.Type == "function" }
			}
			if t, ok := findTool(tools, function("exec_command")); ok {
				return Tool(t.Name, obj{{"cmd", cmd}}), nil
			}
			if t, ok := findTool(tools, function("shell_command")); ok {
				return Tool(t.Name, obj{{"command", cmd}}), nil
			}
			if t, ok := findTool(tools, function("shell")); ok {
				return Tool(t.Name, obj{{"command", []string{"bash", "-lc", cmd}}}), nil
			}
		}
		return Call{}, fmt.Errorf("the request declares no tool that runs a command (declared: %s)", toolList(tools))
	}}
}

// String describes the call for errors and logs.
func (c Call) String() string { return c.desc }

// Say is a final answer: text and no calls.
func Say(text string) Turn { return Turn{Text: text} }

// Do is a turn that calls tools.
func Do(calls ...Call) Turn { return Turn{Calls: calls} }

// Fail is a turn that answers with an API error (Turn.Fail).
func Fail(status int, typ, message string) Turn {
	return Turn{Fail: &Failure{Status: status, Type: typ, Message: message}}
}

// WithUsage returns the turn reporting u.
func (t Turn) WithUsage(u Usage) Turn {
	t.Usage = &u
	return t
}

// WithText returns the turn saying text (before its calls, if any).
func (t Turn) WithText(text string) Turn {
	t.Text = text
	return t
}

// Truncated returns the turn cut off before it ends (Turn.Truncate).
func (t Turn) Truncated() Turn {
	t.Truncate = true
	return t
}

// resolvedCall is a call fitted to one request: the tool, its input and its id.
type resolvedCall struct {
	ID     string // the call id the client answers with (tool_use_id, call_id, tool_call_id)
	ItemID string // Responses: the output item's id
	Name   string
	Input  json.RawMessage // a JSON call's input
	Raw    string          // a freeform call's input
	Free   bool
}

// resolve fits the turn's calls to the request's tools and encodes their inputs.
func (t Turn) resolve(d dialect, tools []DeclaredTool, nextID func(prefix string) string) ([]resolvedCall, error) {
	var out []resolvedCall
	for i, c := range t.Calls {
		if c.fit != nil {
			fitted, err := c.fit(d, tools)
			if err != nil {
				return nil, fmt.Errorf("failed to fit call %d (%s) to the request's tools: %w", i, c.desc, err)
			}
			c = fitted
		}
		rc := resolvedCall{Name: c.name, Free: c.free}
		if c.name == "" {
			return nil, fmt.Errorf("failed to encode call %d: the tool has no name", i)
		}
		switch {
		case c.free && d == dialectResponses:
			rc.Raw = c.raw
		case c.free:
			rc.Free = false
			rc.Input = mustEncode(obj{{"input", c.raw}})
		default:
			in := c.input
			if in == nil {
				in = map[string]any{}
			}
			b, err := encode(in)
			if err != nil {
				return nil, fmt.Errorf("failed to encode the input of call %d (%s): %w", i, c.desc, err)
			}
			if len(b) == 0 || b[0] != '{' {
				return nil, fmt.Errorf("failed to encode the input of call %d (%s): a tool's input must be a JSON object, not %s", i, c.desc, b)
			}
			rc.Input = b
		}
		rc.ID = nextID(callIDPrefix[d])
		switch {
		case d == dialectResponses && rc.Free:
			rc.ItemID = nextID("ctc_")
		case d == dialectResponses:
			rc.ItemID = nextID("fc_")
		}
		out = append(out, rc)
	}
	return out, nil
}

var callIDPrefix = map[dialect]string{dialectAnthropic: "toolu_", dialectResponses: "call_", dialectChat: "call_"}

func findTool(tools []DeclaredTool, match func(DeclaredTool) bool) (DeclaredTool, bool) {
	for _, t := range tools {
		if match(t) {
			return t, true
		}
	}
	return DeclaredTool{}, false
}

// isAnthropicCustom says whether an Anthropic tool is a client tool the caller defined
// (Claude Code's Bash and Write are), rather than one of Anthropic's typed tools.
func isAnthropicCustom(t DeclaredTool) bool { return t.Type == "" || t.Type == "custom" }

func toolList(tools []DeclaredTool) string {
	if len(tools) == 0 {
		return "none"
	}
	var s []string
	for _, t := range tools {
		s = append(s, t.String())
	}
	return strings.Join(s, ", ")
}

// addFilePatch is an apply_patch patch that adds path with content.
func addFilePatch(path, content string) string {
	var b strings.Builder
	b.WriteString("*** Begin Patch\n*** Add File: " + path + "\n")
	for _, line := range strings.Split(strings.TrimSuffix(content, "\n"), "\n") {
		b.WriteString("+" + line + "\n")
	}
	b.WriteString("*** End Patch\n")
	return b.String()
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// describe is the Bash tool's description of a command: its first line, shortened.
func describe(cmd string) string {
	line, _, _ := strings.Cut(cmd, "\n")
	if kept, dropped := textcut.Runes(line, 60); dropped > 0 {
		line = kept + textcut.Ellipsis
	}
	return "Run " + line
}

// failureFor is the failure a turn reports for a script that cannot be played against
// a request (a helper that finds no tool): a 400 in the provider's shape, so that the
// client stops and shows why rather than carrying on with a made-up answer.
func failureFor(err error) *Failure {
	return &Failure{Status: http.StatusBadRequest, Type: "invalid_request_error", Message: "scriptedmodel: " + err.Error()}
}
