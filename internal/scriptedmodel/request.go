package scriptedmodel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// dialect is one of the three APIs the server speaks.
type dialect int

const (
	dialectAnthropic dialect = iota + 1 // Anthropic Messages
	dialectResponses                    // OpenAI Responses
	dialectChat                         // OpenAI Chat Completions
)

func (d dialect) String() string {
	switch d {
	case dialectAnthropic:
		return "anthropic"
	case dialectResponses:
		return "openai-responses"
	case dialectChat:
		return "openai-chat"
	}
	return "unknown"
}

func (d dialect) anthropic() bool { return d == dialectAnthropic }

// DeclaredTool is one tool a request declares: its name and type as the request gives
// them (Anthropic client tools have no type; OpenAI's are "function", "custom"…), and
// the namespace it was declared in, if any (Codex's additional_tools namespaces).
type DeclaredTool struct {
	Name      string
	Type      string
	Namespace string
}

// String is namespace.name (type), leaving out what is empty.
func (t DeclaredTool) String() string {
	s := t.Name
	if t.Namespace != "" {
		s = t.Namespace + "." + s
	}
	if s == "" {
		return t.Type
	}
	if t.Type != "" {
		s += " (" + t.Type + ")"
	}
	return s
}

// ToolResult is a tool result a request carries for a call the server made: the call's
// id and tool, the result's text (text parts joined) and whether the client marked it
// an error (Anthropic's is_error; the OpenAI APIs have no such flag).
type ToolResult struct {
	CallID  string
	Tool    string
	Output  string
	IsError bool
}

// parsed is what the server reads from a generating request.
type parsed struct {
	model        string
	stream       bool
	tools        []DeclaredTool
	results      []ToolResult // every result the request carries; Tool is filled in by the server
	userTexts    []string     // Anthropic: every text the client's messages carry, in order
	includeUsage bool         // Chat Completions: stream_options.include_usage
}

// errInvalid is a request the API would refuse with 400, with its message.
type errInvalid struct {
	msg   string
	param string
}

func (e *errInvalid) Error() string { return e.msg }

func invalid(param, format string, a ...any) error {
	return &errInvalid{msg: fmt.Sprintf(format, a...), param: param}
}

// decodeObject decodes a JSON object body into v, refusing anything else.
func decodeObject(body []byte, v any) error {
	b := bytes.TrimSpace(body)
	if len(b) == 0 || b[0] != '{' {
		return invalid("", "the request body must be a JSON object")
	}
	if err := json.Unmarshal(b, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return invalid(te.Field, "%s: expected %s, got JSON %s", te.Field, te.Type, te.Value)
		}
		return invalid("", "the request body is not valid JSON: %v", err)
	}
	return nil
}

// parseAnthropic reads a Messages request (or a count_tokens one, which has no
// max_tokens).
func parseAnthropic(body []byte, countTokens bool) (parsed, error) {
	var req struct {
		Model     *string           `json:"model"`
		MaxTokens *float64          `json:"max_tokens"`
		Messages  []json.RawMessage `json:"messages"`
		Stream    bool              `json:"stream"`
		Tools     []struct {
			Name string `json:"name"`
			Type string `json:"type"`
		} `json:"tools"`
	}
	var p parsed
	if err := decodeObject(body, &req); err != nil {
		return p, err
	}
	if req.Model == nil || *req.Model == "" {
		return p, invalid("model", "model: Field required")
	}
	if req.Messages == nil {
		return p, invalid("messages", "messages: Field required")
	}
	if !countTokens {
		if req.MaxTokens == nil {
			return p, invalid("max_tokens", "max_tokens: Field required")
		}
		if *req.MaxTokens < 1 {
			return p, invalid("max_tokens", "max_tokens: Input should be greater than or equal to 1")
		}
	}
	p.model, p.stream = *req.Model, req.Stream && !countTokens
	for _, t := range req.Tools {
		p.tools = append(p.tools, DeclaredTool{Name: t.Name, Type: t.Type})
	}
	for i, raw := range req.Messages {
		var m struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return p, invalid("messages", "messages.%d: Input should be an object", i)
		}
		var blocks []struct {
			Type      string          `json:"type"`
			Text      string          `json:"text"`
			ToolUseID string          `json:"tool_use_id"`
			Content   json.RawMessage `json:"content"`
			IsError   bool            `json:"is_error"`
		}
		if json.Unmarshal(m.Content, &blocks) != nil {
			// A string content: no tool results, and the whole of it a text.
			var text string
			if m.Role != "assistant" && json.Unmarshal(m.Content, &text) == nil {
				p.userTexts = append(p.userTexts, text)
			}
			continue
		}
		for _, b := range blocks {
			switch {
			case b.Type == "tool_result" && b.ToolUseID != "":
				p.results = append(p.results, ToolResult{CallID: b.ToolUseID, Output: textOf(b.Content), IsError: b.IsError})
			case b.Type == "text" && m.Role != "assistant":
				p.userTexts = append(p.userTexts, b.Text)
			}
		}
	}
	return p, nil
}

