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
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bumperdev/bumper/firewall/audit"
	"github.com/bumperdev/bumper/firewall/meter"
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
		APIAllow: []string{"GET /repos/*/*/issues/*", "* /**"}, PushRef: "refs/heads/bumper/12-1", Repository: "o/r",
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
				resp.Body.Close()
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
		{"unknown model", "/anthropic/v1/messages",
			`{"model":"mystery-9","messages":[]}`,
			func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(500)
				io.WriteString(w, "oops")
			}, false,
			func(n float64) float64 { return ((n+1000)*187.5 + 272000*600) / 1e6 }},
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
	// Spent: $0.003 of $0.001 (a call can cost more than it held only if its usage
	// passes its worst case; here the meter is charged directly).
	f.meter.Record(meter.Usage{Model: "claude-sonnet-4-5", Input: 1000, Complete: true})
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

// parallel sends the same model call n times at once, as an agent that fans out would,
// and returns the statuses and bodies.
func parallel(t *testing.T, f *fixture, n int, path, body string) ([]int, []string) {
	t.Helper()
	statuses, bodies := make([]int, n), make([]string, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			resp, err := http.Post(f.srv.URL+path, "application/json", strings.NewReader(body))
			if err != nil {
				bodies[i] = err.Error()
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			statuses[i], bodies[i] = resp.StatusCode, string(b)
		})
	}
	close(start)
	wg.Wait()
	return statuses, bodies
}

// TestParallelCallsCannotOverspend: an agent fires many calls at once against a slow
// upstream, each of which the upstream bills in full. Whatever the interleaving, the run
// never spends more than its budget: each call holds its worst case while in flight, and
// the calls that would not fit are refused, in the API's own budget error, before they
// reach the upstream.
func TestParallelCallsCannotOverspend(t *testing.T) {
	const budget, n = 1.0, 50
	tests := []struct {
		name, path, body string
		usage            string // the JSON the slow upstream answers, its usage billed in full
		refused          int    // the budget status of this API
	}{
		{"anthropic opus", "/anthropic/v1/messages",
			`{"model":"claude-opus-4-1","max_tokens":1000,"messages":[{"role":"user","content":"go"}]}`,
			`{"type":"message","model":"claude-opus-4-1-20250805","usage":{"input_tokens":1000,"output_tokens":1000}}`,
			http.StatusPaymentRequired},
		{"openai responses", "/openai/v1/responses",
			`{"model":"gpt-5","max_output_tokens":8000,"input":"go"}`,
			`{"object":"response","model":"gpt-5-2025-08-07","usage":{"input_tokens":1000,"output_tokens":8000}}`,
			http.StatusTooManyRequests},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, budget, nil)
			// The upstream answers no call until every one of the n calls is either in
			// flight (holding its worst case) or refused: all of them are decided while
			// the others are open, whatever the scheduler does.
			release := make(chan struct{})
			var together atomic.Bool
			go func() {
				defer close(release)
				for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); runtime.Gosched() {
					if s := f.meter.Summary(); s.InFlight+s.Refused == n {
						together.Store(true)
						return
					}
				}
			}()
			slow := func(w http.ResponseWriter, r *http.Request) {
				<-release
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, tc.usage)
			}
			f.anthropic.set(slow)
			f.openai.set(slow)
			statuses, bodies := parallel(t, f, n, tc.path, tc.body)
			if !together.Load() {
				t.Fatalf("the %d calls were never all in flight or refused at once: %+v", n, f.meter.Summary())
			}
			forwarded := f.anthropic.count() + f.openai.count()
			spent := f.spent(t, forwarded)
			if spent > budget {
				t.Fatalf("%d parallel calls spent $%.4f of a $%.2f budget (%d reached the upstream)", n, spent, budget, forwarded)
			}
			if forwarded == 0 {
				t.Fatal("no call was forwarded: the budget should let a few through")
			}
			refused := 0
			for i, st := range statuses {
				switch st {
				case http.StatusOK:
				case tc.refused:
					refused++
					if !strings.Contains(bodies[i], "worst case") || !strings.Contains(bodies[i], "max_") {
						t.Fatalf("refusal does not say the call's worst case and how to lower it: %s", bodies[i])
					}
				default:
					t.Fatalf("status %d: %s", st, bodies[i])
				}
			}
			if refused+forwarded != n {
				t.Fatalf("%d refused + %d forwarded != %d calls", refused, forwarded, n)
			}
			t.Logf("%d parallel calls: %d forwarded, %d refused, $%.4f spent of $%.2f", n, forwarded, refused, spent, budget)
			if s := f.meter.Summary(); s.ReservedUSD != 0 || s.InFlight != 0 {
				t.Fatalf("reservations left once every call settled: %+v", s)
			}
		})
	}
}

