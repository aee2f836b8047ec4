package scriptedmodel

import (
	"net/http"
)

// responsesUsage is a Responses usage object; input_tokens includes the cached ones.
func responsesUsage(u Usage) obj {
	return obj{
		{"input_tokens", u.Input},
		{"input_tokens_details", obj{{"cached_tokens", u.CacheRead}}},
		{"output_tokens", u.Output},
		{"output_tokens_details", obj{{"reasoning_tokens", u.Reasoning}}},
		{"total_tokens", u.Input + u.Output},
	}
}

// responsesItems are a reply's output items, in progress (empty, as
// response.output_item.added shows them) or done.
func responsesItems(r reply, done bool) []obj {
	status := "in_progress"
	if done {
		status = "completed"
	}
	var items []obj
	if r.text != "" || len(r.calls) == 0 {
		content := []any{}
		if done {
			content = append(content, outputText(r.text))
		}
		items = append(items, obj{{"id", r.textID}, {"type", "message"}, {"status", status}, {"content", content}, {"role", "assistant"}})
	}
	for _, c := range r.calls {
		if c.Free {
			input := ""
			if done {
				input = c.Raw
			}
			items = append(items, obj{{"id", c.ItemID}, {"type", "custom_tool_call"}, {"status", status}, {"call_id", c.ID}, {"input", input}, {"name", c.Name}})
			continue
		}
		args := ""
		if done {
			args = string(c.Input)
		}
		items = append(items, obj{{"id", c.ItemID}, {"type", "function_call"}, {"status", status}, {"arguments", args}, {"call_id", c.ID}, {"name", c.Name}})
	}
	return items
}

// itemID is an output item's id, its first member.
func itemID(item obj) any { return item[0].v }

// with is base and more, in a new slice: each event gets its own fields.
func with(base []field, more ...field) []field {
	return append(append([]field(nil), base...), more...)
}

func outputText(text string) obj {
	return obj{{"type", "output_text"}, {"annotations", []any{}}, {"logprobs", []any{}}, {"text", text}}
}

// responseObject is the Response: in progress (no output, no usage yet) or completed.
func responseObject(r reply, done bool) obj {
	status, output, usage := "in_progress", []obj{}, any(nil)
	if done {
		status, output, usage = "completed", responsesItems(r, true), responsesUsage(r.usage)
	}
	return obj{
		{"id", r.id},
		{"object", "response"},
		{"created_at", r.created},
		{"status", status},
		{"background", false},
		{"error", nil},
		{"incomplete_details", nil},
		{"instructions", nil},
		{"max_output_tokens", nil},
		{"model", r.model},
		{"output", output},
		{"parallel_tool_calls", true},
		{"previous_response_id", nil},
		{"store", false},
		{"tool_choice", "auto"},
		{"tools", []any{}},
		{"usage", usage},
		{"metadata", obj{}},
	}
}

// writeResponses writes a Responses API response: the Response as JSON, or the event
// sequence of the API's streams (see the package documentation).
func writeResponses(w http.ResponseWriter, r reply) {
	w.Header().Set("X-Request-Id", "req_"+r.id)
	if !r.stream {
		writeJSON(w, http.StatusOK, responseObject(r, true), r.truncate)
		return
	}
	s := startSSE(w)
	seq := 0
	event := func(typ string, fields ...field) {
		s.event(typ, append(obj{{"type", typ}, {"sequence_number", seq}}, fields...))
		seq++
	}
	event("response.created", field{"response", responseObject(r, false)})
	event("response.in_progress", field{"response", responseObject(r, false)})
	added, done := responsesItems(r, false), responsesItems(r, true)
	calls := r.calls
	for i := range added {
		event("response.output_item.added", field{"output_index", i}, field{"item", added[i]})
		at := []field{{"item_id", itemID(added[i])}, {"output_index", i}}
		switch {
		case i == 0 && len(added) > len(calls): // the message item comes first
			part := with(at, field{"content_index", 0})
			event("response.content_part.added", with(part, field{"part", outputText("")})...)
			for _, piece := range chunks(r.text, chunkSize) {
				event("response.output_text.delta", with(part, field{"delta", piece}, field{"logprobs", []any{}})...)
			}
			event("response.output_text.done", with(part, field{"text", r.text}, field{"logprobs", []any{}})...)
			event("response.content_part.done", with(part, field{"part", outputText(r.text)})...)
		case calls[0].Free:
			c := calls[0]
			calls = calls[1:]
			for _, piece := range chunks(c.Raw, chunkSize) {
				event("response.custom_tool_call_input.delta", with(at, field{"delta", piece})...)
			}
			event("response.custom_tool_call_input.done", with(at, field{"input", c.Raw})...)
		default:
			c := calls[0]
			calls = calls[1:]
			for _, piece := range chunks(string(c.Input), chunkSize) {
				event("response.function_call_arguments.delta", with(at, field{"delta", piece})...)
			}
			event("response.function_call_arguments.done", with(at, field{"name", c.Name}, field{"arguments", string(c.Input)})...)
		}
		event("response.output_item.done", field{"output_index", i}, field{"item", done[i]})
	}
	if r.truncate {
		s.cut()
	}
	event("response.completed", field{"response", responseObject(r, true)})
}

