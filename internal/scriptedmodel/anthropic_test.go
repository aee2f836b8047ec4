package scriptedmodel

import (
	"encoding/json"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
)

const weatherRequest = `{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":%s,"messages":[{"role":"user","content":"Weather in Paris?"}],"tools":[{"name":"get_weather","input_schema":{"type":"object"}},{"name":"noop","input_schema":{"type":"object"}}]}`

func weatherScript() Script {
	return Script{
		Do(Tool("get_weather", obj{{"location", "Paris <France> & co"}}), Tool("noop", nil)).
			WithText("I'll check the current weather in Paris for you.").
			WithUsage(Usage{Input: 377, Output: 65, CacheWrite: 10, CacheRead: 5}),
	}
}

func TestAnthropicStream(t *testing.T) {
	s := start(t, weatherScript(), Options{Key: testKey})
	resp := anthropic(t, s, strings.Replace(weatherRequest, "%s", "true", 1))
	if resp.status != 200 || !strings.HasPrefix(resp.header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d, Content-Type %q:\n%s", resp.status, resp.header.Get("Content-Type"), resp.body)
	}
	events := parseSSE(t, resp.body)
	// The API's order (the SDK's tool_use_response.txt): message_start, one block after
	// another (a ping after the first opens), message_delta, message_stop.
	var want []string
	want = append(want, "message_start", "content_block_start", "ping")
	for range chunks("I'll check the current weather in Paris for you.", chunkSize) {
		want = append(want, "content_block_delta")
	}
	want = append(want, "content_block_stop", "content_block_start", "content_block_delta")
	for range chunks(`{"location":"Paris <France> & co"}`, chunkSize) {
		want = append(want, "content_block_delta")
	}
	want = append(want, "content_block_stop", "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop", "message_delta", "message_stop")
	if got := names(events); !slices.Equal(got, want) {
		t.Fatalf("events\n%v\nwant\n%v", got, want)
	}
	// Every event's data names its own type; blocks rebuild into the script's turn.
	texts, inputs := map[float64]string{}, map[float64]string{}
	starts := map[float64]map[string]any{}
	for _, e := range events {
		m := e.json(t)
		if m["type"] != e.name {
			t.Errorf("event %s carries type %v", e.name, m["type"])
		}
		i, _ := m["index"].(float64)
		switch e.name {
		case "content_block_start":
			starts[i] = m["content_block"].(map[string]any)
		case "content_block_delta":
			switch get(m, "delta", "type") {
			case "text_delta":
				texts[i] += get(m, "delta", "text").(string)
			case "input_json_delta":
				inputs[i] += get(m, "delta", "partial_json").(string)
			}
		}
	}
	if texts[0] != "I'll check the current weather in Paris for you." || starts[0]["type"] != "text" {
		t.Errorf("block 0: %v, text %q", starts[0], texts[0])
	}
	if starts[1]["type"] != "tool_use" || starts[1]["name"] != "get_weather" || !strings.HasPrefix(starts[1]["id"].(string), "toolu_") {
		t.Errorf("block 1 starts as %v", starts[1])
	}
	if in, ok := starts[1]["input"].(map[string]any); !ok || len(in) != 0 {
		t.Errorf("a tool_use block opens with input %v, want {}", starts[1]["input"])
	}
	// Not HTML-escaped, as the API sends it.
	if inputs[1] != `{"location":"Paris <France> & co"}` || inputs[2] != `{}` {
		t.Errorf("tool inputs %q and %q", inputs[1], inputs[2])
	}
	start, delta := events[0].json(t), events[len(events)-2].json(t)
	if get(start, "message", "usage", "output_tokens") != 1.0 || get(start, "message", "model") != "claude-sonnet-4-5" || get(start, "message", "stop_reason") != nil {
		t.Errorf("message_start = %s", events[0].data)
	}
	if get(delta, "delta", "stop_reason") != "tool_use" {
		t.Errorf("message_delta = %s", events[len(events)-2].data)
	}
	u, complete := meteredUsage(t, "anthropic", resp.body, true)
	if !complete || u != (Usage{Input: 377, Output: 65, CacheWrite: 10, CacheRead: 5}) {
		t.Errorf("the meter would read %+v (complete %v), want the script's", u, complete)
	}
	// The record says which calls the turn made.
	rec := s.Requests()[0]
	if len(rec.Calls) != 2 || rec.Calls[0].Tool != "get_weather" || rec.Calls[0].Input != inputs[1] || rec.Calls[0].ID != starts[1]["id"] {
		t.Errorf("record's calls = %+v", rec.Calls)
	}
}