// TestCallOverRemainingBudgetRefused: one call whose worst case exceeds what is left of
// the budget is refused before it reaches the upstream, even if it would have been
// cheap; the refusal says what is left, the call's worst case, and to lower the cap.
func TestCallOverRemainingBudgetRefused(t *testing.T) {
	tests := []struct {
		name, path, body string
		budget, spent    float64 // spent before the call
		status           int
		says             []string
	}{
		{"opus without a cap", "/anthropic/v1/messages", `{"model":"claude-opus-4-1","messages":[{"role":"user","content":"hi"}]}`,
			1, 0, http.StatusPaymentRequired, []string{"$1.0000 left", "worst case $2.4", "32000 output tokens", "max_tokens"}},
		{"gpt-5 without a cap", "/openai/v1/responses", `{"model":"gpt-5","input":"hi"}`,
			1, 0, http.StatusTooManyRequests, []string{"$1.0000 left", "worst case $1.28", "max_output_tokens"}},
		{"cheap call, little left", "/anthropic/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":8000,"messages":[]}`,
			1, 0.95, http.StatusPaymentRequired, []string{"$0.0500 left", "worst case $0.12", "max_tokens"}},
		{"chat completions n=8", "/openai/v1/chat/completions", `{"model":"gpt-4o","n":8,"max_tokens":16000,"messages":[]}`,
			1, 0, http.StatusTooManyRequests, []string{"worst case $1.28", "max_"}},
		{"control: a capped call fits", "/anthropic/v1/messages", `{"model":"claude-opus-4-1","max_tokens":1000,"messages":[]}`,
			1, 0, http.StatusOK, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.budget, nil)
			if tc.spent > 0 {
				// $3 per million input tokens: spend exactly tc.spent.
				f.meter.Record(meter.Usage{Model: "claude-sonnet-4-5", Input: int64(tc.spent * 1e6 / 3), Complete: true})
			}
			resp, body := f.do(t, "POST", tc.path, nil, tc.body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, body, tc.status)
			}
			if tc.status == http.StatusOK {
				return
			}
			if n := f.anthropic.count() + f.openai.count(); n != 0 {
				t.Fatal("the refused call reached the upstream")
			}
			for _, s := range tc.says {
				if !strings.Contains(body, s) {
					t.Fatalf("refusal lacks %q: %s", s, body)
				}
			}
			if a := f.auditText(t); !strings.Contains(a, "worst case") || !strings.Contains(a, `"allowed":false`) {
				t.Fatalf("refusal not audited:\n%s", a)
			}
		})
	}
}

// TestReservationSettles: a call's reservation is replaced by what it cost, or released
// when it generated nothing, so the next call finds the budget it left.
func TestReservationSettles(t *testing.T) {
	// $0.10 holds one opus call capped at 1,000 output tokens (worst case ~$0.095).
	const body = `{"model":"claude-opus-4-1","max_tokens":1000,"messages":[]}`
	tests := []struct {
		name     string
		upstream http.HandlerFunc
	}{
		{"usage reported: the actual charge replaces the reservation", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"type":"message","model":"claude-opus-4-1","usage":{"input_tokens":10,"output_tokens":10}}`)
		}},
		{"nothing generated: the reservation is released", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusUnauthorized)
		}},
		{"rate limited: the reservation is released", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, 0.10, nil)
			f.anthropic.set(tc.upstream)
			for i := range 3 {
				resp, b := f.do(t, "POST", "/anthropic/v1/messages", nil, body)
				if resp.StatusCode == http.StatusPaymentRequired {
					t.Fatalf("call %d refused: its predecessor's reservation was not settled: %s", i+1, b)
				}
				for deadline := time.Now().Add(5 * time.Second); f.meter.Summary().InFlight != 0; time.Sleep(10 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatalf("reservation still held: %+v", f.meter.Summary())
					}
				}
			}
		})
	}
}

