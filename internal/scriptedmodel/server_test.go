package scriptedmodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
)

func TestStartRefusesAnEmptyKey(t *testing.T) {
	if s, err := Start(Script{Say("hi")}, Options{}); err == nil {
		s.Close()
		t.Fatal("Start without a key succeeded")
	}
	// Served without Start (as an http.Handler), it accepts no key either.
	s := New(Script{Say("hi")}, Options{})
	rec := &recorder{header: http.Header{}}
	req, _ := http.NewRequest("POST", "/v1/messages", strings.NewReader(`{}`))
	req.Header.Set("X-Api-Key", "")
	s.ServeHTTP(rec, req)
	if rec.status != 401 {
		t.Errorf("status %d", rec.status)
	}
}

type recorder struct {
	header http.Header
	status int
	body   strings.Builder
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) WriteHeader(status int)      { r.status = status }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }

// TestKeyCheck: only the real key, where each API reads it, plays the script; anything
// else is 401 in the provider's own shape, so that the CLI shows an API key error.
func TestKeyCheck(t *testing.T) {
	const sentinel = "sk-bumper-sentinel-0000000000"
	anthropicBody := `{"model":"m","max_tokens":5,"messages":[],"tools":[{"name":"x"}]}`
	openaiBody := `{"model":"m","input":"hi","tools":[{"type":"function","name":"x"}]}`
	cases := []struct {
		name    string
		path    string
		header  map[string]string
		ok      bool
		typ     string // the error's type
		message string // a part of the error's message
		code    any    // OpenAI's error code
	}{
		{"anthropic x-api-key", "/v1/messages", map[string]string{"X-Api-Key": testKey}, true, "", "", nil},
		{"anthropic bearer", "/v1/messages", map[string]string{"Authorization": "Bearer " + testKey}, true, "", "", nil},
		{"anthropic bearer, scheme in lower case", "/v1/messages", map[string]string{"Authorization": "bearer " + testKey}, true, "", "", nil},
		{"anthropic no key", "/v1/messages", nil, false, "authentication_error", "x-api-key header is required", nil},
		{"anthropic sentinel", "/v1/messages", map[string]string{"X-Api-Key": sentinel}, false, "authentication_error", "invalid x-api-key", nil},
		{"anthropic sentinel beside the key", "/v1/messages", map[string]string{"X-Api-Key": sentinel, "Authorization": "Bearer " + testKey}, false, "authentication_error", "invalid x-api-key", nil},
		{"anthropic key without the bearer scheme", "/v1/messages", map[string]string{"Authorization": testKey}, false, "authentication_error", "invalid x-api-key", nil},
		{"anthropic key with a suffix", "/v1/messages", map[string]string{"X-Api-Key": testKey + "x"}, false, "authentication_error", "invalid x-api-key", nil},
		{"openai bearer", "/v1/responses", map[string]string{"Authorization": "Bearer " + testKey}, true, "", "", nil},
		{"openai no key", "/v1/responses", nil, false, "invalid_request_error", "You didn't provide an API key", nil},
		{"openai key in x-api-key", "/v1/responses", map[string]string{"X-Api-Key": testKey}, false, "invalid_request_error", "You didn't provide an API key", nil},
		{"openai sentinel", "/v1/responses", map[string]string{"Authorization": "Bearer " + sentinel}, false, "invalid_request_error", "Incorrect API key provided: sk-b…(29 chars).", "invalid_api_key"},
		{"openai basic auth", "/v1/responses", map[string]string{"Authorization": "Basic " + testKey}, false, "invalid_request_error", "Incorrect API key provided", "invalid_api_key"},
		{"chat sentinel", "/v1/chat/completions", map[string]string{"Authorization": "Bearer " + sentinel}, false, "invalid_request_error", "Incorrect API key provided", "invalid_api_key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := start(t, Script{Say("hi")}, Options{Key: testKey})
			body := openaiBody
			if tc.path == "/v1/messages" {
				body = anthropicBody
			} else if tc.path == "/v1/chat/completions" {
				body = `{"model":"m","messages":[],"tools":[{"type":"function","function":{"name":"x"}}]}`
			}
			resp := call(t, s, "POST", tc.path, tc.header, body)
			rec := s.Requests()[0]
			if tc.ok {
				if resp.status != 200 || !rec.KeyMatched || s.Played() != 1 {
					t.Fatalf("status %d, matched %v, played %d: %s", resp.status, rec.KeyMatched, s.Played(), resp.body)
				}
				return
			}
			if resp.status != 401 || rec.KeyMatched || rec.Outcome != OutcomeUnauthorized || s.Played() != 0 {
				t.Fatalf("status %d, matched %v, outcome %s, played %d: %s", resp.status, rec.KeyMatched, rec.Outcome, s.Played(), resp.body)
			}
			if resp.header.Get("X-Should-Retry") != "false" {
				t.Errorf("X-Should-Retry = %q: Claude Code retries a 401 ten times without it", resp.header.Get("X-Should-Retry"))
			}
			m := decode(t, resp.body)
			if tc.path == "/v1/messages" {
				if m["type"] != "error" || get(m, "error", "type") != tc.typ || !strings.Contains(get(m, "error", "message").(string), tc.message) ||
					m["request_id"] == nil || resp.header.Get("Request-Id") != m["request_id"] {
					t.Errorf("Anthropic error = %s", resp.body)
				}
				return
			}
			if get(m, "error", "type") != tc.typ || !strings.Contains(get(m, "error", "message").(string), tc.message) || get(m, "error", "code") != tc.code || !hasKey(m["error"].(map[string]any), "param") {
				t.Errorf("OpenAI error = %s", resp.body)
			}
			if strings.Contains(string(resp.body), sentinel) {
				t.Errorf("the refusal repeats the key it was given: %s", resp.body)
			}
		})
	}
}