func TestAnthropicJSON(t *testing.T) {
	s := start(t, append(weatherScript(), Say("Sunny, 21°C.")), Options{Key: testKey, EveryRequest: true})
	resp := anthropic(t, s, strings.Replace(weatherRequest, "%s", "false", 1))
	m := decode(t, resp.body)
	if resp.status != 200 || m["type"] != "message" || m["role"] != "assistant" || m["stop_reason"] != "tool_use" || m["model"] != "claude-sonnet-4-5" {
		t.Fatalf("message = %s", resp.body)
	}
	content := m["content"].([]any)
	if len(content) != 3 || get(content, 0, "type") != "text" || get(content, 1, "type") != "tool_use" || get(content, 1, "input", "location") != "Paris <France> & co" {
		t.Errorf("content = %v", content)
	}
	if u, _ := meteredUsage(t, "anthropic", resp.body, false); u != (Usage{Input: 377, Output: 65, CacheWrite: 10, CacheRead: 5}) {
		t.Errorf("usage = %+v", u)
	}
	final := decode(t, anthropic(t, s, strings.Replace(weatherRequest, "%s", "false", 1)).body)
	if final["stop_reason"] != "end_turn" || get(final, "content", 0, "text") != "Sunny, 21°C." || len(final["content"].([]any)) != 1 {
		t.Errorf("final message = %v", final)
	}
	// No usage scripted: estimated from the sizes, never zero.
	if u := get(final, "usage").(map[string]any); u["input_tokens"].(float64) < 1 || u["output_tokens"].(float64) < 1 {
		t.Errorf("estimated usage = %v", u)
	}
}

// TestAnthropicShapesMatchTheSDKFixtures compares the members of every event the server
// sends with the same event in the Anthropic SDK's recorded streams: the server sends
// no member the API does not, and leaves out only the ones listed.
func TestAnthropicShapesMatchTheSDKFixtures(t *testing.T) {
	// Members of newer API features the server has no use for.
	leftOut := map[string]bool{
		"content_block_start.content_block.caller":   true, // the tool_use's caller (direct, code execution)
		"message_start.message.stop_details":         true,
		"message_start.message.usage.cache_creation": true,
		"message_delta.delta.stop_details":           true,
		"message_delta.delta.container":              true, // code execution
		"message_delta.usage.output_tokens_details":  true,
		"message_delta.usage.server_tool_use":        true, // web search and fetch
	}
	keysOf := func(prefix string, v any, into map[string]bool) {
		var walk func(string, any)
		walk = func(p string, v any) {
			m, ok := v.(map[string]any)
			if !ok {
				return
			}
			for k, sub := range m {
				into[p+"."+k] = true
				if k == "message" || k == "usage" || k == "delta" || k == "content_block" {
					walk(p+"."+k, sub)
				}
			}
		}
		walk(prefix, v)
	}
	fixture := map[string]bool{}
	for _, f := range []string{"testdata/anthropic-sdk/tool_use_response.txt", "testdata/anthropic-sdk/message_delta_fields_response.txt"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range parseSSE(t, b) {
			m := e.json(t)
			// The fixtures' delta members depend on the block kind: key them by it.
			name := e.name
			if d, ok := get(m, "delta", "type").(string); ok {
				name += "." + d
			}
			if c, ok := get(m, "content_block", "type").(string); ok {
				name += "." + c
			}
			keysOf(name, m, fixture)
		}
	}
	s := start(t, weatherScript(), Options{Key: testKey})
	ours := map[string]bool{}
	for _, e := range parseSSE(t, anthropic(t, s, strings.Replace(weatherRequest, "%s", "true", 1)).body) {
		m := e.json(t)
		name := e.name
		if d, ok := get(m, "delta", "type").(string); ok {
			name += "." + d
		}
		if c, ok := get(m, "content_block", "type").(string); ok {
			name += "." + c
		}
		keysOf(name, m, ours)
	}
	var extra, missing []string
	for k := range ours {
		if !fixture[k] {
			extra = append(extra, k)
		}
	}
	for k := range fixture {
		bare := k
		for _, kind := range []string{".tool_use", ".text", ".text_delta", ".input_json_delta"} {
			bare = strings.Replace(bare, kind, "", 1)
		}
		if !ours[k] && !leftOut[bare] {
			missing = append(missing, k)
		}
	}
	sort.Strings(extra)
	sort.Strings(missing)
	if len(extra) > 0 || len(missing) > 0 {
		t.Errorf("members the fixtures do not have: %v\nmembers of the fixtures the server leaves out: %v", extra, missing)
	}
}

