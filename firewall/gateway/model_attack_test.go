package gateway

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bumperdev/bumper/firewall/audit"
)

// TestModelEndpointsOnly: only the endpoints the harnesses use are forwarded; batches,
// files, fine-tuning, stored responses, admin and the rest are refused before the key
// is attached.
func TestModelEndpointsOnly(t *testing.T) {
	f := newFixture(t, 0, nil)
	tests := []struct {
		method, path string
		status       int
	}{
		{"POST", "/anthropic/v1/messages?beta=true", 200},
		{"POST", "/anthropic/v1/messages/count_tokens?beta=true", 200},
		{"GET", "/anthropic/v1/models", 200},
		{"GET", "/anthropic/v1/models?limit=5", 200},
		{"GET", "/anthropic/v1/models/claude-sonnet-4-5", 200},
		{"POST", "/openai/v1/responses", 200},
		{"POST", "/openai/v1/chat/completions", 200},
		{"GET", "/openai/v1/models", 200},
		{"GET", "/openai/v1/models/ft:gpt-4o:acme::abc123", 200},

		{"POST", "/anthropic/v1/messages/batches", 403},
		{"GET", "/anthropic/v1/messages/batches/msgbatch_1/results", 403},
		{"POST", "/anthropic/v1/files", 403},
		{"GET", "/anthropic/v1/files", 403},
		{"POST", "/anthropic/v1/complete", 403},
		{"GET", "/anthropic/v1/organizations/api_keys", 403},
		{"POST", "/anthropic/v1/skills", 403},
		{"GET", "/anthropic/v1/messages", 403},
		{"POST", "/anthropic/v1/messages/", 403},
		{"POST", "/anthropic/V1/Messages", 403},
		{"POST", "/anthropic/v1/%6dessages", 403},
		{"POST", "/anthropic/v1/models", 403},
		{"POST", "/openai/v1/batches", 403},
		{"POST", "/openai/v1/files", 403},
		{"POST", "/openai/v1/fine_tuning/jobs", 403},
		{"POST", "/openai/v1/realtime/sessions", 403},
		{"GET", "/openai/v1/realtime", 403},
		{"POST", "/openai/v1/assistants", 403},
		{"POST", "/openai/v1/threads/runs", 403},
		{"POST", "/openai/v1/uploads", 403},
		{"POST", "/openai/v1/embeddings", 403},
		{"POST", "/openai/v1/images/generations", 403},
		{"POST", "/openai/v1/audio/speech", 403},
		{"POST", "/openai/v1/completions", 403},
		{"POST", "/openai/v1/moderations", 403},
		{"POST", "/openai/v1/vector_stores", 403},
		{"POST", "/openai/v1/conversations", 403},
		{"GET", "/openai/v1/organization/usage/completions", 403},
		{"GET", "/openai/v1/responses/resp_123", 403},
		{"DELETE", "/openai/v1/responses/resp_123", 403},
		{"GET", "/openai/v1/chat/completions", 403},
		{"DELETE", "/openai/v1/models/ft:gpt-4o:acme::abc123", 403},
		{"GET", "/openai/v1/models/a/b", 403},
		{"POST", "/openai/v1/responses/compact", 403},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			before := f.anthropic.count() + f.openai.count()
			resp, body := f.do(t, tc.method, tc.path, map[string]string{"X-Api-Key": testSentinel}, `{"model":"claude-haiku-4-5","max_tokens":10}`)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, body, tc.status)
			}
			reached := f.anthropic.count() + f.openai.count()
			if tc.status == 403 && (reached != before || !strings.Contains(body, "forwards only")) {
				t.Fatalf("refused call reached the upstream (%d→%d) or was not explained: %s", before, reached, body)
			}
		})
	}
	if a := f.auditText(t); !strings.Contains(a, "/openai/v1/batches") || !strings.Contains(a, `"status":403`) {
		t.Fatalf("refusals not audited:\n%s", a)
	}
}