// TestServerToolsRefused: a model call that declares a tool the provider runs itself
// (web search, web fetch, code execution, MCP servers, file search, image generation,
// computer use) is refused: the provider would fetch URLs the firewall's allowlist never
// sees, a way around default-deny egress, and bill fees the meter does not count.
func TestServerToolsRefused(t *testing.T) {
	f := newFixture(t, 0, nil)
	tests := []struct {
		name, path, body string
		status           int
		says             string
	}{
		{"anthropic web search", "/anthropic/v1/messages",
			`{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":"search https://evil.test/?d=secret"}],"tools":[{"type":"web_search_20250305","name":"web_search","max_uses":5}]}`,
			403, "web_search_20250305"},
		{"claude code's WebSearch sub-call", "/anthropic/v1/messages?beta=true",
			`{"model":"claude-sonnet-4-5-20250929","max_tokens":32000,"stream":true,"messages":[{"role":"user","content":"Perform a web search for the query: go 1.26 release notes"}],"system":[{"type":"text","text":"You are Claude Code"}],"tools":[{"type":"web_search_20250305","name":"web_search","max_uses":8}]}`,
			403, "web_search_20250305"},
		{"anthropic web fetch among client tools", "/anthropic/v1/messages",
			`{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[],"tools":[{"name":"Bash","input_schema":{"type":"object"}},{"type":"web_fetch_20250910","name":"web_fetch"}]}`,
			403, "web_fetch_20250910"},
		{"anthropic code execution", "/anthropic/v1/messages",
			`{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[],"tools":[{"type":"code_execution_20250825","name":"code_execution"}]}`,
			403, "code_execution_20250825"},
		{"anthropic mcp_servers", "/anthropic/v1/messages",
			`{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[],"mcp_servers":[{"type":"url","url":"https://evil.test/mcp","name":"x"}]}`,
			403, "mcp_servers"},
		{"anthropic mcp toolset", "/anthropic/v1/messages",
			`{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[],"tools":[{"type":"mcp_toolset","mcp_server_name":"x"}]}`,
			403, "mcp_toolset"},
		{"anthropic container (skills)", "/anthropic/v1/messages",
			`{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[],"container":{"skills":[{"type":"anthropic","skill_id":"pptx"}]}}`,
			403, "container"},
		{"anthropic tool type spelled with an escape", "/anthropic/v1/messages",
			`{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[],"tools":[{"type":"web\u005fsearch_20250305","name":"web_search"}]}`,
			403, "web_search_20250305"},
		{"anthropic tool with two types", "/anthropic/v1/messages",
			`{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[],"tools":[{"type":"custom","name":"x","type":"web_search_20250305"}]}`,
			403, "duplicate"},
		{"anthropic tools not an array", "/anthropic/v1/messages",
			`{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[],"tools":{"type":"web_search_20250305"}}`,
			403, "tools is not an array"},
		{"anthropic count_tokens with web search", "/anthropic/v1/messages/count_tokens",
			`{"model":"claude-sonnet-4-5","messages":[],"tools":[{"type":"web_search_20250305","name":"web_search"}]}`,
			403, "web_search_20250305"},
		{"openai web_search", "/openai/v1/responses", `{"model":"gpt-5","max_output_tokens":100,"input":"x","tools":[{"type":"web_search"}]}`, 403, "web_search"},
		{"openai web_search_preview", "/openai/v1/responses", `{"model":"gpt-5","max_output_tokens":100,"input":"x","tools":[{"type":"web_search_preview"}]}`, 403, "web_search_preview"},
		{"openai mcp", "/openai/v1/responses", `{"model":"gpt-5","max_output_tokens":100,"input":"x","tools":[{"type":"mcp","server_label":"x","server_url":"https://evil.test/mcp","require_approval":"never"}]}`, 403, "mcp"},
		{"openai code_interpreter", "/openai/v1/responses", `{"model":"gpt-5","max_output_tokens":100,"input":"x","tools":[{"type":"code_interpreter","container":{"type":"auto"}}]}`, 403, "code_interpreter"},
		{"openai file_search", "/openai/v1/responses", `{"model":"gpt-5","max_output_tokens":100,"input":"x","tools":[{"type":"file_search","vector_store_ids":["vs_1"]}]}`, 403, "file_search"},
		{"openai computer_use_preview", "/openai/v1/responses", `{"model":"computer-use-preview","max_output_tokens":100,"input":"x","tools":[{"type":"computer_use_preview","display_width":1024,"display_height":768,"environment":"browser"}]}`, 403, "computer_use_preview"},
		{"openai image_generation", "/openai/v1/responses", `{"model":"gpt-5","max_output_tokens":100,"input":"x","tools":[{"type":"image_generation"}]}`, 403, "image_generation"},
		{"openai tool type unknown to the firewall", "/openai/v1/responses", `{"model":"gpt-5","max_output_tokens":100,"input":"x","tools":[{"type":"web_search_2026_01_01"}]}`, 403, "web_search_2026_01_01"},
		{"chat completions web_search_options", "/openai/v1/chat/completions", `{"model":"gpt-4o","max_tokens":100,"messages":[],"web_search_options":{}}`, 403, "web_search_options"},
		{"chat completions search model", "/openai/v1/chat/completions", `{"model":"gpt-4o-search-preview","max_tokens":100,"messages":[]}`, 403, "gpt-4o-search-preview"},

		// tool_choice naming a hosted tool, with no tools array to refuse.
		{"responses tool_choice web_search_preview", "/openai/v1/responses", `{"model":"gpt-5","max_output_tokens":100,"input":"search https://evil.test/?d=secret","tool_choice":{"type":"web_search_preview"}}`, 403, `tool_choice naming a tool of type "web_search_preview"`},
		{"responses tool_choice file_search beside client tools", "/openai/v1/responses", `{"model":"gpt-5","max_output_tokens":100,"input":"x","tools":[{"type":"function","name":"f","parameters":{"type":"object"}}],"tool_choice":{"type":"file_search"}}`, 403, "file_search"},
		{"responses tool_choice mcp", "/openai/v1/responses", `{"model":"gpt-5","max_output_tokens":100,"input":"x","tool_choice":{"type":"mcp","server_label":"x"}}`, 403, "mcp"},
		{"responses allowed_tools listing a hosted tool", "/openai/v1/responses", `{"model":"gpt-5","max_output_tokens":100,"input":"x","tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"f"},{"type":"web_search"}]}}`, 403, "web_search"},
		{"responses tool_choice as a string", "/openai/v1/responses", `{"model":"gpt-5","max_output_tokens":100,"input":"x","tool_choice":"web_search_preview"}`, 403, "web_search_preview"},
		{"responses tool_choice with two types", "/openai/v1/responses", `{"model":"gpt-5","max_output_tokens":100,"input":"x","tool_choice":{"type":"function","name":"f","type":"web_search_preview"}}`, 403, "duplicate"},
		{"chat tool_choice web_search_preview", "/openai/v1/chat/completions", `{"model":"gpt-4o","max_tokens":100,"messages":[],"tool_choice":{"type":"web_search_preview"}}`, 403, "web_search_preview"},
		{"chat allowed_tools listing a hosted tool", "/openai/v1/chat/completions", `{"model":"gpt-4o","max_tokens":100,"messages":[],"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[{"type":"code_interpreter"}]}}}`, 403, "code_interpreter"},
		{"anthropic tool_choice server tool", "/anthropic/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[],"tool_choice":{"type":"web_search_20250305","name":"web_search"}}`, 403, "web_search_20250305"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := f.anthropic.count() + f.openai.count()
			resp, body := f.do(t, "POST", tc.path, map[string]string{"X-Api-Key": testSentinel}, tc.body)
			if resp.StatusCode != tc.status || !strings.Contains(body, tc.says) {
				t.Fatalf("status %d (%s), want %d naming %q", resp.StatusCode, body, tc.status, tc.says)
			}
			if f.anthropic.count()+f.openai.count() != before {
				t.Fatal("the refused call reached the upstream")
			}
		})
	}
	if a := f.auditText(t); strings.Count(a, "runs at the provider") < 10 {
		t.Fatalf("server-tool refusals not audited with their reason:\n%s", a)
	}
}

