package scriptedmodel

import (
	"slices"
	"strings"
	"testing"
)

const codexRequest = `{"model":"gpt-5.5","stream":%s,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]}],"tools":[{"type":"function","name":"exec_command","parameters":{"type":"object"}},{"type":"custom","name":"apply_patch","format":{"type":"grammar"}}]}`

func codexScript() Script {
	return Script{
		Do(WriteFile("hello.txt", "hello\n"), RunCommand("sh test.sh")).
			WithText("Writing the file.").
			WithUsage(Usage{Input: 6066, Output: 71, CacheRead: 2944, Reasoning: 32}),
	}
}

func TestResponsesStream(t *testing.T) {
	s := start(t, codexScript(), Options{Key: testKey})
	resp := openai(t, s, "/v1/responses", strings.Replace(codexRequest, "%s", "true", 1))
	if resp.status != 200 {
		t.Fatalf("status %d: %s", resp.status, resp.body)
	}
	events := parseSSE(t, resp.body)
	var want []string
	want = append(want, "response.created", "response.in_progress",
		"response.output_item.added", "response.content_part.added")
	for range chunks("Writing the file.", chunkSize) {
		want = append(want, "response.output_text.delta")
	}
	want = append(want, "response.output_text.done", "response.content_part.done", "response.output_item.done", "response.output_item.added")
	patch := "*** Begin Patch\n*** Add File: hello.txt\n+hello\n*** End Patch\n"
	for range chunks(patch, chunkSize) {
		want = append(want, "response.custom_tool_call_input.delta")
	}
	want = append(want, "response.custom_tool_call_input.done", "response.output_item.done", "response.output_item.added")
	for range chunks(`{"cmd":"sh test.sh"}`, chunkSize) {
		want = append(want, "response.function_call_arguments.delta")
	}
	want = append(want, "response.function_call_arguments.done", "response.output_item.done", "response.completed")
	if got := names(events); !slices.Equal(got, want) {
		t.Fatalf("events\n%v\nwant\n%v", got, want)
	}
	deltas := map[float64]string{}
	var done []any
	for i, e := range events {
		m := e.json(t)
		if m["type"] != e.name || m["sequence_number"] != float64(i) {
			t.Errorf("event %d %s: type %v, sequence_number %v", i, e.name, m["type"], m["sequence_number"])
		}
		idx, _ := m["output_index"].(float64)
		switch e.name {
		case "response.output_item.added":
			if get(m, "item", "status") != "in_progress" || m["output_index"] != float64(len(done)) {
				t.Errorf("item added: %s", e.data)
			}
		case "response.output_text.delta", "response.custom_tool_call_input.delta", "response.function_call_arguments.delta":
			deltas[idx] += m["delta"].(string)
		case "response.output_text.done":
			if m["text"] != deltas[idx] {
				t.Errorf("text done %q after deltas %q", m["text"], deltas[idx])
			}
		case "response.custom_tool_call_input.done":
			if m["input"] != deltas[idx] || m["input"] != patch {
				t.Errorf("custom input done %q after deltas %q", m["input"], deltas[idx])
			}
		case "response.function_call_arguments.done":
			if m["arguments"] != deltas[idx] || m["arguments"] != `{"cmd":"sh test.sh"}` || m["name"] != "exec_command" {
				t.Errorf("arguments done %s after deltas %q", e.data, deltas[idx])
			}
		case "response.output_item.done":
			done = append(done, m["item"])
		}
	}
	created, completed := events[0].json(t), events[len(events)-1].json(t)
	if get(created, "response", "status") != "in_progress" || get(created, "response", "usage") != nil || get(created, "response", "model") != "gpt-5.5" {
		t.Errorf("response.created = %s", events[0].data)
	}
	if get(completed, "response", "status") != "completed" || get(completed, "response", "id") != get(created, "response", "id") {
		t.Errorf("response.completed = %s", events[len(events)-1].data)
	}
	output := get(completed, "response", "output").([]any)
	if len(output) != 3 {
		t.Fatalf("completed output = %v", output)
	}
	for i, item := range output {
		if mustEncodeString(item) != mustEncodeString(done[i]) {
			t.Errorf("completed output %d = %v, output_item.done said %v", i, item, done[i])
		}
	}
	if get(output, 1, "type") != "custom_tool_call" || get(output, 1, "name") != "apply_patch" || get(output, 2, "type") != "function_call" || get(output, 2, "call_id") == get(output, 1, "call_id") {
		t.Errorf("output = %v", output)
	}
	u, complete := meteredUsage(t, "responses", resp.body, true)
	if !complete || u != (Usage{Input: 6066, Output: 71, CacheRead: 2944, Reasoning: 32}) {
		t.Errorf("the meter would read %+v (complete %v)", u, complete)
	}
	if get(completed, "response", "usage", "total_tokens") != 6066.0+71 {
		t.Errorf("usage = %v", get(completed, "response", "usage"))
	}
}