// hijacker is an upstream that accepts any protocol upgrade (answers 101 and keeps the
// raw connection), recording every request and the credential it carried.
type hijacker struct {
	mu   sync.Mutex
	seen []string
	srv  *httptest.Server
}

func newHijacker(t *testing.T) *hijacker {
	h := &hijacker{}
	h.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.seen = append(h.seen, r.Method+" "+r.URL.Path+" key="+r.Header.Get("X-Api-Key")+" auth="+r.Header.Get("Authorization"))
		h.mu.Unlock()
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		brw.Flush()
		io.Copy(conn, conn) // echo whatever the client says on the upgraded stream
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// TestUpgradeRefused: a protocol upgrade (WebSocket, h2c) on any gateway path is refused
// with 400 before anything is forwarded, even though the upstream would accept it.
func TestUpgradeRefused(t *testing.T) {
	up := newHijacker(t)
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	al, err := audit.Open(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := New(Config{
		GitBase: up.srv.URL, GitHubAPIBase: up.srv.URL, AnthropicBase: up.srv.URL + "/base", OpenAIBase: up.srv.URL,
		Token: testToken, AnthropicKey: testKey, OpenAIKey: testOpenAI, CAFile: caFile(t, up.srv), Audit: al,
		APIAllow: []string{"GET /repos/*/*/issues/*", "* /**"}, PushRef: "refs/heads/bumper/12-1",
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	t.Cleanup(func() { srv.Close(); gw.Close(); al.Close() })
	paths := []string{
		"POST /anthropic/v1/messages",
		"GET /anthropic/v1/models",
		"GET /openai/v1/responses",
		"POST /openai/v1/responses",
		"GET /openai/v1/realtime?model=gpt-realtime",
		"GET /api/github/repos/o/r/issues/7",
		"GET /git/o/r.git/info/refs?service=git-upload-pack",
		"POST /git/o/r.git/git-upload-pack",
	}
	headers := []string{
		"Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n",
		"connection: keep-alive, UPGRADE\r\nupgrade: WebSocket\r\n",
		"Upgrade: websocket\r\n",
		"Connection: upgrade\r\n",
		"Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n",
	}
	for _, p := range paths {
		for i, hd := range headers {
			t.Run(fmt.Sprintf("%s/%d", p, i), func(t *testing.T) {
				conn, err := net.Dial("tcp", srv.Listener.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				conn.SetDeadline(time.Now().Add(5 * time.Second))
				method, target, _ := strings.Cut(p, " ")
				fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: fw\r\nX-Api-Key: %s\r\nAuthorization: Bearer %s\r\nContent-Length: 2\r\n%s\r\n{}", method, target, testSentinel, testSentinel, hd)
				resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "upgrade") {
					t.Fatalf("status %d (%s), want 400 refusing the upgrade", resp.StatusCode, body)
				}
			})
		}
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	if len(up.seen) != 0 {
		t.Fatalf("the upstream saw %d upgrade requests, with the real credential: %v", len(up.seen), up.seen)
	}
	al.Flush()
	a, _ := os.ReadFile(auditPath)
	if n := strings.Count(string(a), "upgrade"); n < len(paths)*len(headers) {
		t.Fatalf("only %d upgrade refusals audited", n)
	}
}

// spent waits for the meter to have recorded calls (the audit line and the charge are
// written when the upstream's response ends, which may be just after the client has
// given up) and returns the total.
func (f *fixture) spent(t *testing.T, calls int) float64 {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		s := f.meter.Summary()
		if s.Calls >= calls {
			return s.SpentUSD
		}
		if time.Now().After(deadline) {
			t.Fatalf("meter recorded %d calls, want %d (%+v)", s.Calls, calls, s)
		}
	}
}

// TestWorstCaseCharge: a generating call whose response carries no final usage is charged
// its worst case (output = the request's cap or the model's limit, input = one token per
// request byte plus the framing allowance), whatever made the usage go missing.
func TestWorstCaseCharge(t *testing.T) {
	sseHead := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-sonnet-4-5\",\"usage\":{\"input_tokens\":377,\"output_tokens\":1}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"the whole answer\"}}\n\n"
	tests := []struct {
		name     string
		path     string
		body     string
		upstream http.HandlerFunc
		hangUp   bool // the client gives up before the response headers
		// want computes the charge from the forwarded body's length in bytes.
		want func(n float64) float64
	}{
		{"chat stream whose upstream ignores include_usage", "/openai/v1/chat/completions",
			`{"model":"gpt-4o","stream":true,"max_completion_tokens":2000,"messages":[{"role":"user","content":"hi"}]}`,
			func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, "data: {\"model\":\"gpt-4o\",\"choices\":[{\"delta\":{\"content\":\"all of it\"}}]}\n\ndata: [DONE]\n\n")
			}, false,
			func(n float64) float64 { return ((n+1000)*2.5 + 2000*10) / 1e6 }},
		{"anthropic stream that ends before message_delta", "/anthropic/v1/messages",
			`{"model":"claude-sonnet-4-5","max_tokens":8000,"stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, sseHead)
			}, false,
			func(n float64) float64 { return ((n+1000)*3.75 + 8000*15) / 1e6 }},
		{"anthropic stream cut mid-way", "/anthropic/v1/messages",
			`{"model":"claude-sonnet-4-5","max_tokens":8000,"stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, sseHead)
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler)
			}, false,
			func(n float64) float64 { return ((n+1000)*3.75 + 8000*15) / 1e6 }},
		{"error status with a body", "/anthropic/v1/messages",
			`{"model":"claude-opus-4-5","max_tokens":1000,"messages":[]}`,
			func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusInternalServerError)
				io.WriteString(w, `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`)
			}, false,
			func(n float64) float64 { return ((n+1000)*6.25 + 1000*25) / 1e6 }},
		{"200 JSON without usage and no output cap", "/openai/v1/responses",
			`{"model":"gpt-5","input":"hi"}`,
			func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"object":"response","model":"gpt-5","output":[{"type":"message","content":[{"type":"output_text","text":"all of it"}]}]}`)
			}, false,
			func(n float64) float64 { return ((n+1000)*1.25 + 128000*10) / 1e6 }},
		{"several choices", "/openai/v1/chat/completions",
			`{"model":"gpt-4o-mini","n":3,"max_tokens":100,"messages":[]}`,
			func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"object":"chat.completion","model":"gpt-4o-mini","choices":[]}`)
			}, false,
			func(n float64) float64 { return ((n+1000)*0.15 + 300*0.6) / 1e6 }},
		{"input held upstream (previous_response_id)", "/openai/v1/responses",
			`{"model":"gpt-5","previous_response_id":"resp_1","max_output_tokens":10,"input":"go on"}`,
			func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"object":"response","model":"gpt-5"}`)
			}, false,
			func(n float64) float64 { return (400000*1.25 + 10*10) / 1e6 }},
		{"unknown model", "/anthropic/v1/messages",
			`{"model":"mystery-9","messages":[]}`,
			func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(500)
				io.WriteString(w, "oops")
			}, false,
			func(n float64) float64 { return ((n+1000)*18.75 + 128000*75) / 1e6 }},
		{"client hangs up before the response", "/anthropic/v1/messages",
			`{"model":"claude-haiku-4-5","max_tokens":500,"messages":[]}`,
			func(w http.ResponseWriter, r *http.Request) {
				<-r.Context().Done() // the model is still thinking when the client leaves
			}, true,
			func(n float64) float64 { return ((n+1000)*1.25 + 500*5) / 1e6 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, 0, nil)
			f.anthropic.set(tc.upstream)
			f.openai.set(tc.upstream)
			if tc.hangUp {
				// Hang up once the upstream has the request (the model is at work).
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				f.anthropic.set(func(w http.ResponseWriter, r *http.Request) {
					cancel()
					tc.upstream(w, r)
				})
				req, _ := http.NewRequestWithContext(ctx, "POST", f.srv.URL+tc.path, strings.NewReader(tc.body))
				if resp, err := http.DefaultClient.Do(req); err == nil {
					resp.Body.Close()
					t.Fatal("the client's request completed; want it to give up")
				}
			} else {
				resp, err := http.Post(f.srv.URL+tc.path, "application/json", strings.NewReader(tc.body))
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			up := f.anthropic
			if strings.HasPrefix(tc.path, "/openai/") {
				up = f.openai
			}
			want := tc.want(float64(len(up.lastBody(t))))
			if got := f.spent(t, 1); math.Abs(got-want) > 1e-9 {
				t.Fatalf("charged $%.6f, want the worst case $%.6f", got, want)
			}
			f.waitAudit(t, "estimated worst case")
		})
	}
}

// TestNoUsageNothingGenerated: an error without a body, and calls that never left the
// firewall, are not charged; a call whose usage arrived is charged exactly that.
func TestNoUsageNothingGenerated(t *testing.T) {
	f := newFixture(t, 0, nil)
	f.anthropic.set(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusUnauthorized) })
	resp, _ := f.do(t, "POST", "/anthropic/v1/messages", nil, `{"model":"claude-opus-4-5","max_tokens":1000}`)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status %d", resp.StatusCode)
	}
	f.waitAudit(t, "not charged: an error response without a body")
	// A short rate-limit or overload answer generated nothing either; any other error
	// with a body, or a long "429", is charged its worst case.
	for _, tc := range []struct {
		name    string
		status  int
		body    string
		charged bool
	}{
		{"overloaded", 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, false},
		{"rate limited", 429, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`, false},
		{"server error with a body", 500, `{"type":"error","error":{"type":"api_error","message":"x"}}`, true},
		{"a 429 carrying a long body", 429, strings.Repeat("x", 5000), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newFixture(t, 0, nil)
			e.anthropic.set(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			})
			if resp, _ := e.do(t, "POST", "/anthropic/v1/messages", nil, `{"model":"claude-opus-4-5","max_tokens":1000}`); resp.StatusCode != tc.status {
				t.Fatalf("status %d", resp.StatusCode)
			}
			if tc.charged {
				e.waitAudit(t, "estimated worst case")
			} else {
				e.waitAudit(t, "short rate-limit or overload answer")
			}
			if got := e.meter.Summary().SpentUSD; (got > 0) != tc.charged {
				t.Fatalf("spent $%v, want charged=%v", got, tc.charged)
			}
		})
	}
	if s := f.meter.Summary(); s.SpentUSD != 0 {
		t.Fatalf("an empty error was charged: %+v", s)
	}
	g := newFixture(t, 0, func(c *Config) { c.CAFile = "" }) // TLS fails: nothing was sent
	if resp, _ := g.do(t, "POST", "/anthropic/v1/messages", nil, `{"model":"claude-opus-4-5","max_tokens":1000}`); resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("status %d", resp.StatusCode)
	}
	g.waitAudit(t, "not charged: the request never reached the upstream")
	if s := g.meter.Summary(); s.SpentUSD != 0 {
		t.Fatalf("a call that never reached the upstream was charged: %+v", s)
	}
	// The control: a response with its usage is charged exactly that, not estimated.
	h := newFixture(t, 0, nil)
	if resp, body := h.do(t, "POST", "/anthropic/v1/messages", nil, `{"model":"claude-sonnet-4-5","max_tokens":64000}`); resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if got := h.spent(t, 1); math.Abs(got-0.002106) > 1e-9 {
		t.Fatalf("charged $%v, want the reported usage's $0.002106", got)
	}
	if s := h.meter.Summary(); s.Estimated != 0 {
		t.Fatalf("a call with usage was estimated: %+v", s)
	}
}