// TestRecordsNeverHoldTheKey: a record shows a key only redacted and fingerprinted, and
// its headers lack the credentials, so that a test may log it.
func TestRecordsNeverHoldTheKey(t *testing.T) {
	s := start(t, Script{Say("hi")}, Options{Key: testKey})
	anthropic(t, s, `{"model":"m","max_tokens":5,"messages":[],"tools":[{"name":"x"}]}`)
	openai(t, s, "/v1/responses", `{"model":"m","input":"hi","tools":[{"type":"function","name":"x"}]}`)
	call(t, s, "POST", "/v1/responses", map[string]string{"Authorization": "Basic " + testKey}, `{}`)
	recs := s.Requests()
	b, err := json.Marshal(recs)
	if err != nil {
		t.Fatal(err)
	}
	for _, form := range []string{string(b), fmt.Sprintf("%+v", recs), fmt.Sprintf("%#v", recs)} {
		if strings.Contains(form, testKey) || strings.Contains(form, testKey[8:]) {
			t.Fatalf("a record holds the key:\n%s", form)
		}
	}
	for _, r := range recs {
		if r.KeySHA256 != Fingerprint(testKey) && r.KeyHeader != "authorization" {
			t.Errorf("fingerprint %s, want %s", r.KeySHA256, Fingerprint(testKey))
		}
		if r.Header.Get("Authorization") != "" || r.Header.Get("X-Api-Key") != "" {
			t.Errorf("record headers hold credentials: %v", r.Header)
		}
	}
	if Redact("short") != "…(5 chars)" || Redact(testKey) != "sk-t…(31 chars)" {
		t.Errorf("Redact: %q, %q", Redact("short"), Redact(testKey))
	}
}

// messagesBody is a Messages request with tools, carrying tool results for ids.
func messagesBody(model string, tools bool, resultIDs ...string) string {
	msgs := []any{map[string]any{"role": "user", "content": "go"}}
	for _, id := range resultIDs {
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{}}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": []any{map[string]any{"type": "text", "text": "out of " + id}}}}})
	}
	body := map[string]any{"model": model, "max_tokens": 100, "messages": msgs}
	if tools {
		body["tools"] = []any{map[string]any{"name": "Bash"}, map[string]any{"name": "Write"}}
	}
	b, _ := json.Marshal(body)
	return string(b)
}

