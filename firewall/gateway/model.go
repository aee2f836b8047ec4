package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/bumperdev/bumper/firewall/meter"
)

// MaxModelBody bounds a model request's body, which the gateway holds in memory to read
// the model and the output cap before forwarding it: 32 MiB, the Messages API's own
// request size limit. A larger body is refused with 413.
const MaxModelBody = 32 << 20

// modelEndpoint is one endpoint a harness uses; nothing else is forwarded. The rest of
// each API (batches, files, fine-tuning, realtime, assistants, stored responses, admin…)
// would let the agent spend outside the meter, reach data other runs left with the
// provider, or act on the account.
type modelEndpoint struct {
	method string
	path   string // below the base, exact; a final "{id}" is one model id
	// generates is true when the call produces tokens: it is metered and, without a
	// usage report, charged its worst case.
	generates bool
	// askUsage is true for Chat Completions, whose streams report usage only when asked
	// (stream_options.include_usage): the gateway asks.
	askUsage bool
}

var modelEndpoints = map[string][]modelEndpoint{
	"anthropic": {
		{http.MethodPost, "/v1/messages", true, false},
		{http.MethodPost, "/v1/messages/count_tokens", false, false},
		{http.MethodGet, "/v1/models", false, false},
		{http.MethodGet, "/v1/models/{id}", false, false},
	},
	"openai": {
		{http.MethodPost, "/v1/responses", true, false},
		{http.MethodPost, "/v1/chat/completions", true, true},
		{http.MethodGet, "/v1/models", false, false},
		{http.MethodGet, "/v1/models/{id}", false, false},
	},
}