// TestClientToolsPass: the harnesses' own tools, which run in the VM, still work: a
// Claude Code Messages request (testdata/claude_code_messages_request.json, rebuilt from
// published captures of Claude Code's traffic: its system blocks, cache_control, thinking,
// sixteen client tools with input_schema, tool_use and tool_result history, and its beta
// headers) and a Codex-style Responses request (function, custom and local_shell tools)
// are forwarded byte for byte.
func TestClientToolsPass(t *testing.T) {
	cc, err := os.ReadFile("testdata/claude_code_messages_request.json")
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, 5, nil)
	tests := []struct {
		name, path, body string
		hdr              map[string]string
		up               *recorder
	}{
		{"claude code", "/anthropic/v1/messages?beta=true", string(cc), map[string]string{
			"Anthropic-Beta":    "claude-code-20250219,interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14",
			"Anthropic-Version": "2023-06-01", "X-App": "cli", "User-Agent": "claude-cli/2.0.36 (external, cli)",
			"Anthropic-Dangerous-Direct-Browser-Access": "true", "X-Stainless-Helper-Method": "stream", "X-Api-Key": testSentinel,
		}, f.anthropic},
		{"anthropic-defined client tools", "/anthropic/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":1000,"messages":[],"tools":[{"type":"bash_20250124","name":"bash"},{"type":"text_editor_20250728","name":"str_replace_based_edit_tool"},{"type":"custom","name":"x","input_schema":{"type":"object"}},{"type":"memory_20250818","name":"memory"}],"service_tier":"standard_only"}`, nil, f.anthropic},
		{"codex", "/openai/v1/responses", `{"model":"gpt-5-codex","instructions":"You are Codex.","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"fix it"}]}],"tools":[{"type":"function","name":"shell","description":"Runs a shell command","strict":false,"parameters":{"type":"object","properties":{"command":{"type":"array","items":{"type":"string"}}},"required":["command"]}},{"type":"custom","name":"apply_patch","description":"Apply a patch","format":{"type":"grammar","syntax":"lark","definition":"start: patch"}},{"type":"local_shell"}],"tool_choice":"auto","parallel_tool_calls":false,"reasoning":{"effort":"medium","summary":"auto"},"store":false,"stream":true,"include":["reasoning.encrypted_content"],"max_output_tokens":32000,"service_tier":"auto"}`, nil, f.openai},
		{"tool_choice naming client tools", "/anthropic/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[],"tools":[{"name":"Bash","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"Bash","disable_parallel_tool_use":true}}`, nil, f.anthropic},
		{"responses tool_choice function and allowed_tools", "/openai/v1/responses", `{"model":"gpt-5-codex","max_output_tokens":100,"input":"x","tools":[{"type":"function","name":"shell","parameters":{"type":"object"}},{"type":"local_shell"}],"tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"shell"},{"type":"local_shell"}]}}`, nil, f.openai},
		{"chat completions function tools, flex tier", "/openai/v1/chat/completions", `{"model":"gpt-4o","max_tokens":100,"messages":[],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":{"type":"function","function":{"name":"f"}},"service_tier":"flex"}`, nil, f.openai},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f.openai.set(openAIChat)
			if tc.path == "/openai/v1/responses" {
				f.openai.set(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "application/json")
					io.WriteString(w, `{"object":"response","model":"gpt-5-codex","usage":{"input_tokens":100,"output_tokens":10}}`)
				})
			}
			resp, body := f.do(t, "POST", tc.path, tc.hdr, tc.body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			if got := string(tc.up.lastBody(t)); got != tc.body && !strings.Contains(tc.path, "chat") {
				t.Fatalf("body changed in transit:\n%.300s", got)
			}
		})
	}
}