func outcomes(s *Server) string {
	var out []string
	for _, r := range s.Requests() {
		out = append(out, fmt.Sprintf("%s:%d", r.Outcome, r.Turn))
	}
	return strings.Join(out, " ")
}

// TestProgression: a turn with calls waits for a request carrying one of their results;
// side requests (no tools, another model, no result) get SideText and move nothing;
// past the end, DoneText.
func TestProgression(t *testing.T) {
	s := start(t, Script{Do(RunCommand("ls")), Say("All done.")}, Options{Key: testKey, SideText: "side", DoneText: "over"})
	text := func(resp response) string {
		m := decode(t, resp.body)
		for _, c := range m["content"].([]any) {
			if get(c, "type") == "text" {
				return get(c, "text").(string)
			}
		}
		return ""
	}
	first := decode(t, anthropic(t, s, messagesBody("claude-opus-5-5", true)).body)
	id := get(first, "content", 0, "id").(string)
	if get(first, "content", 0, "name") != "Bash" || get(first, "content", 0, "input", "command") != "ls" {
		t.Fatalf("turn 0 = %v", first)
	}
	if got := text(anthropic(t, s, messagesBody("claude-opus-5-5", true))); got != "side" {
		t.Errorf("a request without the call's result got %q", got)
	}
	if got := text(anthropic(t, s, messagesBody("claude-opus-5-5", false, id))); got != "side" {
		t.Errorf("a request without tools got %q", got)
	}
	if got := text(anthropic(t, s, messagesBody("claude-haiku-4-5", true, id))); got != "side" {
		t.Errorf("a request for another model got %q", got)
	}
	if got := text(anthropic(t, s, messagesBody("claude-opus-5-5", true, "toolu_someone_else"))); got != "side" {
		t.Errorf("a request with another call's result got %q", got)
	}
	if s.Played() != 1 {
		t.Fatalf("side requests moved the script to %d", s.Played())
	}
	if got := text(anthropic(t, s, messagesBody("claude-opus-5-5", true, id))); got != "All done." {
		t.Errorf("the request with the result got %q", got)
	}
	if !s.Finished() {
		t.Error("not finished after the last turn")
	}
	for range 2 {
		if got := text(anthropic(t, s, messagesBody("claude-opus-5-5", true, id))); got != "over" {
			t.Errorf("past the end: %q", got)
		}
	}
	if got, want := outcomes(s), "turn:0 side:-1 side:-1 side:-1 side:-1 turn:1 done:-1 done:-1"; got != want {
		t.Errorf("outcomes %s, want %s", got, want)
	}
	recs := s.Requests()
	if r := recs[5].ToolResults; len(r) != 1 || r[0].CallID != id || r[0].Tool != "Bash" || r[0].Output != "out of "+id {
		t.Errorf("turn 1's request carries %+v", r)
	}
	if len(recs[6].ToolResults) != 0 {
		t.Errorf("a result is recorded twice: %+v", recs[6].ToolResults)
	}
	if !strings.Contains(recs[1].Note, id) || !strings.Contains(recs[2].Note, "no tools") || !strings.Contains(recs[3].Note, "claude-haiku-4-5") {
		t.Errorf("side notes: %q, %q, %q", recs[1].Note, recs[2].Note, recs[3].Note)
	}
}

