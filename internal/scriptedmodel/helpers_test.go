package scriptedmodel

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

const testKey = "sk-test-the-real-key-0123456789"

// start starts a server for the test and closes it at the end.
func start(t *testing.T, script Script, opts Options) *Server {
	t.Helper()
	s, err := Start(script, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// fixedClock makes created_at and record times stable for golden files.
func fixedClock() time.Time { return time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC) }

// response is what a test client got.
type response struct {
	status int
	header http.Header
	body   []byte
	err    error // reading the body failed (a cut-off response)
}

// call sends one request; header values are set as given.
func call(t *testing.T, s *Server, method, path string, header map[string]string, body string) response {
	t.Helper()
	req, err := http.NewRequest(method, s.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, b, err}
}

// anthropic posts a Messages request with the key in x-api-key.
func anthropic(t *testing.T, s *Server, body string) response {
	t.Helper()
	return call(t, s, http.MethodPost, "/v1/messages", map[string]string{"X-Api-Key": testKey, "Anthropic-Version": "2023-06-01", "Content-Type": "application/json"}, body)
}

// openai posts to an OpenAI path with the key as a bearer token.
func openai(t *testing.T, s *Server, path, body string) response {
	t.Helper()
	return call(t, s, http.MethodPost, path, map[string]string{"Authorization": "Bearer " + testKey, "Content-Type": "application/json"}, body)
}

// sseEvent is one server-sent event.
type sseEvent struct {
	name string
	data string
}

func (e sseEvent) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(e.data), &m); err != nil {
		t.Fatalf("event %s: data is not a JSON object: %v\n%s", e.name, err, e.data)
	}
	return m
}

// parseSSE splits a stream into events, checking the framing: "event:" and "data:"
// lines, a blank line after each event.
func parseSSE(t *testing.T, body []byte) []sseEvent {
	t.Helper()
	var events []sseEvent
	var cur sseEvent
	open := false
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if !open {
				t.Fatalf("an empty event in the stream:\n%s", body)
			}
			events = append(events, cur)
			cur, open = sseEvent{}, false
		case strings.HasPrefix(line, "event: "):
			cur.name, open = strings.TrimPrefix(line, "event: "), true
		case strings.HasPrefix(line, "data: "):
			if cur.data != "" {
				t.Fatalf("an event with two data lines:\n%s", body)
			}
			cur.data, open = strings.TrimPrefix(line, "data: "), true
		default:
			t.Fatalf("a line that is not SSE: %q", line)
		}
	}
	if open {
		events = append(events, cur) // a cut-off stream's last event
	}
	return events
}

func names(events []sseEvent) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.name)
	}
	return out
}

// get walks a decoded JSON value by keys and indexes.
func get(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("the body is not a JSON object: %v\n%s", err, b)
	}
	return m
}

// meteredUsage reads a response's final usage the way the firewall's meter does (a
// JSON body's usage; message_start then message_delta; response.completed; a chat
// stream's usage chunk), so that a test sees what the gateway would charge.
func meteredUsage(t *testing.T, api string, body []byte, stream bool) (u Usage, complete bool) {
	t.Helper()
	num := func(v any) int64 { f, _ := v.(float64); return int64(f) }
	anthropicU := func(m any) {
		if m == nil {
			return
		}
		if v := get(m, "input_tokens"); v != nil {
			u.Input = num(v)
		}
		if v := get(m, "cache_creation_input_tokens"); v != nil {
			u.CacheWrite = num(v)
		}
		if v := get(m, "cache_read_input_tokens"); v != nil {
			u.CacheRead = num(v)
		}
		if v := get(m, "output_tokens"); v != nil {
			u.Output = num(v)
		}
	}
	openaiU := func(m any) {
		u.Input, u.Output = num(get(m, "input_tokens")), num(get(m, "output_tokens"))
		u.CacheRead, u.Reasoning = num(get(m, "input_tokens_details", "cached_tokens")), num(get(m, "output_tokens_details", "reasoning_tokens"))
	}
	chatU := func(m any) {
		u.Input, u.Output = num(get(m, "prompt_tokens")), num(get(m, "completion_tokens"))
		u.CacheRead, u.Reasoning = num(get(m, "prompt_tokens_details", "cached_tokens")), num(get(m, "completion_tokens_details", "reasoning_tokens"))
	}
	if !stream {
		m := decode(t, body)
		switch api {
		case "anthropic":
			anthropicU(m["usage"])
		case "responses":
			openaiU(m["usage"])
		case "chat":
			chatU(m["usage"])
		}
		return u, m["usage"] != nil
	}
	for _, e := range parseSSE(t, body) {
		if e.data == "[DONE]" {
			continue
		}
		m := e.json(t)
		switch {
		case api == "anthropic" && m["type"] == "message_start":
			anthropicU(get(m, "message", "usage"))
		case api == "anthropic" && m["type"] == "message_delta":
			anthropicU(m["usage"])
			complete = true
		case api == "responses" && m["type"] == "response.completed":
			openaiU(get(m, "response", "usage"))
			complete = true
		case api == "chat" && m["usage"] != nil:
			chatU(m["usage"])
			complete = true
		}
	}
	return u, complete
}