// modelID is one model id as a path segment (fine-tuned OpenAI ids hold ':'); anything
// percent-encoded is refused rather than decoded.
var modelID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,255}$`)

// findModelEndpoint matches the escaped path below the gateway's prefix exactly: no
// case folding, trailing slash or encoding reaches an endpoint by another spelling.
func findModelEndpoint(kind, method, path string) (modelEndpoint, bool) {
	for _, ep := range modelEndpoints[kind] {
		if ep.method != method {
			continue
		}
		if base, ok := strings.CutSuffix(ep.path, "/{id}"); ok {
			if id, ok := strings.CutPrefix(path, base+"/"); ok && modelID.MatchString(id) {
				return ep, true
			}
			continue
		}
		if path == ep.path {
			return ep, true
		}
	}
	return modelEndpoint{}, false
}

// modelEndpointList describes what a gateway forwards, for its refusals.
func modelEndpointList(kind string) string {
	var s []string
	for _, ep := range modelEndpoints[kind] {
		s = append(s, ep.method+" "+ep.path)
	}
	return strings.Join(s, ", ")
}

// refusal is a request the gateway answers itself, with the status and why.
type refusal struct {
	status int
	msg    string
}

// readModelRequest reads a model call's body (bounded), learns from it what the meter
// needs, and puts it back on r for forwarding: unchanged, except that a Chat
// Completions stream is made to report its usage. It refuses a body it cannot read that
// way, since the meter could not bound what the call costs, and a call that asks for
// what the firewall does not allow (checkModelFeatures).
func readModelRequest(r *http.Request, kind string, ep modelEndpoint) (meter.Request, *refusal) {
	var mr meter.Request
	if enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc != "" && enc != "identity" {
		return mr, &refusal{http.StatusUnsupportedMediaType, fmt.Sprintf("request Content-Encoding %q is refused: the gateway reads the model and the output cap from a plain JSON body", enc)}
	}
	tooLarge := &refusal{http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d MiB is refused (the gateway reads it whole to meter the call)", MaxModelBody>>20)}
	if r.ContentLength > MaxModelBody {
		return mr, tooLarge
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxModelBody+1))
	if err != nil {
		return mr, &refusal{http.StatusBadRequest, "failed to read the request body: the client broke it off"}
	}
	if len(body) > MaxModelBody {
		return mr, tooLarge
	}
	fields, err := parseObject(body)
	if dup := (*duplicateKeyError)(nil); errors.As(err, &dup) && toolMembers[dup.key] {
		return mr, &refusal{http.StatusForbidden, fmt.Sprintf("request body has two %q members, refused [server-tool]: parsers disagree on which one the provider reads, so the gateway cannot tell which tools the call declares; it forwards only tools it can tell the harness runs itself", dup.key)}
	}
	if err != nil {
		return mr, &refusal{http.StatusBadRequest, "request body refused: " + err.Error()}
	}
	if ref := checkModelFeatures(kind, fields); ref != nil {
		return mr, ref
	}
	for _, f := range fields {
		switch f.key {
		case "model":
			json.Unmarshal(f.raw, &mr.Model)
		case "max_tokens", "max_output_tokens", "max_completion_tokens":
			mr.MaxOutput = max(mr.MaxOutput, tokenCount(f.raw))
		case "n":
			mr.Choices = tokenCount(f.raw)
		}
	}
	if ep.askUsage && fieldIs(fields, "stream", "true") {
		if body, err = askUsage(fields); err != nil {
			return mr, &refusal{http.StatusBadRequest, "request body refused: " + err.Error()}
		}
	}
	mr.Bytes = int64(len(body))
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	r.ContentLength = int64(len(body))
	r.TransferEncoding = nil
	r.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return mr, nil
}

// allowedTiers are the service tiers billed at most the price table's standard rates:
// the default ("auto", "default"; Anthropic's "standard_only") and OpenAI's "flex",
// cheaper, which the meter charges at the standard rate. "priority" and "scale" (and any
// tier not named here) cost more than the table says, so the meter would undercount
// them: they are refused rather than priced.
var allowedTiers = map[string]bool{"auto": true, "default": true, "standard_only": true, "flex": true}

// toolMembers are the request members that declare, name or bring tools: given twice,
// the call is refused as a server tool, since the gateway cannot tell which one the
// provider reads.
var toolMembers = map[string]bool{
	"tools": true, "tool_choice": true, "input": true, "mcp_servers": true, "container": true,
	"web_search_options": true, "previous_response_id": true, "conversation": true, "prompt": true,
}

// storedState are the Responses request members that make the provider add to the call
// what it holds and the body does not show, each with why it is refused: that state can
// declare tools (additional_tools and tool_search_output items, a prompt's own tools) the
// gateway never sees. Codex sends the whole conversation in input, with store false.
var storedState = map[string]string{
	"previous_response_id": "the provider would continue from a response it stored, whose input and output items (additional_tools, tool_search_output) can declare tools the gateway never sees; send the conversation in input instead",
	"conversation":         "the provider would prepend the items of a conversation it stores, which can declare tools (additional_tools, tool_search_output) the gateway never sees; send the conversation in input instead",
	"prompt":               "a stored prompt brings the instructions and tools set for it at the provider, which the gateway never sees; send instructions and tools in the request instead",
}

// checkModelFeatures refuses a model call that asks for what the firewall does not
// allow: a tool the provider runs (a server tool), declared in tools or in input items,
// named by tool_choice, or brought by state the provider holds (tools.go), a remote MCP
// server, a code-execution container, built-in web search, content the provider would
// fetch from a URL (sources.go), or a service tier dearer than the price table.
func checkModelFeatures(kind string, fields []jsonField) *refusal {
	forbidden := func(format string, a ...any) *refusal {
		return &refusal{http.StatusForbidden, fmt.Sprintf(format, a...)}
	}
	for _, f := range fields {
		switch f.key {
		case "service_tier":
			var tier string
			if !isNull(f.raw) && (json.Unmarshal(f.raw, &tier) != nil || !allowedTiers[tier]) {
				return forbidden("service_tier %s is refused [service-tier]: the priority and scale tiers are billed above the price table's standard rates, so the meter would undercount them; leave it out or use auto or default (flex passes, charged at the standard rate)", f.raw)
			}
		case "tools":
			if ref := checkTools(kind, "tools", f.raw); ref != nil {
				return ref
			}
		case "input":
			// Responses input items declare tools too (tools.go); the Messages API
			// has no such member.
			if kind != "openai" {
				continue
			}
			ref, err := checkInputTools(kind, f.raw)
			if err != nil {
				return &refusal{http.StatusBadRequest, "request body refused: input: " + err.Error()}
			}
			if ref != nil {
				return ref
			}
		case "previous_response_id", "conversation", "prompt":
			if !isNull(f.raw) {
				return forbidden("%s is refused [server-tool]: %s", f.key, storedState[f.key])
			}
		case "tool_choice":
			if ref := checkToolChoice(kind, f.raw); ref != nil {
				return ref
			}
		case "mcp_servers", "container", "web_search_options":
			// A remote MCP server the provider calls; the container server-side code
			// execution and skills run in; Chat Completions' built-in web search.
			if v := bytes.TrimSpace(f.raw); !isNull(v) && string(v) != "[]" {
				return forbidden("%s is refused [server-tool]: %s", f.key, serverToolWhy)
			}
		case "model":
			var model string
			json.Unmarshal(f.raw, &model)
			// The search models (gpt-4o-search-preview, gpt-5-search-api…) search
			// the web on every call, without a tool to refuse.
			if kind == "openai" && strings.Contains(strings.ToLower(model), "search") {
				return forbidden("model %q is refused [server-tool]: it searches the web on every call: %s", model, serverToolWhy)
			}
		}
	}
	return checkURLSources(kind, fields)
}

// longContextBeta returns the anthropic-beta value that turns on the 1M-token context
// window, or "". Beyond 200k input tokens that window is billed at long-context rates
// (twice the input rate, one and a half times the output rate) which the price table
// does not charge, so the call is refused rather than undercounted.
func longContextBeta(h http.Header) string {
	for _, v := range h.Values("Anthropic-Beta") {
		for _, b := range strings.Split(v, ",") {
			if b = strings.TrimSpace(b); strings.HasPrefix(strings.ToLower(b), "context-1m") {
				return b
			}
		}
	}
	return ""
}

// jsonField is one member of a JSON object, in document order.
type jsonField struct {
	key string
	raw json.RawMessage
}

// duplicateKeyError is a JSON object holding one key twice.
type duplicateKeyError struct{ key string }

func (e *duplicateKeyError) Error() string {
	return fmt.Sprintf("duplicate key %q in the JSON object", e.key)
}

// parseObject splits a JSON object into its members, refusing anything else and
// duplicate keys: parsers disagree on which of two "max_tokens" wins, and the meter
// must read the one the API obeys.
func parseObject(b []byte) ([]jsonField, error) {
	notObject := errors.New("not a single JSON object")
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, notObject
	}
	var fields []jsonField
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, notObject
		}
		key, _ := tok.(string)
		if seen[key] {
			return nil, &duplicateKeyError{key}
		}
		seen[key] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, notObject
		}
		fields = append(fields, jsonField{key, raw})
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, notObject
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, notObject
	}
	return fields, nil
}

func encodeObject(fields []jsonField) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(f.raw)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// askUsage sets stream_options.include_usage to true, keeping every other field and
// option as sent.
func askUsage(fields []jsonField) ([]byte, error) {
	on := json.RawMessage("true")
	i := fieldIndex(fields, "stream_options")
	if i < 0 || isNull(fields[i].raw) {
		opts := json.RawMessage(`{"include_usage":true}`)
		if i < 0 {
			fields = append(fields, jsonField{"stream_options", opts})
		} else {
			fields[i].raw = opts
		}
		return encodeObject(fields), nil
	}
	opts, err := parseObject(fields[i].raw)
	if err != nil {
		return nil, fmt.Errorf("stream_options must be a JSON object (%w)", err)
	}
	if j := fieldIndex(opts, "include_usage"); j >= 0 {
		opts[j].raw = on
	} else {
		opts = append(opts, jsonField{"include_usage", on})
	}
	fields[i].raw = encodeObject(opts)
	return encodeObject(fields), nil
}

func fieldIndex(fields []jsonField, key string) int {
	for i, f := range fields {
		if f.key == key {
			return i
		}
	}
	return -1
}

func fieldIs(fields []jsonField, key, value string) bool {
	i := fieldIndex(fields, key)
	return i >= 0 && string(bytes.TrimSpace(fields[i].raw)) == value
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// maxCount caps a count read from a request (2^30, beyond any model's limit and any
// sensible n) so that output × choices cannot overflow.
const maxCount = 1 << 30

// tokenCount reads a count, rounding up; anything else (a string, a negative number)
// counts as not given, so the model's limit applies.
func tokenCount(raw json.RawMessage) int64 {
	var f float64
	if json.Unmarshal(raw, &f) != nil || f <= 0 || math.IsNaN(f) {
		return 0
	}
	if f >= maxCount {
		return maxCount
	}
	return int64(math.Ceil(f))
}