// TestProgressionResponses: the same with Codex's items: results are
// function_call_output and custom_tool_call_output, and tools may sit in an
// additional_tools item.
func TestProgressionResponses(t *testing.T) {
	s := start(t, Script{Do(WriteFile("a.txt", "a\n")), Do(RunCommand("ls")), Say("ok")}, Options{Key: testKey})
	body := func(results ...string) string {
		input := []any{
			map[string]any{"type": "additional_tools", "role": "developer", "tools": []any{map[string]any{"type": "namespace", "name": "functions", "tools": []any{
				map[string]any{"type": "function", "name": "exec_command"}, map[string]any{"type": "custom", "name": "apply_patch"}}}}},
			map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "go"}}},
		}
		for i, id := range results {
			typ := "function_call_output"
			if i == 0 {
				typ = "custom_tool_call_output"
			}
			input = append(input, map[string]any{"type": typ, "call_id": id, "output": "done " + id})
		}
		b, _ := json.Marshal(map[string]any{"model": "gpt-5.5", "input": input})
		return string(b)
	}
	first := decode(t, openai(t, s, "/v1/responses", body()).body)
	patchID := get(first, "output", 0, "call_id").(string)
	if get(first, "output", 0, "type") != "custom_tool_call" || get(first, "output", 0, "name") != "apply_patch" {
		t.Fatalf("turn 0 = %v", first)
	}
	second := decode(t, openai(t, s, "/v1/responses", body(patchID)).body)
	cmdID := get(second, "output", 0, "call_id").(string)
	if get(second, "output", 0, "name") != "exec_command" || get(second, "output", 0, "arguments") != `{"cmd":"ls"}` {
		t.Fatalf("turn 1 = %v", second)
	}
	third := decode(t, openai(t, s, "/v1/responses", body(patchID, cmdID)).body)
	if get(third, "output", 0, "content", 0, "text") != "ok" {
		t.Fatalf("turn 2 = %v", third)
	}
	recs := s.Requests()
	if r := recs[1].ToolResults; len(r) != 1 || r[0].Tool != "apply_patch" || r[0].Output != "done "+patchID {
		t.Errorf("turn 1's request carries %+v", r)
	}
	if r := recs[2].ToolResults; len(r) != 1 || r[0].Tool != "exec_command" {
		t.Errorf("turn 2's request carries %+v (the earlier result again?)", r)
	}
	if tools := recs[0].Tools; len(tools) != 2 || tools[0].String() != "functions.exec_command (function)" {
		t.Errorf("tools = %v", tools)
	}
}

func TestEveryRequest(t *testing.T) {
	s := start(t, Script{Say("one"), Say("two")}, Options{Key: testKey, EveryRequest: true})
	for _, want := range []string{"one", "two", "Done."} {
		m := decode(t, anthropic(t, s, `{"model":"any","max_tokens":5,"messages":[]}`).body)
		if got := get(m, "content", 0, "text"); got != want {
			t.Errorf("got %v, want %s", got, want)
		}
	}
}

// TestFailedTurn: a scripted failure is the provider's error, retried at once; the
// retry gets the next turn, and the wait for the last calls' results still holds.
func TestFailedTurn(t *testing.T) {
	s := start(t, Script{
		Do(RunCommand("ls")),
		Fail(529, "overloaded_error", "Overloaded"),
		Say("after the retry"),
	}, Options{Key: testKey})
	first := decode(t, anthropic(t, s, messagesBody("m", true)).body)
	id := get(first, "content", 0, "id").(string)
	failed := anthropic(t, s, messagesBody("m", true, id))
	if m := decode(t, failed.body); failed.status != 529 || get(m, "error", "type") != "overloaded_error" || get(m, "error", "message") != "Overloaded" {
		t.Fatalf("failed turn: %d %s", failed.status, failed.body)
	}
	if failed.header.Get("Retry-After") != "0" || failed.header.Get("X-Should-Retry") != "true" {
		t.Errorf("failed turn headers: %v", failed.header)
	}
	if m := decode(t, anthropic(t, s, messagesBody("m", true)).body); get(m, "content", 0, "text") != "OK." {
		t.Errorf("a request without the results after the failure got %v", m)
	}
	retry := decode(t, anthropic(t, s, messagesBody("m", true, id)).body)
	if get(retry, "content", 0, "text") != "after the retry" {
		t.Errorf("the retry got %v", retry)
	}
	if got, want := outcomes(s), "turn:0 turn:1 side:-1 turn:2"; got != want {
		t.Errorf("outcomes %s, want %s", got, want)
	}

	o := start(t, Script{{Fail: &Failure{Status: 429, Type: "requests", Message: "Rate limit reached", Code: "rate_limit_exceeded"}}}, Options{Key: testKey})
	resp := openai(t, o, "/v1/responses", `{"model":"gpt-5.5","stream":true,"input":"hi","tools":[{"type":"function","name":"x"}]}`)
	if m := decode(t, resp.body); resp.status != 429 || get(m, "error", "code") != "rate_limit_exceeded" || get(m, "error", "type") != "requests" {
		t.Errorf("OpenAI failure: %d %s", resp.status, resp.body)
	}
}

