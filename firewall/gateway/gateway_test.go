package gateway

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bumperdev/bumper/firewall/audit"
	"github.com/bumperdev/bumper/firewall/meter"
)

const (
	testToken    = "ghs_TESTTOKEN0123456789abcdefghijklmnop"
	testKey      = "sk-ant-api03-REALKEY-abcdefghijklmnopqrstuvwxyz"
	testOpenAI   = "sk-proj-REALOPENAIKEY-0123456789"
	testSentinel = "sk-ant-SENTINEL-not-a-real-key"
)

// recorder is a TLS upstream that remembers the headers and bodies it saw.
type recorder struct {
	mu     sync.Mutex
	seen   []http.Header
	bodies [][]byte
	h      http.HandlerFunc
	srv    *httptest.Server
}

// count is how many requests reached the upstream.
func (rc *recorder) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.seen)
}

// lastBody is the body of the last request that reached the upstream.
func (rc *recorder) lastBody(t *testing.T) []byte {
	t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.bodies) == 0 {
		t.Fatal("upstream saw no request")
	}
	return rc.bodies[len(rc.bodies)-1]
}

// set replaces how the upstream answers, for tests that need another behaviour.
func (rc *recorder) set(h http.HandlerFunc) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.h = h
}

func (rc *recorder) last(t *testing.T) http.Header {
	t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.seen) == 0 {
		t.Fatal("upstream saw no request")
	}
	return rc.seen[len(rc.seen)-1]
}