func mustEncodeString(v any) string { return string(mustEncode(v)) }

func TestResponsesJSON(t *testing.T) {
	s := start(t, append(codexScript(), Say("Done.")), Options{Key: testKey, EveryRequest: true})
	resp := openai(t, s, "/v1/responses", strings.Replace(codexRequest, "%s", "false", 1))
	m := decode(t, resp.body)
	if resp.status != 200 || m["object"] != "response" || m["status"] != "completed" {
		t.Fatalf("response = %s", resp.body)
	}
	if get(m, "output", 0, "content", 0, "text") != "Writing the file." || get(m, "output", 1, "input") == nil || get(m, "output", 2, "arguments") != `{"cmd":"sh test.sh"}` {
		t.Errorf("output = %v", m["output"])
	}
	if u, _ := meteredUsage(t, "responses", resp.body, false); u != (Usage{Input: 6066, Output: 71, CacheRead: 2944, Reasoning: 32}) {
		t.Errorf("usage = %+v", u)
	}
	final := decode(t, openai(t, s, "/v1/responses", strings.Replace(codexRequest, "%s", "false", 1)).body)
	if out := final["output"].([]any); len(out) != 1 || get(out, 0, "type") != "message" || get(out, 0, "content", 0, "text") != "Done." {
		t.Errorf("final output = %v", final["output"])
	}
}

const chatRequest = `{"model":"gpt-4.1","stream":%s,"messages":[{"role":"user","content":"go"}],"tools":[{"type":"function","function":{"name":"exec_command","parameters":{"type":"object"}}}]}`

func TestChatStreamReportsUsageOnlyWhenAsked(t *testing.T) {
	script := Script{
		Do(RunCommand("make test"), Tool("exec_command", obj{{"cmd", "ls"}})).WithUsage(Usage{Input: 100, Output: 20, CacheRead: 64}),
		Do(RunCommand("make test")).WithUsage(Usage{Input: 100, Output: 20, CacheRead: 64}),
	}
	s := start(t, script, Options{Key: testKey, EveryRequest: true})

	plain := openai(t, s, "/v1/chat/completions", strings.Replace(chatRequest, "%s", "true", 1))
	events := parseSSE(t, plain.body)
	if events[len(events)-1].data != "[DONE]" {
		t.Errorf("the stream ends with %q, want [DONE]", events[len(events)-1].data)
	}
	if _, complete := meteredUsage(t, "chat", plain.body, true); complete {
		t.Error("a stream that did not ask for usage reports it")
	}
	args := map[float64]string{}
	var ids []string
	for _, e := range events[:len(events)-1] {
		m := e.json(t)
		if e.name != "" || m["object"] != "chat.completion.chunk" {
			t.Errorf("chunk %s: %s", e.name, e.data)
		}
		if _, has := m["usage"]; has {
			t.Errorf("a chunk has usage, unasked: %s", e.data)
		}
		for _, tc := range toSlice(get(m, "choices", 0, "delta", "tool_calls")) {
			i := get(tc, "index").(float64)
			if id, ok := get(tc, "id").(string); ok {
				ids = append(ids, id)
			}
			args[i] += get(tc, "function", "arguments").(string)
		}
	}
	if args[0] != `{"cmd":"make test"}` || args[1] != `{"cmd":"ls"}` || len(ids) != 2 || ids[0] == ids[1] {
		t.Errorf("tool calls: ids %v, arguments %v", ids, args)
	}
	if last := events[len(events)-2].json(t); get(last, "choices", 0, "finish_reason") != "tool_calls" {
		t.Errorf("last chunk = %v", last)
	}

	asked := openai(t, s, "/v1/chat/completions", strings.Replace(chatRequest, "%s", `true,"stream_options":{"include_usage":true}`, 1))
	events = parseSSE(t, asked.body)
	for _, e := range events[:len(events)-2] {
		if m := e.json(t); m["usage"] != nil || !hasKey(m, "usage") {
			t.Errorf("a chunk before the last has usage %v, want null", m["usage"])
		}
	}
	last := events[len(events)-2].json(t)
	if len(last["choices"].([]any)) != 0 {
		t.Errorf("the usage chunk has choices: %v", last)
	}
	if u, complete := meteredUsage(t, "chat", asked.body, true); !complete || u != (Usage{Input: 100, Output: 20, CacheRead: 64}) {
		t.Errorf("the meter would read %+v (complete %v)", u, complete)
	}
}