// TestTruncatedTurn: a cut-off stream ends without its final usage; the calls never
// reached the client, so its retry (without results) gets the next turn.
func TestTruncatedTurn(t *testing.T) {
	for _, tc := range []struct {
		api, path, body string
	}{
		{"anthropic", "/v1/messages", `{"model":"m","max_tokens":5,"stream":%s,"messages":[],"tools":[{"name":"Bash"}]}`},
		{"responses", "/v1/responses", `{"model":"m","stream":%s,"input":"go","tools":[{"type":"function","name":"exec_command"}]}`},
		{"chat", "/v1/chat/completions", `{"model":"m","stream":%s,"stream_options":{"include_usage":true},"messages":[],"tools":[{"type":"function","function":{"name":"exec_command"}}]}`},
	} {
		for _, stream := range []string{"true", "false"} {
			t.Run(tc.api+" stream "+stream, func(t *testing.T) {
				s := start(t, Script{Do(RunCommand("ls")).Truncated(), Say("second")}, Options{Key: testKey})
				header := map[string]string{"X-Api-Key": testKey, "Authorization": "Bearer " + testKey}
				body := strings.Replace(tc.body, "%s", stream, 1)
				cut := call(t, s, "POST", tc.path, header, body)
				if cut.err == nil && stream == "false" {
					t.Errorf("a truncated JSON body read whole: %s", cut.body)
				}
				if stream == "true" {
					if _, complete := meteredUsage(t, tc.api, cut.body, true); complete {
						t.Errorf("a truncated stream reported its final usage:\n%s", cut.body)
					}
				}
				if r := s.Requests()[0]; r.Outcome != OutcomeTurn || !strings.Contains(r.Note, "truncated") || len(r.Calls) != 1 {
					t.Errorf("record = %+v", r)
				}
				retry := call(t, s, "POST", tc.path, header, body)
				if retry.status != 200 || !strings.Contains(string(retry.body), "second") {
					t.Errorf("the retry got %d %s", retry.status, retry.body)
				}
			})
		}
	}
}