func TestAnthropicBearerKey(t *testing.T) {
	// The gateway sends the real key as a bearer token when the client used one.
	s := start(t, Script{Say("hi")}, Options{Key: testKey})
	resp := call(t, s, "POST", "/v1/messages", map[string]string{"Authorization": "Bearer " + testKey}, `{"model":"m","max_tokens":5,"messages":[],"tools":[{"name":"x"}]}`)
	if resp.status != 200 {
		t.Fatalf("status %d: %s", resp.status, resp.body)
	}
	if r := s.Requests()[0]; r.KeyHeader != "authorization" || !r.KeyMatched {
		t.Errorf("record = %+v", r)
	}
}

func TestCountTokens(t *testing.T) {
	s := start(t, Script{Say("hi")}, Options{Key: testKey})
	h := map[string]string{"X-Api-Key": testKey}
	resp := call(t, s, "POST", "/v1/messages/count_tokens", h, `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"Hello, world"}]}`)
	var got struct {
		InputTokens int `json:"input_tokens"`
	}
	if resp.status != 200 || json.Unmarshal(resp.body, &got) != nil || got.InputTokens < 1 {
		t.Fatalf("count_tokens: %d %s", resp.status, resp.body)
	}
	if resp := call(t, s, "POST", "/v1/messages/count_tokens", h, `{"messages":[]}`); resp.status != 400 {
		t.Errorf("count_tokens without a model: %d %s", resp.status, resp.body)
	}
	if resp := call(t, s, "POST", "/v1/messages/count_tokens", nil, `{"model":"m","messages":[]}`); resp.status != 401 {
		t.Errorf("count_tokens without a key: %d %s", resp.status, resp.body)
	}
	if s.Played() != 0 {
		t.Errorf("count_tokens played %d turns", s.Played())
	}
	if r := s.Requests()[0]; r.Outcome != OutcomeCountTokens || r.Turn != -1 {
		t.Errorf("record = %+v", r)
	}
}

// TestAnthropicUserTexts: the server records the texts of the client's messages (the
// user's, and a system message in the list, where Claude Code puts words that came
// while the model worked), a string content and text blocks alike, and not the
// assistant's or a tool result's, so a test can see what a client added (a steer).
func TestAnthropicUserTexts(t *testing.T) {
	s := start(t, Script{Say("ok")}, Options{Key: testKey, EveryRequest: true})
	body := `{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[` +
		`{"role":"user","content":"first"},` +
		`{"role":"assistant","content":[{"type":"text","text":"not the user's"}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":"a result"},{"type":"text","text":"STEER: use the helper"}]},` +
		`{"role":"system","content":[{"type":"text","text":"The user sent a new message while you were working"}]}]}`
	if resp := anthropic(t, s, body); resp.status != 200 {
		t.Fatalf("status %d: %s", resp.status, resp.body)
	}
	reqs := s.Requests()
	if got := reqs[len(reqs)-1].UserTexts; len(got) != 3 || got[0] != "first" || got[1] != "STEER: use the helper" || got[2] != "The user sent a new message while you were working" {
		t.Fatalf("UserTexts = %q", got)
	}
}
