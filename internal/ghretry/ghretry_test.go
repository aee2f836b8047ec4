package ghretry

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// github is a test server that answers each request with the next of its scripted
// statuses (then 200), and notes when each came and with which token.
type github struct {
	mu      sync.Mutex
	answers []func(w http.ResponseWriter)
	got     []seen
}

type seen struct {
	at     time.Time
	method string
	auth   string
	body   string
}

func (g *github) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	g.mu.Lock()
	g.got = append(g.got, seen{time.Now(), r.Method, r.Header.Get("Authorization"), string(body)})
	var next func(http.ResponseWriter)
	if len(g.answers) > 0 {
		next, g.answers = g.answers[0], g.answers[1:]
	}
	g.mu.Unlock()
	if next != nil {
		next(w)
		return
	}
	_, _ = io.WriteString(w, `{"ok":true}`)
}

func status(code int, body string, headers ...string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

const secondary = `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}`

func TestTransport(t *testing.T) {
	for _, tc := range []struct {
		name    string
		method  string
		answers []func(http.ResponseWriter)
		want    int // the status the caller sees
		sent    int // requests GitHub received
		waited  time.Duration
	}{
		{"a GET repeated after a 502", http.MethodGet, []func(http.ResponseWriter){status(502, `{"message":"Server Error"}`)}, 200, 2, 0},
		{"a PATCH repeated after two 503s", http.MethodPatch, []func(http.ResponseWriter){status(503, "busy"), status(503, "busy")}, 200, 3, 0},
		{"a POST not repeated after a 502: it may have been done", http.MethodPost, []func(http.ResponseWriter){status(502, "x")}, 502, 1, 0},
		{"adding labels repeated after a 503: adding them twice changes nothing", http.MethodPost, []func(http.ResponseWriter){status(503, "x")}, 200, 2, 0},
		{"creating a blob repeated after a 502: it is named by its content", http.MethodPost, []func(http.ResponseWriter){status(502, "x")}, 200, 2, 0},
		{"a POST repeated after a secondary rate limit, not before its Retry-After", http.MethodPost,
			[]func(http.ResponseWriter){status(403, secondary, "Retry-After", "1")}, 200, 2, time.Second},
		{"a 429 waited out", http.MethodGet, []func(http.ResponseWriter){status(429, secondary, "Retry-After", "1")}, 200, 2, time.Second},
		{"a secondary rate limit without Retry-After beyond the cap goes back to the caller", http.MethodGet,
			[]func(http.ResponseWriter){status(403, secondary)}, 403, 1, 0},
		{"a 403 that is a refusal is not repeated", http.MethodGet,
			[]func(http.ResponseWriter){status(403, `{"message":"Resource not accessible by integration"}`)}, 403, 1, 0},
		{"the attempts end", http.MethodGet, []func(http.ResponseWriter){status(502, "a"), status(502, "b"), status(502, "c"), status(502, "d")}, 502, 3, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &github{answers: tc.answers}
			srv := httptest.NewServer(g)
			defer srv.Close()
			c := &http.Client{Transport: New(nil, WithAttempts(3), WithBackoff(10*time.Millisecond), WithMaxWait(5*time.Second))}
			path := "/repos/o/r/issues"
			switch {
			case strings.HasPrefix(tc.name, "adding labels"):
				path = "/api/v3/repos/o/r/issues/12/labels"
			case strings.HasPrefix(tc.name, "creating a blob"):
				path = "/repos/o/r/git/blobs"
			}
			req, _ := http.NewRequest(tc.method, srv.URL+path, strings.NewReader(`{"title":"t"}`))
			req.Header.Set("Authorization", "token one")
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want || len(g.got) != tc.sent {
				t.Fatalf("status %d after %d requests, want %d after %d (%s)", resp.StatusCode, len(g.got), tc.want, tc.sent, body)
			}
			for _, s := range g.got {
				if s.body != `{"title":"t"}` {
					t.Errorf("a repeated request's body is %q", s.body)
				}
			}
			if tc.waited > 0 {
				if gap := g.got[1].at.Sub(g.got[0].at); gap < tc.waited {
					t.Errorf("repeated %v after a Retry-After of %v", gap, tc.waited)
				}
			}
			if tc.want == 403 && !strings.Contains(string(body), "message") {
				t.Errorf("the caller lost the refusal's body: %q", body)
			}
		})
	}
}