func TestMalformedRequests(t *testing.T) {
	a := map[string]string{"X-Api-Key": testKey}
	o := map[string]string{"Authorization": "Bearer " + testKey}
	cases := []struct {
		name, path string
		header     map[string]string
		body       string
		status     int
		message    string
	}{
		{"messages: not JSON", "/v1/messages", a, `{"model":`, 400, "not valid JSON"},
		{"messages: an array", "/v1/messages", a, `[]`, 400, "must be a JSON object"},
		{"messages: empty", "/v1/messages", a, ``, 400, "must be a JSON object"},
		{"messages: no model", "/v1/messages", a, `{"max_tokens":5,"messages":[]}`, 400, "model: Field required"},
		{"messages: no max_tokens", "/v1/messages", a, `{"model":"m","messages":[]}`, 400, "max_tokens: Field required"},
		{"messages: max_tokens 0", "/v1/messages", a, `{"model":"m","max_tokens":0,"messages":[]}`, 400, "greater than or equal to 1"},
		{"messages: no messages", "/v1/messages", a, `{"model":"m","max_tokens":5}`, 400, "messages: Field required"},
		{"messages: messages a string", "/v1/messages", a, `{"model":"m","max_tokens":5,"messages":"hi"}`, 400, "messages"},
		{"messages: model a number", "/v1/messages", a, `{"model":5,"max_tokens":5,"messages":[]}`, 400, "model"},
		{"responses: no model", "/v1/responses", o, `{"input":"hi"}`, 400, "Missing required parameter: 'model'."},
		{"responses: input a number", "/v1/responses", o, `{"model":"m","input":5}`, 400, "input"},
		{"responses: not JSON", "/v1/responses", o, `nope`, 400, "must be a JSON object"},
		{"chat: no messages", "/v1/chat/completions", o, `{"model":"m"}`, 400, "Missing required parameter: 'messages'."},
		{"messages: gzip", "/v1/messages", map[string]string{"X-Api-Key": testKey, "Content-Encoding": "gzip"}, `{}`, 415, "Content-Encoding"},
		{"responses: too large", "/v1/responses", o, `{"model":"m","input":"` + strings.Repeat("a", MaxBody) + `"}`, 413, "maximum allowed number of bytes"},
		{"messages: too large", "/v1/messages", a, `{"model":"m","max_tokens":5,"messages":[],"x":"` + strings.Repeat("a", MaxBody) + `"}`, 413, "maximum allowed number of bytes"},
	}
	s := start(t, Script{Say("never")}, Options{Key: testKey, EveryRequest: true})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := call(t, s, "POST", tc.path, tc.header, tc.body)
			m := decode(t, resp.body)
			msg, _ := get(m, "error", "message").(string)
			if resp.status != tc.status || !strings.Contains(msg, tc.message) {
				t.Fatalf("%d %s; want %d with %q", resp.status, resp.body, tc.status, tc.message)
			}
			anthropic := strings.HasPrefix(tc.path, "/v1/messages")
			if anthropic != (m["type"] == "error") {
				t.Errorf("the error is not in the provider's shape: %s", resp.body)
			}
		})
	}
	if s.Played() != 0 {
		t.Errorf("malformed requests played %d turns", s.Played())
	}
	for _, r := range s.Requests() {
		if r.Outcome != OutcomeInvalid {
			t.Errorf("%s: outcome %s", r.Path, r.Outcome)
		}
	}
}

// TestNotFound: the server answers only the endpoints the gateways forward; anything
// else is 404 in the shape of the API the request belongs to, even without a key
// (Codex's WebSocket upgrade, Claude Code's connectivity check, a batch call).
func TestNotFound(t *testing.T) {
	s := start(t, Script{Say("never")}, Options{Key: testKey})
	cases := []struct {
		method, path string
		header       map[string]string
		anthropic    bool
	}{
		{"GET", "/v1/messages", map[string]string{"X-Api-Key": testKey}, true},
		{"POST", "/v1/messages/batches", map[string]string{"X-Api-Key": testKey}, true},
		{"POST", "/v1/messages/", map[string]string{"X-Api-Key": testKey}, true},
		{"HEAD", "/api/hello", map[string]string{"Anthropic-Version": "2023-06-01"}, true},
		{"GET", "/v1/responses", map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Authorization": "Bearer " + testKey}, false},
		{"POST", "/v1/embeddings", map[string]string{"Authorization": "Bearer " + testKey}, false},
		{"POST", "/v1/responses/resp_1/cancel", nil, false},
		{"GET", "/", nil, false},
	}
	for _, tc := range cases {
		resp := call(t, s, tc.method, tc.path, tc.header, "")
		if resp.status != 404 {
			t.Errorf("%s %s: %d", tc.method, tc.path, resp.status)
			continue
		}
		if tc.method == "HEAD" {
			continue
		}
		m := decode(t, resp.body)
		if tc.anthropic && (m["type"] != "error" || get(m, "error", "type") != "not_found_error") {
			t.Errorf("%s %s: %s", tc.method, tc.path, resp.body)
		}
		if !tc.anthropic && get(m, "error", "message") != fmt.Sprintf("Invalid URL (%s %s)", tc.method, tc.path) {
			t.Errorf("%s %s: %s", tc.method, tc.path, resp.body)
		}
	}
	for _, r := range s.Requests() {
		if r.Outcome != OutcomeNotFound {
			t.Errorf("%s %s: outcome %s", r.Method, r.Path, r.Outcome)
		}
	}
}

// TestConcurrentRequests: each request gets a turn of its own.
func TestConcurrentRequests(t *testing.T) {
	const n = 32
	var script Script
	for i := range n {
		script = append(script, Say(fmt.Sprintf("turn %d", i)))
	}
	s := start(t, script, Options{Key: testKey, EveryRequest: true})
	seen := make(chan string, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			stream := anthropic(t, s, `{"model":"m","max_tokens":5,"stream":true,"messages":[]}`)
			var text string
			for _, e := range parseSSE(t, stream.body) {
				if e.name == "content_block_delta" {
					text += get(e.json(t), "delta", "text").(string)
				}
			}
			seen <- text
		})
	}
	wg.Wait()
	close(seen)
	got := map[string]bool{}
	for text := range seen {
		got[text] = true
	}
	if len(got) != n || !s.Finished() {
		t.Errorf("%d distinct turns of %d, finished %v", len(got), n, s.Finished())
	}
}