// TestDearerServiceRefused: a call that asks for a dearer service than the price table
// prices (OpenAI's priority or scale tier, Anthropic's 1M-token context beta, billed at
// long-context rates) is refused with 403 and the reason; the standard and cheaper tiers
// pass.
func TestDearerServiceRefused(t *testing.T) {
	f := newFixture(t, 0, nil)
	tests := []struct {
		name, path, body string
		hdr              []string // header lines, name: value
		status           int
		says             string
	}{
		{"openai priority", "/openai/v1/responses", `{"model":"gpt-5","max_output_tokens":10,"input":"x","service_tier":"priority"}`, nil, 403, "priority"},
		{"openai scale", "/openai/v1/chat/completions", `{"model":"gpt-4o","max_tokens":10,"messages":[],"service_tier":"scale"}`, nil, 403, "scale"},
		{"openai unknown tier", "/openai/v1/responses", `{"model":"gpt-5","max_output_tokens":10,"input":"x","service_tier":"turbo"}`, nil, 403, "turbo"},
		{"openai tier not a string", "/openai/v1/responses", `{"model":"gpt-5","max_output_tokens":10,"input":"x","service_tier":["priority"]}`, nil, 403, "service_tier"},
		{"anthropic priority", "/anthropic/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[],"service_tier":"priority"}`, nil, 403, "priority"},
		{"1M context beta", "/anthropic/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[]}`,
			[]string{"anthropic-beta: context-1m-2025-08-07"}, 403, "context-1m-2025-08-07"},
		{"1M context beta among others", "/anthropic/v1/messages?beta=true", `{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[]}`,
			[]string{"anthropic-beta: claude-code-20250219, Context-1M-2025-08-07 ,interleaved-thinking-2025-05-14"}, 403, "Context-1M-2025-08-07"},
		{"1M context beta on a second header line", "/anthropic/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[]}`,
			[]string{"anthropic-beta: claude-code-20250219", "anthropic-beta: context-1m-2025-08-07"}, 403, "[long-context]"},
		{"1M context beta on count_tokens", "/anthropic/v1/messages/count_tokens", `{"model":"claude-sonnet-4-5","messages":[]}`,
			[]string{"anthropic-beta: context-1m-2025-08-07"}, 403, "[long-context]"},
		{"control: openai default tier", "/openai/v1/responses", `{"model":"gpt-5","max_output_tokens":10,"input":"x","service_tier":"default"}`, nil, 200, ""},
		{"control: openai flex tier", "/openai/v1/responses", `{"model":"gpt-5","max_output_tokens":10,"input":"x","service_tier":"flex"}`, nil, 200, ""},
		{"control: tier null", "/openai/v1/responses", `{"model":"gpt-5","max_output_tokens":10,"input":"x","service_tier":null}`, nil, 200, ""},
		{"control: anthropic auto", "/anthropic/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[],"service_tier":"auto"}`,
			[]string{"anthropic-beta: claude-code-20250219,interleaved-thinking-2025-05-14"}, 200, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := f.anthropic.count() + f.openai.count()
			req, _ := http.NewRequest("POST", f.srv.URL+tc.path, strings.NewReader(tc.body))
			for _, h := range tc.hdr {
				k, v, _ := strings.Cut(h, ": ")
				req.Header.Add(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.says) {
				t.Fatalf("status %d (%s), want %d naming %q", resp.StatusCode, b, tc.status, tc.says)
			}
			if reached := f.anthropic.count() + f.openai.count(); tc.status != 200 && reached != before {
				t.Fatal("the refused call reached the upstream")
			}
		})
	}
}

// TestDoubleEncodingRefused: %25 (an encoded '%', so a second decoding) is refused on
// every gateway path with 400, before routing.
func TestDoubleEncodingRefused(t *testing.T) {
	f := newFixture(t, 0, func(c *Config) { c.APIAllow = []string{"* /**"} })
	for _, tc := range []struct{ method, path string }{
		{"GET", "/api/github/repos/o/r/issues/7/%2563omments"},
		{"GET", "/api/github/repos/o/r/contents/%252e%252e/secret"},
		{"POST", "/anthropic/v1/%256dessages"},
		{"POST", "/openai/v1/responses%25"},
		{"GET", "/git/o/r.git/info/refs%2525?service=git-upload-pack"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			resp, body := f.do(t, tc.method, tc.path, nil, `{"model":"gpt-5"}`)
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "%25") {
				t.Fatalf("status %d (%s), want 400 naming %%25", resp.StatusCode, body)
			}
		})
	}
	if n := f.api.count() + f.anthropic.count() + f.openai.count(); n != 0 {
		t.Fatalf("%d double-encoded requests were forwarded", n)
	}
}

