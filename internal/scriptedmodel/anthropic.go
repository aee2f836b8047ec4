package scriptedmodel

import (
	"encoding/json"
	"net/http"
)

// reply is one model response, before it is written in a dialect.
type reply struct {
	id       string // message, response or completion id
	textID   string // Responses: the message item's id
	model    string
	created  int64 // unix seconds
	text     string
	calls    []resolvedCall
	usage    Usage
	stream   bool
	truncate bool
	// includeUsage is Chat Completions' stream_options.include_usage: only then does a
	// stream end with a usage chunk, as the real API does.
	includeUsage bool
}

// contentBytes is the size of what the model says, for the default output estimate.
func (r reply) contentBytes() int {
	n := len(r.text)
	for _, c := range r.calls {
		n += len(c.Name) + len(c.Input) + len(c.Raw)
	}
	return n
}

func (r reply) stopReason() string {
	if len(r.calls) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

// anthropicUsage is a Messages usage object. output is given apart because
// message_start reports the output so far (one token), not the turn's.
func anthropicUsage(u Usage, output int64, tier bool) obj {
	o := obj{
		{"input_tokens", u.Input},
		{"cache_creation_input_tokens", u.CacheWrite},
		{"cache_read_input_tokens", u.CacheRead},
		{"output_tokens", output},
	}
	if tier {
		o = append(o, field{"service_tier", "standard"})
	}
	return o
}

// writeAnthropic writes a Messages response: the message as JSON, or the event
// sequence of the API's streams (see the package documentation).
func writeAnthropic(w http.ResponseWriter, r reply) {
	w.Header().Set("Request-Id", "req_"+r.id)
	stop := r.stopReason()
	if !r.stream {
		var content []any
		if r.text != "" || len(r.calls) == 0 {
			content = append(content, obj{{"type", "text"}, {"text", r.text}})
		}
		for _, c := range r.calls {
			content = append(content, obj{{"type", "tool_use"}, {"id", c.ID}, {"name", c.Name}, {"input", json.RawMessage(c.Input)}})
		}
		writeJSON(w, http.StatusOK, obj{
			{"id", r.id},
			{"type", "message"},
			{"role", "assistant"},
			{"model", r.model},
			{"content", content},
			{"stop_reason", stop},
			{"stop_sequence", nil},
			{"usage", anthropicUsage(r.usage, r.usage.Output, true)},
		}, r.truncate)
		return
	}
	s := startSSE(w)
	s.event("message_start", obj{{"type", "message_start"}, {"message", obj{
		{"id", r.id},
		{"type", "message"},
		{"role", "assistant"},
		{"model", r.model},
		{"content", []any{}},
		{"stop_reason", nil},
		{"stop_sequence", nil},
		{"usage", anthropicUsage(r.usage, min(r.usage.Output, 1), true)},
	}}})
	index := 0
	block := func(start obj, deltas []obj) {
		s.event("content_block_start", obj{{"type", "content_block_start"}, {"index", index}, {"content_block", start}})
		if index == 0 {
			// The API pings once after the first block opens (the SDK's fixtures).
			s.event("ping", obj{{"type", "ping"}})
		}
		for _, d := range deltas {
			s.event("content_block_delta", obj{{"type", "content_block_delta"}, {"index", index}, {"delta", d}})
		}
		s.event("content_block_stop", obj{{"type", "content_block_stop"}, {"index", index}})
		index++
	}
	if r.text != "" || len(r.calls) == 0 {
		var deltas []obj
		for _, piece := range chunks(r.text, chunkSize) {
			deltas = append(deltas, obj{{"type", "text_delta"}, {"text", piece}})
		}
		block(obj{{"type", "text"}, {"text", ""}}, deltas)
	}
	for _, c := range r.calls {
		// The input streams as partial JSON, starting with an empty piece as the API's
		// does; the block opens with an empty input.
		deltas := []obj{{{"type", "input_json_delta"}, {"partial_json", ""}}}
		for _, piece := range chunks(string(c.Input), chunkSize) {
			deltas = append(deltas, obj{{"type", "input_json_delta"}, {"partial_json", piece}})
		}
		block(obj{{"type", "tool_use"}, {"id", c.ID}, {"name", c.Name}, {"input", obj{}}}, deltas)
	}
	if r.truncate {
		s.cut()
	}
	// message_delta's usage is cumulative and, as the API sends it now, whole.
	s.event("message_delta", obj{
		{"type", "message_delta"},
		{"delta", obj{{"stop_reason", stop}, {"stop_sequence", nil}}},
		{"usage", anthropicUsage(r.usage, r.usage.Output, false)},
	})
	s.event("message_stop", obj{{"type", "message_stop"}})
}

// writeAnthropicError writes an error in the Messages API's shape.
func writeAnthropicError(w http.ResponseWriter, status int, typ, msg, requestID string) {
	w.Header().Set("Request-Id", requestID)
	writeJSON(w, status, obj{
		{"type", "error"},
		{"error", obj{{"type", typ}, {"message", msg}}},
		{"request_id", requestID},
	}, false)
}