// waitAudit waits for an audit line containing s (the gateway writes it when the
// upstream's response ends, which may be just after the client has its answer).
func (f *fixture) waitAudit(t *testing.T, s string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		a := f.auditText(t)
		if strings.Contains(a, s) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("audit lacks %q:\n%s", s, a)
		}
	}
}

// openAIChat answers like the Chat Completions API: a stream carries its usage only when
// the request asked for it with stream_options.include_usage.
func openAIChat(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Stream        bool `json:"stream"`
		StreamOptions *struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	body, _ := io.ReadAll(r.Body)
	if json.Unmarshal(body, &req) != nil {
		w.WriteHeader(400)
		return
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"chat.completion","model":"gpt-4o","usage":{"prompt_tokens":9,"completion_tokens":12}}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	io.WriteString(w, "data: {\"model\":\"gpt-4o\",\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n")
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		io.WriteString(w, "data: {\"model\":\"gpt-4o\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":7}}\n\n")
	}
	io.WriteString(w, "data: [DONE]\n\n")
}

// TestIncludeUsageRequested: the gateway asks a chat completions stream for its usage,
// keeping every other field, so the call is charged what it used instead of the worst
// case.
func TestIncludeUsageRequested(t *testing.T) {
	tests := []struct {
		name, body string
		wantOpts   map[string]any // stream_options as forwarded; nil: body forwarded unchanged
	}{
		{"stream without stream_options", `{"model":"gpt-4o","stream":true,"temperature":0.2,"messages":[{"role":"user","content":"<b>&é"}],"max_tokens":50}`,
			map[string]any{"include_usage": true}},
		{"stream_options null", `{"model":"gpt-4o","stream_options":null,"stream":true,"messages":[]}`,
			map[string]any{"include_usage": true}},
		{"stream_options turned off", `{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":false,"include_obfuscation":false},"messages":[]}`,
			map[string]any{"include_usage": true, "include_obfuscation": false}},
		{"not a stream", `{"model":"gpt-4o","stream":false,"messages":[]}`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, 0, nil)
			f.openai.set(openAIChat)
			resp, body := f.do(t, "POST", "/openai/v1/chat/completions", map[string]string{"Content-Type": "application/json"}, tc.body)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			fwd := f.openai.lastBody(t)
			if got := f.openai.last(t).Get("X-Seen-Content-Length"); got != fmt.Sprint(len(fwd)) {
				t.Fatalf("Content-Length %s for a %d-byte body", got, len(fwd))
			}
			if tc.wantOpts == nil {
				if string(fwd) != tc.body {
					t.Fatalf("body changed: %s", fwd)
				}
			} else {
				var sent, got map[string]any
				json.Unmarshal([]byte(tc.body), &sent)
				if err := json.Unmarshal(fwd, &got); err != nil {
					t.Fatalf("forwarded body is not JSON: %s", fwd)
				}
				opts, _ := got["stream_options"].(map[string]any)
				if fmt.Sprint(opts) != fmt.Sprint(tc.wantOpts) {
					t.Fatalf("stream_options %v, want %v", got["stream_options"], tc.wantOpts)
				}
				delete(sent, "stream_options")
				delete(got, "stream_options")
				if fmt.Sprint(sent) != fmt.Sprint(got) {
					t.Fatalf("other fields changed:\n%v\n%v", sent, got)
				}
			}
			if spent := f.spent(t, 1); spent == 0 || spent > 0.001 {
				t.Fatalf("charged $%v, want the reported usage", spent)
			}
			if s := f.meter.Summary(); s.Estimated != 0 {
				t.Fatalf("a call with usage was estimated: %+v", s)
			}
		})
	}
}

