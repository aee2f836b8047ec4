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
// way, since the meter could not bound what the call costs.
func readModelRequest(r *http.Request, ep modelEndpoint) (meter.Request, *refusal) {
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
	if err != nil {
		return mr, &refusal{http.StatusBadRequest, "request body refused: " + err.Error()}
	}
	for _, f := range fields {
		switch f.key {
		case "model":
			json.Unmarshal(f.raw, &mr.Model)
		case "max_tokens", "max_output_tokens", "max_completion_tokens":
			mr.MaxOutput = max(mr.MaxOutput, tokenCount(f.raw))
		case "n":
			mr.Choices = tokenCount(f.raw)
		case "previous_response_id", "conversation", "prompt", "mcp_servers":
			// The API adds input from state it holds (an earlier response, a
			// conversation, a stored prompt, a remote server's tools), which the body
			// does not show.
			if !isNull(f.raw) {
				mr.HiddenInput = true
			}
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

// jsonField is one member of a JSON object, in document order.
type jsonField struct {
	key string
	raw json.RawMessage
}

// parseObject splits a JSON object into its members, refusing anything else and
// duplicate keys: parsers disagree on which of two "max_tokens" wins, and the meter
// must read the one the API obeys.
func parseObject(b []byte) ([]jsonField, error) {
	notObject := errors.New("the body must be one JSON object")
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
			return nil, fmt.Errorf("duplicate key %q in the JSON object", key)
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