// chatUsage is a Chat Completions usage object; prompt_tokens includes the cached ones.
func chatUsage(u Usage) obj {
	return obj{
		{"prompt_tokens", u.Input},
		{"completion_tokens", u.Output},
		{"total_tokens", u.Input + u.Output},
		{"prompt_tokens_details", obj{{"cached_tokens", u.CacheRead}, {"audio_tokens", 0}}},
		{"completion_tokens_details", obj{{"reasoning_tokens", u.Reasoning}, {"audio_tokens", 0}, {"accepted_prediction_tokens", 0}, {"rejected_prediction_tokens", 0}}},
	}
}

func (r reply) finishReason() string {
	if len(r.calls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

// writeChat writes a Chat Completions response: the completion as JSON, or its chunks,
// ending with a usage chunk only when the request asked for one
// (stream_options.include_usage), as the API does.
func writeChat(w http.ResponseWriter, r reply) {
	w.Header().Set("X-Request-Id", "req_"+r.id)
	if !r.stream {
		msg := obj{{"role", "assistant"}, {"content", nilIfEmpty(r.text, len(r.calls) > 0)}, {"refusal", nil}, {"annotations", []any{}}}
		if len(r.calls) > 0 {
			var calls []obj
			for _, c := range r.calls {
				calls = append(calls, obj{{"id", c.ID}, {"type", "function"}, {"function", obj{{"name", c.Name}, {"arguments", string(c.Input)}}}})
			}
			msg = append(msg, field{"tool_calls", calls})
		}
		writeJSON(w, http.StatusOK, obj{
			{"id", r.id},
			{"object", "chat.completion"},
			{"created", r.created},
			{"model", r.model},
			{"choices", []obj{{{"index", 0}, {"message", msg}, {"logprobs", nil}, {"finish_reason", r.finishReason()}}}},
			{"usage", chatUsage(r.usage)},
			{"service_tier", "default"},
			{"system_fingerprint", nil},
		}, r.truncate)
		return
	}
	s := startSSE(w)
	chunk := func(delta obj, finish any) {
		c := obj{
			{"id", r.id},
			{"object", "chat.completion.chunk"},
			{"created", r.created},
			{"model", r.model},
			{"service_tier", "default"},
			{"system_fingerprint", nil},
			{"choices", []obj{{{"index", 0}, {"delta", delta}, {"logprobs", nil}, {"finish_reason", finish}}}},
		}
		if r.includeUsage {
			c = append(c, field{"usage", nil})
		}
		s.event("", c)
	}
	chunk(obj{{"role", "assistant"}, {"content", nilIfEmpty("", len(r.calls) > 0 && r.text == "")}, {"refusal", nil}}, nil)
	for _, piece := range chunks(r.text, chunkSize) {
		chunk(obj{{"content", piece}}, nil)
	}
	for i, c := range r.calls {
		head := obj{{"index", i}, {"id", c.ID}, {"type", "function"}, {"function", obj{{"name", c.Name}, {"arguments", ""}}}}
		chunk(obj{{"tool_calls", []obj{head}}}, nil)
		for _, piece := range chunks(string(c.Input), chunkSize) {
			chunk(obj{{"tool_calls", []obj{{{"index", i}, {"function", obj{{"arguments", piece}}}}}}}, nil)
		}
	}
	if r.truncate {
		s.cut()
	}
	chunk(obj{}, r.finishReason())
	if r.includeUsage {
		s.event("", obj{
			{"id", r.id},
			{"object", "chat.completion.chunk"},
			{"created", r.created},
			{"model", r.model},
			{"service_tier", "default"},
			{"system_fingerprint", nil},
			{"choices", []any{}},
			{"usage", chatUsage(r.usage)},
		})
	}
	s.event("", "[DONE]")
}

// nilIfEmpty is a message's content: null when the model only calls tools.
func nilIfEmpty(text string, calls bool) any {
	if text == "" && calls {
		return nil
	}
	return text
}

// writeOpenAIError writes an error in the OpenAI APIs' shape.
func writeOpenAIError(w http.ResponseWriter, status int, typ, msg, param, code, requestID string) {
	w.Header().Set("X-Request-Id", requestID)
	writeJSON(w, status, obj{{"error", obj{
		{"message", msg},
		{"type", typ},
		{"param", nilIfEmpty(param, true)},
		{"code", nilIfEmpty(code, true)},
	}}}, false)
}