// TestURLSourcesRefused: an agent asks the provider to fetch a URL for it, through an
// image, document, file or audio source given as a URL, wherever content goes (user
// messages, tool results, system blocks, nested documents, Responses input and function
// outputs, Chat Completions parts). The provider would fetch it from its own network,
// which the allowlist never sees: each is refused with 403 naming the block and why,
// audited, and never reaches the API. Inline content passes (TestInlineSourcesPass). A
// stored prompt, whose variables are content too, is refused whole
// (TestToolDeclarationsRefused).
func TestURLSourcesRefused(t *testing.T) {
	f := newFixture(t, 0, nil)
	const msgs = `{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[%s]}`
	anth := func(content string) string { return fmt.Sprintf(msgs, `{"role":"user","content":[`+content+`]}`) }
	tests := []struct {
		name, path, body string
		says             string // where, in the refusal
	}{
		{"anthropic image url", "/anthropic/v1/messages",
			anth(`{"type":"text","text":"describe"},{"type":"image","source":{"type":"url","url":"https://evil.test/x.png?d=secret"}}`),
			`messages[0].content[1].source.url (in a block of type "image")`},
		{"anthropic document url", "/anthropic/v1/messages",
			anth(`{"type":"document","source":{"type":"url","url":"https://evil.test/report.pdf"}}`), `messages[0].content[0].source.url (in a block of type "document")`},
		{"plain http, upper-case scheme", "/anthropic/v1/messages",
			anth(`{"type":"image","source":{"type":"url","url":"HTTP://evil.test/x.png"}}`), "messages[0].content[0].source.url"},
		{"url source inside a tool result", "/anthropic/v1/messages",
			fmt.Sprintf(msgs, `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"here"},{"type":"image","source":{"type":"url","url":"https://evil.test/leak?k=v"}}]}]}`),
			`messages[0].content[0].content[1].source.url (in a block of type "image")`},
		{"url source in system blocks", "/anthropic/v1/messages",
			`{"model":"claude-sonnet-4-5","max_tokens":100,"system":[{"type":"text","text":"x"},{"type":"document","source":{"type":"url","url":"https://evil.test/sys.pdf"}}],"messages":[]}`,
			"system[1].source.url"},
		{"url nested in a content document", "/anthropic/v1/messages",
			anth(`{"type":"document","source":{"type":"content","content":[{"type":"text","text":"a"},{"type":"image","source":{"type":"url","url":"https://evil.test/n.png"}}]}}`),
			"messages[0].content[0].source.content[1].source.url"},
		{"url given twice, data first", "/anthropic/v1/messages",
			anth(`{"type":"image","source":{"type":"url","url":"data:image/png;base64,iVBORw0KGgo=","url":"https://evil.test/2.png"}}`),
			"source.url"},
		{"url source on count_tokens", "/anthropic/v1/messages/count_tokens",
			`{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://evil.test/c.png"}}]}]}`,
			"source.url"},
		{"responses input_image url", "/openai/v1/responses",
			`{"model":"gpt-5","max_output_tokens":100,"input":[{"role":"user","content":[{"type":"input_text","text":"what is this"},{"type":"input_image","image_url":"https://evil.test/i.png"}]}]}`,
			`input[0].content[1].image_url (in a block of type "input_image")`},
		{"responses input_file url", "/openai/v1/responses",
			`{"model":"gpt-5","max_output_tokens":100,"input":[{"type":"message","role":"user","content":[{"type":"input_file","file_url":"https://evil.test/f.pdf"}]}]}`,
			`input[0].content[0].file_url (in a block of type "input_file")`},
		{"responses input_file data that is a url", "/openai/v1/responses",
			`{"model":"gpt-5","max_output_tokens":100,"input":[{"role":"user","content":[{"type":"input_file","filename":"f.pdf","file_data":"https://evil.test/f.pdf"}]}]}`,
			"input[0].content[0].file_data"},
		{"responses function output with an image url", "/openai/v1/responses",
			`{"model":"gpt-5","max_output_tokens":100,"input":[{"type":"function_call_output","call_id":"c1","output":[{"type":"input_image","image_url":"https://evil.test/o.png"}]}]}`,
			"input[0].output[0].image_url"},
		{"chat image_url part", "/openai/v1/chat/completions",
			`{"model":"gpt-4o","max_tokens":100,"messages":[{"role":"user","content":[{"type":"text","text":"x"},{"type":"image_url","image_url":{"url":"https://evil.test/c.png","detail":"low"}}]}]}`,
			`messages[0].content[1].image_url.url (in a block of type "image_url")`},
		{"chat input_audio url", "/openai/v1/chat/completions",
			`{"model":"gpt-4o","max_tokens":100,"messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"url":"https://evil.test/a.wav","format":"wav"}}]}]}`,
			"messages[0].content[0].input_audio.url"},
		{"chat input_audio data that is a url", "/openai/v1/chat/completions",
			`{"model":"gpt-4o","max_tokens":100,"messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"https://evil.test/a.wav","format":"wav"}}]}]}`,
			"messages[0].content[0].input_audio.data"},
		{"chat file url", "/openai/v1/chat/completions",
			`{"model":"gpt-4o","max_tokens":100,"messages":[{"role":"user","content":[{"type":"file","file":{"filename":"f.pdf","file_data":"https://evil.test/f.pdf"}}]}]}`,
			"messages[0].content[0].file.file_data"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := f.anthropic.count() + f.openai.count()
			resp, body := f.do(t, "POST", tc.path, map[string]string{"X-Api-Key": testSentinel}, tc.body)
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "[url-source]") || !strings.Contains(body, tc.says) {
				t.Fatalf("status %d (%s), want 403 [url-source] naming %s", resp.StatusCode, body, tc.says)
			}
			if !strings.Contains(body, "evil.test") || !strings.Contains(body, "allowlist never sees") {
				t.Fatalf("refusal %q does not name the URL and why", body)
			}
			if f.anthropic.count()+f.openai.count() != before {
				t.Fatal("the refused call reached the upstream")
			}
		})
	}
	if a := f.auditText(t); strings.Count(a, "[url-source]") != len(tests) {
		t.Fatalf("URL-source refusals not audited with their reason:\n%s", a)
	}
}