// TestRealRequestBodies plays a script to the requests the real CLIs sent (the third
// request of each TestReal* run, in testdata): the server reads their tools and the
// results of both earlier calls. The body is sent three times, its two call ids
// replaced by the ones this server hands out, as the CLI would have sent them.
func TestRealRequestBodies(t *testing.T) {
	for _, tc := range []struct {
		file, path, api string
		tools           []string
		results         []string // tool: output part
	}{
		{"testdata/claude-2.1.328-request-3.json", "/v1/messages", "anthropic",
			[]string{"Bash", "Write"},
			[]string{"Write: File created successfully at: /workspace/hello.txt", "Bash: TEST-SH-PASSED"}},
		{"testdata/codex-0.171.0-request-3.json", "/v1/responses", "responses",
			[]string{"exec_command (function)", "apply_patch (custom)"},
			[]string{"apply_patch: Success. Updated the following files:\nA hello.txt", "exec_command: TEST-SH-PASSED"}},
	} {
		t.Run(tc.api, func(t *testing.T) {
			body, err := os.ReadFile(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			var p parsed
			if tc.api == "anthropic" {
				p, err = parseAnthropic(body, false)
			} else {
				p, err = parseResponses(body)
			}
			if err != nil || len(p.results) != 2 {
				t.Fatalf("parsed %d results, %v", len(p.results), err)
			}
			dir := t.TempDir()
			s := start(t, Script{Do(WriteFile(dir+"/hello.txt", "hello from the script\n")), Do(RunCommand("sh test.sh")), Say("Done.")}, Options{Key: testKey})
			h := map[string]string{"X-Api-Key": testKey, "Authorization": "Bearer " + testKey}
			sent := string(body)
			for i := range 3 {
				if resp := call(t, s, "POST", tc.path, h, sent); resp.status != 200 {
					t.Fatalf("%d %s", resp.status, resp.body)
				}
				if i < 2 {
					issued := s.Requests()[i].Calls[0].ID
					sent = strings.ReplaceAll(sent, `"`+p.results[i].CallID+`"`, `"`+issued+`"`)
				}
			}
			if got := outcomes(s); got != "turn:0 turn:1 turn:2" {
				t.Fatalf("outcomes %s", got)
			}
			recs := s.Requests()
			var tools []string
			for _, tl := range recs[0].Tools {
				tools = append(tools, tl.String())
			}
			for _, want := range tc.tools {
				if !strings.Contains(strings.Join(tools, "|"), want) {
					t.Errorf("tools %v lack %s", tools, want)
				}
			}
			for i, want := range tc.results {
				tool, output, _ := strings.Cut(want, ": ")
				r := recs[i+1].ToolResults
				if len(r) != 1 || r[0].Tool != tool || !strings.Contains(r[0].Output, output) {
					t.Errorf("request %d carries %+v, want %s's result", i+1, r, tool)
				}
			}
			if !recs[0].Stream || recs[0].Model == "" {
				t.Errorf("model %q, stream %v", recs[0].Model, recs[0].Stream)
			}
		})
	}
}