func toSlice(v any) []any { s, _ := v.([]any); return s }

func hasKey(m map[string]any, k string) bool { _, ok := m[k]; return ok }

func TestChatJSON(t *testing.T) {
	s := start(t, Script{Do(RunCommand("ls")).WithUsage(Usage{Input: 9, Output: 3}), Say("fine")}, Options{Key: testKey, EveryRequest: true})
	m := decode(t, openai(t, s, "/v1/chat/completions", strings.Replace(chatRequest, "%s", "false", 1)).body)
	if m["object"] != "chat.completion" || get(m, "choices", 0, "finish_reason") != "tool_calls" || get(m, "choices", 0, "message", "content") != nil ||
		get(m, "choices", 0, "message", "tool_calls", 0, "function", "arguments") != `{"cmd":"ls"}` {
		t.Errorf("completion = %v", m)
	}
	if get(m, "usage", "prompt_tokens") != 9.0 || get(m, "usage", "completion_tokens") != 3.0 || get(m, "usage", "total_tokens") != 12.0 {
		t.Errorf("usage = %v", m["usage"])
	}
	m = decode(t, openai(t, s, "/v1/chat/completions", strings.Replace(chatRequest, "%s", "false", 1)).body)
	if get(m, "choices", 0, "finish_reason") != "stop" || get(m, "choices", 0, "message", "content") != "fine" {
		t.Errorf("final completion = %v", m)
	}
}

func TestModels(t *testing.T) {
	s := start(t, nil, Options{Key: testKey, Models: []string{"claude-sonnet-4-5", "claude-haiku-4-5"}})
	a := call(t, s, "GET", "/v1/models", map[string]string{"X-Api-Key": testKey, "Anthropic-Version": "2023-06-01"}, "")
	if m := decode(t, a.body); a.status != 200 || get(m, "data", 1, "id") != "claude-haiku-4-5" || get(m, "data", 0, "type") != "model" || m["has_more"] != false {
		t.Errorf("Anthropic models: %d %s", a.status, a.body)
	}
	o := call(t, s, "GET", "/v1/models", map[string]string{"Authorization": "Bearer " + testKey}, "")
	if m := decode(t, o.body); o.status != 200 || m["object"] != "list" || get(m, "data", 0, "object") != "model" {
		t.Errorf("OpenAI models: %d %s", o.status, o.body)
	}
	one := call(t, s, "GET", "/v1/models/claude-haiku-4-5", map[string]string{"Authorization": "Bearer " + testKey}, "")
	if m := decode(t, one.body); one.status != 200 || m["id"] != "claude-haiku-4-5" {
		t.Errorf("one model: %d %s", one.status, one.body)
	}
	missing := call(t, s, "GET", "/v1/models/gpt-9", map[string]string{"Authorization": "Bearer " + testKey}, "")
	if m := decode(t, missing.body); missing.status != 404 || get(m, "error", "code") != "model_not_found" {
		t.Errorf("missing model: %d %s", missing.status, missing.body)
	}
	if unauth := call(t, s, "GET", "/v1/models", nil, ""); unauth.status != 401 {
		t.Errorf("models without a key: %d", unauth.status)
	}
}