func newRecorder(t *testing.T, h http.HandlerFunc) *recorder {
	rc := &recorder{h: h}
	rc.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		rc.mu.Lock()
		hd := r.Header.Clone()
		hd.Set("X-Seen-Path", r.URL.Path+"?"+r.URL.RawQuery)
		if r.ContentLength >= 0 {
			hd.Set("X-Seen-Content-Length", strconv.FormatInt(r.ContentLength, 10))
		}
		rc.seen = append(rc.seen, hd)
		rc.bodies = append(rc.bodies, body)
		h := rc.h
		rc.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// caFile writes the test servers' CA so upstream TLS is verified, not skipped.
func caFile(t *testing.T, srv *httptest.Server) string {
	path := filepath.Join(t.TempDir(), "ca.pem")
	cert := srv.Certificate()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

type fixture struct {
	gw        *Gateway
	srv       *httptest.Server
	auditPath string
	log       *audit.Log
	meter     *meter.Meter
	anthropic *recorder
	openai    *recorder
	api       *recorder
}

func newFixture(t *testing.T, budget float64, mutate func(*Config)) *fixture {
	t.Helper()
	sse, err := os.ReadFile("testdata/tool_use_response.txt")
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{}
	f.anthropic = newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(sse)
	})
	f.openai = newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		body := `{"object":"response","model":"gpt-5","usage":{"input_tokens":100,"input_tokens_details":{"cached_tokens":0},"output_tokens":10}}`
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			// Compressed when asked, as the real API does: the meter must still read it.
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			io.WriteString(zw, body)
			zw.Close()
			return
		}
		io.WriteString(w, body)
	})
	f.api = newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"ok":true}`)
	})
	f.auditPath = filepath.Join(t.TempDir(), "audit.jsonl")
	if f.log, err = audit.Open(f.auditPath); err != nil {
		t.Fatal(err)
	}
	prices, err := meter.DefaultPrices()
	if err != nil {
		t.Fatal(err)
	}
	m, err := meter.New(prices, budget)
	if err != nil {
		t.Fatal(err)
	}
	f.meter = m
	cfg := Config{
		GitHubAPIBase: f.api.srv.URL, AnthropicBase: f.anthropic.srv.URL + "/base", OpenAIBase: f.openai.srv.URL,
		Token: testToken, AnthropicKey: testKey, OpenAIKey: testOpenAI, Repository: "o/r", RepositoryID: 123,
		CAFile: caFile(t, f.anthropic.srv), Meter: m, Audit: f.log,
		APIAllow: []string{"GET /repos/*/*/contents/**", "GET /repos/*/*/issues/*", "POST /repos/o/r/issues/*/comments", "GET /rate_limit"},
	}
	if mutate != nil {
		mutate(&cfg)
	}
	if f.gw, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	f.srv = httptest.NewServer(f.gw)
	t.Cleanup(func() { f.srv.Close(); f.gw.Close(); f.log.Close() })
	return f
}

// reply is what a test reads of a gateway's answer, whose body do has read and closed.
type reply struct {
	StatusCode int
	Header     http.Header
}

func (f *fixture) do(t *testing.T, method, path string, hdr map[string]string, body string) (reply, string) {
	t.Helper()
	req, _ := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header}, string(b)
}

func (f *fixture) auditText(t *testing.T) string {
	t.Helper()
	f.log.Flush()
	b, _ := os.ReadFile(f.auditPath)
	return string(b)
}

func TestModelGateways(t *testing.T) {
	f := newFixture(t, 0, nil)
	sse, _ := os.ReadFile("testdata/tool_use_response.txt")
	tests := []struct {
		name, path string
		hdr        map[string]string
		up         *recorder
		wantPath   string
		check      func(t *testing.T, h http.Header)
	}{
		{"anthropic x-api-key", "/anthropic/v1/messages?beta=true", map[string]string{"X-Api-Key": testSentinel, "Anthropic-Version": "2023-06-01", "X-Stainless-Helper-Method": "stream"}, f.anthropic, "/base/v1/messages?beta=true",
			func(t *testing.T, h http.Header) {
				if h.Get("X-Api-Key") != testKey || h.Get("Authorization") != "" || h.Get("Anthropic-Version") != "2023-06-01" {
					t.Fatalf("upstream headers %v", h)
				}
			}},
		{"anthropic bearer", "/anthropic/v1/messages", map[string]string{"Authorization": "Bearer " + testSentinel}, f.anthropic, "/base/v1/messages?",
			func(t *testing.T, h http.Header) {
				if h.Get("Authorization") != "Bearer "+testKey || h.Get("X-Api-Key") != "" {
					t.Fatalf("upstream headers %v", h)
				}
			}},
		{"openai", "/openai/v1/responses", map[string]string{"Authorization": "Bearer sentinel", "Cookie": "a=b", "Accept-Encoding": "gzip"}, f.openai, "/v1/responses?",
			func(t *testing.T, h http.Header) {
				if h.Get("Authorization") != "Bearer "+testOpenAI || h.Get("Cookie") != "" {
					t.Fatalf("upstream headers %v", h)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := f.do(t, "POST", tc.path, tc.hdr, `{"model":"x"}`)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			if tc.up == f.anthropic && body != string(sse) {
				t.Fatal("SSE body changed in transit")
			}
			h := tc.up.last(t)
			if got := h.Get("X-Seen-Path"); got != tc.wantPath {
				t.Fatalf("upstream path %q, want %q", got, tc.wantPath)
			}
			tc.check(t, h)
		})
	}
	// The gateway writes its audit line after the client may already have the body.
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		a := f.auditText(t)
		if strings.Contains(a, `"kind":"anthropic"`) && strings.Contains(a, "in=377 out=65") && strings.Contains(a, `"cost_usd":0.002106`) &&
			strings.Contains(a, `"kind":"openai"`) && strings.Contains(a, "model gpt-5 in=100 out=10") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("audit lacks the metered calls:\n%s", a)
		}
	}
}

func TestBudgetRefusal(t *testing.T) {
	tests := []struct {
		name, path string
		budget     float64 // already spent
		status     int
		check      func(t *testing.T, body map[string]any)
	}{
		{"anthropic", "/anthropic/v1/messages", 0.001, http.StatusPaymentRequired, func(t *testing.T, b map[string]any) {
			e, _ := b["error"].(map[string]any)
			if b["type"] != "error" || e["type"] != "billing_error" || !strings.Contains(e["message"].(string), "budget of $0.00") {
				t.Fatalf("body %v", b)
			}
		}},
		{"openai", "/openai/v1/responses", 0.0002, http.StatusTooManyRequests, func(t *testing.T, b map[string]any) {
			e, _ := b["error"].(map[string]any)
			if e["code"] != "insufficient_quota" || !strings.Contains(e["message"].(string), "budget") {
				t.Fatalf("body %v", b)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.budget, nil)
			// The run has spent its budget ($0.003 used).
			f.meter.Record(meter.Usage{Model: "claude-sonnet-4-5", Input: 1000, Complete: true})
			before := len(f.anthropic.seen) + len(f.openai.seen)
			resp, body := f.do(t, "POST", tc.path, nil, `{"model":"claude-haiku-4-5","max_tokens":1}`)
			if resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("call: %d %s", resp.StatusCode, body)
			}
			if !strings.Contains(body, "budget") || !strings.Contains(body, "is spent") {
				t.Fatalf("call: %d %s", resp.StatusCode, body)
			}
			var b map[string]any
			if err := json.Unmarshal([]byte(body), &b); err != nil {
				t.Fatalf("error body is not JSON: %s", body)
			}
			tc.check(t, b)
			if len(f.anthropic.seen)+len(f.openai.seen) != before {
				t.Fatal("refused call reached the upstream")
			}
			if !strings.Contains(f.auditText(t), `"allowed":false`) { // written before the response
				t.Fatal("refusal not audited")
			}
		})
	}
}

func TestGitHubAPIGateway(t *testing.T) {
	f := newFixture(t, 0, nil)
	tests := []struct {
		method, path string
		status       int
	}{
		{"GET", "/api/github/repos/o/r/contents/README.md", 200},
		{"HEAD", "/api/github/repos/o/r/contents/README.md?ref=main", 200},
		{"GET", "/api/github/rate_limit", 200},
		// An allowlist rule does not open a host-only write, the live issue or a
		// comment read.
		{"GET", "/api/github/repos/o/r/issues/7", 403},
		{"HEAD", "/api/github/repos/o/r/issues/7", 403},
		{"POST", "/api/github/repos/o/r/issues/7/comments", 403},
		{"GET", "/api/github/repos/o/r/issues/comments", 403},
		{"DELETE", "/api/github/repos/o/r/issues/7", 403},
		{"GET", "/api/github/repos/o/r/pulls/1", 403}, // on no rule
		{"POST", "/api/github/repos/other/r/issues/7/comments", 403},
		{"GET", "/api/github/repos/o/r/issues/7/../../../../user", 400},
		{"GET", "/api/github/repos/o/r/issues/%2e%2e/x", 400},
		{"GET", "/api/github/repos/o/r/issues%2f7", 400},
		{"GET", "/nothing/here", 404},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			resp, body := f.do(t, tc.method, tc.path, map[string]string{"Authorization": "token sentinel"}, "")
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, body, tc.status)
			}
			if tc.status == 200 {
				if got := f.api.last(t).Get("Authorization"); got != "Bearer "+testToken {
					t.Fatalf("upstream Authorization %q", got)
				}
			}
		})
	}
}

func TestUnconfiguredAndBadConfig(t *testing.T) {
	f := newFixture(t, 0, func(c *Config) { c.OpenAIBase = "" })
	if resp, body := f.do(t, "POST", "/openai/v1/responses", nil, "{}"); resp.StatusCode != 404 || !strings.Contains(body, "not configured") {
		t.Fatalf("unconfigured gateway: %d %s", resp.StatusCode, body)
	}
	a := &audit.Log{}
	bad := []Config{
		{Audit: a, AnthropicBase: "https://api.anthropic.com"},    // no key
		{Audit: a, AnthropicBase: "ftp://x", AnthropicKey: "k"},   // scheme
		{Audit: a, GitBase: "http://github.com", Token: "t"},      // token in clear
		{Audit: a, GitBase: "https://u:p@github.com", Token: "t"}, // userinfo
		{Audit: a, APIAllow: []string{"GET"}},                     // rule
		{Audit: a, APIAllow: []string{"GET /**/x"}},               // ** not last
		{Audit: a, PushRef: "bumper/1-1"},                         // not a full ref
		{Audit: a, PushRef: "refs/heads/main"},                    // not a run branch
		{Audit: a, PushRef: "refs/heads/bumper/12-0"},             // attempts start at 1
		{Audit: a, PushRef: "refs/heads/bumper/12-1/x"},           // nested
		{Audit: a, CAFile: "/nonexistent/ca.pem"},                 // CA
		{}, // no audit
	}
	for i, c := range bad {
		if _, err := New(c); err == nil {
			t.Errorf("config %d accepted", i)
		}
	}
	// A git or API gateway must know the run's repository: without it the agent would
	// read every repository the token can (any public one, forks included).
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"api without repository", Config{Audit: a, GitHubAPIBase: "https://api.github.com", Token: "t", APIAllow: []string{"GET /repos/*/*/contents/**"}}, "gateway github-api: no repository: set the run's repository (gateways.repository: owner/name)"},
		{"api without repository or rules", Config{Audit: a, GitHubAPIBase: "https://api.github.com", Token: "t"}, "no repository"},
		{"git without repository", Config{Audit: a, GitBase: "https://github.com", Token: "t"}, "gateway git: no repository"},
		{"owner only", Config{Audit: a, GitBase: "https://github.com", Token: "t", Repository: "o"}, "is not owner/name"},
		{"three parts", Config{Audit: a, GitBase: "https://github.com", Token: "t", Repository: "o/r/x"}, "is not owner/name"},
		{"git suffix", Config{Audit: a, GitBase: "https://github.com", Token: "t", Repository: "o/r.git"}, "is not owner/name"},
		{"wildcard", Config{Audit: a, GitHubAPIBase: "https://api.github.com", Token: "t", Repository: "*/*"}, "is not owner/name"},
		{"negative id", Config{Audit: a, GitHubAPIBase: "https://api.github.com", Token: "t", Repository: "o/r", RepositoryID: -1}, "negative"},
	} {
		if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
	// The model gateways alone need no repository.
	if _, err := New(Config{Audit: a, AnthropicBase: "https://api.anthropic.com", AnthropicKey: "k"}); err != nil {
		t.Errorf("model gateway alone: %v", err)
	}
}

func TestUpstreamTLSIsVerified(t *testing.T) {
	f := newFixture(t, 0, func(c *Config) { c.CAFile = "" }) // system roots do not know the test CA
	resp, body := f.do(t, "POST", "/anthropic/v1/messages", nil, "{}")
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "TLS verification") {
		t.Fatalf("unverified upstream: %d %s", resp.StatusCode, body)
	}
}