// TestModelRequestBodies: the gateway reads the body to learn the model and the output
// cap; a body it cannot read that way is refused before it reaches the upstream.
func TestModelRequestBodies(t *testing.T) {
	f := newFixture(t, 0, nil)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	io.WriteString(zw, `{"model":"claude-haiku-4-5","max_tokens":1}`)
	zw.Close()
	huge := `{"model":"claude-haiku-4-5","max_tokens":1,"messages":[{"role":"user","content":"` + strings.Repeat("a", 32<<20) + `"}]}`
	tests := []struct {
		name, path, body string
		hdr              map[string]string
		status           int
		msg              string
	}{
		{"over the size bound", "/anthropic/v1/messages", huge, nil, http.StatusRequestEntityTooLarge, "larger than"},
		{"compressed", "/anthropic/v1/messages", gz.String(), map[string]string{"Content-Encoding": "gzip"}, http.StatusUnsupportedMediaType, "Content-Encoding"},
		{"not JSON", "/anthropic/v1/messages", "model=claude&max_tokens=1", nil, http.StatusBadRequest, "JSON object"},
		{"JSON array", "/openai/v1/responses", `[{"model":"gpt-5"}]`, nil, http.StatusBadRequest, "JSON object"},
		{"two documents", "/openai/v1/responses", `{"model":"gpt-5"} {"model":"o3"}`, nil, http.StatusBadRequest, "JSON object"},
		{"duplicate max_tokens", "/anthropic/v1/messages", `{"model":"claude-haiku-4-5","max_tokens":1,"max_tokens":64000}`, nil, http.StatusBadRequest, "duplicate"},
		{"duplicate through an escape", "/anthropic/v1/messages", `{"model":"claude-haiku-4-5","max_tokens":1,"max\u005ftokens":64000}`, nil, http.StatusBadRequest, "duplicate"},
		{"duplicate model", "/openai/v1/responses", `{"model":"gpt-5-nano","model":"gpt-5"}`, nil, http.StatusBadRequest, "duplicate"},
		{"stream_options not an object", "/openai/v1/chat/completions", `{"model":"gpt-4o","stream":true,"stream_options":"x"}`, nil, http.StatusBadRequest, "stream_options"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := f.anthropic.count() + f.openai.count()
			resp, body := f.do(t, "POST", tc.path, tc.hdr, tc.body)
			if resp.StatusCode != tc.status || !strings.Contains(body, tc.msg) {
				t.Fatalf("status %d (%.200s), want %d mentioning %q", resp.StatusCode, body, tc.status, tc.msg)
			}
			if f.anthropic.count()+f.openai.count() != before {
				t.Fatal("the refused call reached the upstream")
			}
		})
	}
}

// TestBudgetEveryMethod: once the budget is spent, every model call is refused, not only
// POSTs.
func TestBudgetEveryMethod(t *testing.T) {
	f := newFixture(t, 0.001, nil)
	if resp, body := f.do(t, "POST", "/anthropic/v1/messages", nil, `{"model":"claude-sonnet-4-5","max_tokens":100}`); resp.StatusCode != 200 {
		t.Fatalf("first call: %d %s", resp.StatusCode, body)
	}
	f.spent(t, 1)
	before := f.anthropic.count() + f.openai.count()
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/anthropic/v1/models", http.StatusPaymentRequired},
		{"GET", "/anthropic/v1/models/claude-sonnet-4-5", http.StatusPaymentRequired},
		{"POST", "/anthropic/v1/messages/count_tokens", http.StatusPaymentRequired},
		{"GET", "/openai/v1/models", http.StatusTooManyRequests},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			resp, body := f.do(t, tc.method, tc.path, nil, "")
			if resp.StatusCode != tc.status || !strings.Contains(body, "budget") {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, body, tc.status)
			}
		})
	}
	if f.anthropic.count()+f.openai.count() != before {
		t.Fatal("a call after the budget was spent reached the upstream")
	}
}