// TestInlineSourcesPass: content given inline (base64 sources, data: URLs, file ids, a
// text block or a tool call that mentions a URL, a schema's "$schema", a search result's
// source) reaches the API unchanged.
func TestInlineSourcesPass(t *testing.T) {
	f := newFixture(t, 5, nil)
	f.openai.set(openAIChat)
	tests := []struct{ name, path, body string }{
		{"anthropic base64 image and pdf", "/anthropic/v1/messages",
			`{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0xLjQ="}},{"type":"document","source":{"type":"text","media_type":"text/plain","data":"see https://example.com for more"}},{"type":"image","source":{"type":"file","file_id":"file_011"}},{"type":"text","text":"fetch https://example.com/x.png yourself"}]}]}`},
		{"anthropic tool call and result around a URL", "/anthropic/v1/messages",
			`{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"WebFetch","input":{"url":"https://go.dev/doc","prompt":"summarise","source":{"type":"url","url":"https://go.dev/x.png"}}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"https://go.dev/doc says…"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},{"type":"search_result","source":"https://go.dev/doc","title":"Go","content":[{"type":"text","text":"x"}]}]}]}],"tools":[{"name":"WebFetch","input_schema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"url":{"type":"string","format":"uri"}}}}]}`},
		{"responses data url image and inline file", "/openai/v1/responses",
			`{"model":"gpt-5","max_output_tokens":100,"input":[{"role":"user","content":[{"type":"input_text","text":"see https://example.com"},{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo="},{"type":"input_file","filename":"a.pdf","file_data":"data:application/pdf;base64,JVBERi0xLjQ="},{"type":"input_file","file_id":"file-1"},{"type":"input_image","file_id":"file-2"}]},{"type":"function_call","call_id":"c1","name":"fetch","arguments":"{\"image_url\":\"https://example.com/x.png\"}"},{"type":"custom_tool_call","call_id":"c2","name":"apply_patch","input":"*** Begin Patch\n+https://example.com\n*** End Patch"}]}`},
		{"chat data url image and base64 audio", "/openai/v1/chat/completions",
			`{"model":"gpt-4o","max_tokens":100,"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/4AAQ","detail":"low"}},{"type":"input_audio","input_audio":{"data":"UklGRiQAAABXQVZF","format":"wav"}},{"type":"file","file":{"filename":"a.pdf","file_data":"data:application/pdf;base64,JVBERi0xLjQ="}},{"type":"text","text":"https://example.com"}]}]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if strings.Contains(tc.path, "responses") {
				f.openai.set(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "application/json")
					io.WriteString(w, `{"object":"response","model":"gpt-5","usage":{"input_tokens":10,"output_tokens":1}}`)
				})
			} else {
				f.openai.set(openAIChat)
			}
			resp, body := f.do(t, "POST", tc.path, map[string]string{"X-Api-Key": testSentinel}, tc.body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			up := f.anthropic
			if strings.HasPrefix(tc.path, "/openai") {
				up = f.openai
			}
			if got := string(up.lastBody(t)); got != tc.body {
				t.Fatalf("body changed in transit:\n%.300s", got)
			}
		})
	}
}