// responsesTool is a tool in a Responses request: a function, custom or typed tool, or
// a namespace of them.
type responsesTool struct {
	Type  string          `json:"type"`
	Name  string          `json:"name"`
	Tools []responsesTool `json:"tools"`
}

func flattenTools(tools []responsesTool, namespace string) []DeclaredTool {
	var out []DeclaredTool
	for _, t := range tools {
		if t.Type == "namespace" {
			out = append(out, flattenTools(t.Tools, t.Name)...)
			continue
		}
		out = append(out, DeclaredTool{Name: t.Name, Type: t.Type, Namespace: namespace})
	}
	return out
}

// parseResponses reads a Responses request. Its tools are the top-level ones and those
// of additional_tools input items, where Codex declares them for some models.
func parseResponses(body []byte) (parsed, error) {
	var req struct {
		Model  *string         `json:"model"`
		Input  json.RawMessage `json:"input"`
		Stream bool            `json:"stream"`
		Tools  []responsesTool `json:"tools"`
	}
	var p parsed
	if err := decodeObject(body, &req); err != nil {
		return p, err
	}
	if req.Model == nil || *req.Model == "" {
		return p, invalid("model", "Missing required parameter: 'model'.")
	}
	p.model, p.stream = *req.Model, req.Stream
	p.tools = flattenTools(req.Tools, "")
	in := bytes.TrimSpace(req.Input)
	if len(in) == 0 || in[0] == '"' || string(in) == "null" {
		return p, nil // a string input (or none): no items
	}
	var items []json.RawMessage
	if json.Unmarshal(in, &items) != nil {
		return p, invalid("input", "Invalid type for 'input': expected a string or an array of input items.")
	}
	for i, raw := range items {
		var it struct {
			Type   string          `json:"type"`
			CallID string          `json:"call_id"`
			Output json.RawMessage `json:"output"`
			Tools  []responsesTool `json:"tools"`
		}
		if json.Unmarshal(raw, &it) != nil {
			return p, invalid("input", "Invalid type for 'input[%d]': expected an object.", i)
		}
		switch {
		case it.Type == "additional_tools":
			p.tools = append(p.tools, flattenTools(it.Tools, "")...)
		case strings.HasSuffix(it.Type, "_call_output") && it.CallID != "":
			p.results = append(p.results, ToolResult{CallID: it.CallID, Output: textOf(it.Output)})
		}
	}
	return p, nil
}

// parseChat reads a Chat Completions request.
func parseChat(body []byte) (parsed, error) {
	var req struct {
		Model    *string `json:"model"`
		Messages []struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCallID string          `json:"tool_call_id"`
		} `json:"messages"`
		Stream        bool `json:"stream"`
		StreamOptions *struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
		Tools []struct {
			Type     string `json:"type"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
			Custom struct {
				Name string `json:"name"`
			} `json:"custom"`
		} `json:"tools"`
	}
	var p parsed
	if err := decodeObject(body, &req); err != nil {
		return p, err
	}
	if req.Model == nil || *req.Model == "" {
		return p, invalid("model", "Missing required parameter: 'model'.")
	}
	if req.Messages == nil {
		return p, invalid("messages", "Missing required parameter: 'messages'.")
	}
	p.model, p.stream = *req.Model, req.Stream
	p.includeUsage = req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	for _, t := range req.Tools {
		name := t.Function.Name
		if t.Type == "custom" {
			name = t.Custom.Name
		}
		p.tools = append(p.tools, DeclaredTool{Name: name, Type: t.Type})
	}
	for _, m := range req.Messages {
		if m.Role == "tool" && m.ToolCallID != "" {
			p.results = append(p.results, ToolResult{CallID: m.ToolCallID, Output: textOf(m.Content)})
		}
	}
	return p, nil
}

// textOf is a result's text: a string, or the text of an array of parts; anything else
// is given as its JSON.
func textOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return string(bytes.TrimSpace(raw))
}