// TestRateLimitHoldsTheCredential: after a secondary rate limit, no request of that
// token reaches GitHub before its Retry-After, not even another caller's; another
// token's requests are not held.
func TestRateLimitHoldsTheCredential(t *testing.T) {
	g := &github{answers: []func(http.ResponseWriter){status(403, secondary, "Retry-After", "3")}}
	srv := httptest.NewServer(g)
	defer srv.Close()
	tr := New(nil, WithAttempts(1))
	get := func(token string) int {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/x", nil)
		req.Header.Set("Authorization", "token "+token)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get("one"); code != 403 {
		t.Fatalf("first answer %d", code)
	}
	limitedAt := time.Now()
	if code := get("two"); code != 200 {
		t.Fatalf("another token's request: %d", code)
	}
	if code := get("one"); code != 200 {
		t.Fatalf("after the wait: %d", code)
	}
	if gap := g.got[2].at.Sub(limitedAt); gap < 2900*time.Millisecond {
		t.Errorf("the limited token's next request came %v after its Retry-After of 3s", gap)
	}
	if gap := g.got[1].at.Sub(limitedAt); gap >= 2900*time.Millisecond {
		t.Errorf("another token was held %v", gap)
	}
}

// TestWaitEndsWithTheContext: a caller that gives up is not kept waiting for GitHub.
func TestWaitEndsWithTheContext(t *testing.T) {
	g := &github{answers: []func(http.ResponseWriter){status(429, secondary, "Retry-After", "30")}}
	srv := httptest.NewServer(g)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/x", nil)
	resp, err := New(nil).RoundTrip(req)
	if resp != nil {
		resp.Body.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "rate limit") {
		t.Fatalf("err %v, want the wait's end", err)
	}
}

// TestHostileWaitDoesNotHang: an answer (GitHub's, or anything between) that asks for a
// wait of years, or one so long that counting it in nanoseconds overflows, must not
// hold the credential's later requests for ever: a serve handler's context has no
// deadline, so such a hold would keep a worker until serve restarts. Past the transport's
// own patience the caller hears at once that GitHub holds the credential, and GitHub
// hears nothing from it.
func TestHostileWaitDoesNotHang(t *testing.T) {
	for _, tc := range []struct {
		name    string
		headers []string
	}{
		{"a Retry-After of 30 years", []string{"Retry-After", "1000000000"}},
		{"a Retry-After that overflows a Duration", []string{"Retry-After", "10000000000"}},
		{"a primary limit reset in 30 years", []string{"X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", "4000000000"}},
		{"a primary limit reset past the end of time", []string{"X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", "9223372036854775807"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &github{answers: []func(http.ResponseWriter){status(403, secondary, tc.headers...)}}
			srv := httptest.NewServer(g)
			defer srv.Close()
			tr := New(nil, WithAttempts(3), WithBackoff(10*time.Millisecond), WithMaxWait(2*time.Second))
			send := func() (int, error) {
				req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL+"/x", nil)
				req.Header.Set("Authorization", "token one")
				resp, err := tr.RoundTrip(req)
				if err != nil {
					return 0, err
				}
				resp.Body.Close()
				return resp.StatusCode, nil
			}
			if code, err := send(); err != nil || code != 403 {
				t.Fatalf("the first answer: %d %v, want GitHub's 403 back", code, err)
			}
			done := make(chan error, 1)
			go func() { _, err := send(); done <- err }()
			select {
			case err := <-done:
				if !errors.Is(err, ErrHeld) {
					t.Fatalf("the next request: %v, want ErrHeld", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the credential's next request hangs")
			}
			g.mu.Lock()
			defer g.mu.Unlock()
			if len(g.got) != 1 {
				t.Fatalf("GitHub got %d requests of a held credential, want 1", len(g.got))
			}
		})
	}
}

// jwt is an App JWT as ghinstallation signs one (the signature is not read here).
func jwt(iss string, iat int) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256","typ":"JWT"}`)) + "." +
		enc([]byte(fmt.Sprintf(`{"iat":%d,"exp":%d,"iss":%s}`, iat, iat+600, iss))) + "." + enc([]byte("sig"))
}

// TestAppJWTsShareOneHold: ghinstallation signs a new JWT every few seconds, so a limit
// GitHub put on the App (listing its installations, minting tokens) must hold the App's
// next JWT too, not only the one that met it; another App's is not held. The caller
// learns until when.
func TestAppJWTsShareOneHold(t *testing.T) {
	g := &github{answers: []func(http.ResponseWriter){status(403, secondary, "Retry-After", "100")}}
	srv := httptest.NewServer(g)
	defer srv.Close()
	tr := New(nil, WithAttempts(1), WithMaxWait(time.Second))
	get := func(auth string) (int, error) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/app/installations", nil)
		req.Header.Set("Authorization", auth)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	start := time.Now()
	if code, err := get("Bearer " + jwt("12345", 1)); code != 403 || err != nil {
		t.Fatalf("first answer %d %v", code, err)
	}
	for _, tc := range []struct {
		name, auth string
		held       bool
	}{
		{"the App's next JWT", "Bearer " + jwt("12345", 2), true},
		{"the App's JWT naming it by client ID", "Bearer " + jwt(`"Iv1.12345"`, 3), false},
		{"another App's JWT", "Bearer " + jwt("999", 2), false},
		{"an installation token", "token ghs_abc", false},
		{"a bearer that is no JWT", "Bearer a.b", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, err := get(tc.auth)
			var held *HeldError
			if tc.held != errors.As(err, &held) || (!tc.held && (err != nil || code != 200)) {
				t.Fatalf("answer %d, err %v; want held: %v", code, err, tc.held)
			}
			if tc.held && (!errors.Is(err, ErrHeld) || held.Until.Before(start.Add(99*time.Second))) {
				t.Fatalf("held until %v, want about 100 s after %v", held.Until, start)
			}
		})
	}
	if len(g.got) != 5 {
		t.Fatalf("GitHub heard %d requests, want 5 (the held one never sent)", len(g.got))
	}
}
