package app

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// failingFirst answers GitHub's list of the App's installations with code the first n
// times, as GitHub does in a bad minute (or always, for a wrong key); every other
// request goes to the emulator.
type failingFirst struct {
	code    int
	headers []string // name, value, …
	n       int64
	calls   atomic.Int64
}

func (f *failingFirst) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && r.URL.Path == "/app/installations" && f.calls.Add(1) <= f.n {
		h := http.Header{"Content-Type": {"application/json"}}
		for i := 0; i+1 < len(f.headers); i += 2 {
			h.Set(f.headers[i], f.headers[i+1])
		}
		msg := http.StatusText(f.code)
		if f.code == http.StatusForbidden {
			msg = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
		}
		return &http.Response{StatusCode: f.code, Status: http.StatusText(f.code), Request: r, Header: h,
			Body: io.NopCloser(strings.NewReader(`{"message":"` + msg + `"}`))}, nil
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestRebuildAtStart checks a start-up rebuild GitHub failed is tried again, /readyz
// saying why meanwhile, until it succeeds, and not before a rate limit's Retry-After;
// and that one GitHub refused (a wrong private key's 401) ends serve at once instead of
// being retried for ever.
func TestRebuildAtStart(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		code int
		// n is how many answers fail: ghretry sends a request four times before it
		// gives up, so four 502s fail one rebuild.
		n       int64
		headers []string
		// stopOn stops serve once /readyz says it.
		stopOn    string
		wantErr   bool
		wantCalls int64
		wantSaid  []string
	}{
		{name: "GitHub's bad minute outlasts ghretry", code: http.StatusBadGateway, n: 4, wantCalls: 5,
			wantSaid: []string{"failed 1 time(s), last: ", "502", "trying again in 300ms"}},
		// Past ghretry's patience (90 s), the wait is the rebuild's to keep: GitHub
		// hears nothing for 100 s, not in 300 ms.
		{name: "a secondary rate limit's Retry-After", code: http.StatusForbidden, n: 1 << 30, headers: []string{"Retry-After", "100"},
			stopOn: "trying again in 1m40s", wantErr: true, wantCalls: 1, wantSaid: []string{"secondary rate limit", "trying again in 1m40s"}},
		{name: "wrong private key", code: http.StatusUnauthorized, n: 1 << 30, wantErr: true, wantCalls: 1,
			wantSaid: []string{"failed; see serve's log"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil)
			gh := &failingFirst{code: tt.code, n: tt.n, headers: tt.headers}
			srv, err := New(h.ctx, h.cfg, Options{Transport: gh})
			if err != nil {
				t.Fatal(err)
			}
			srv.rebuildWait = 300 * time.Millisecond
			hs := httptest.NewServer(srv.Handler())
			defer hs.Close()
			ctx, cancel := context.WithTimeout(h.ctx, time.Minute)
			defer cancel()
			done := make(chan error, 1)
			go func() { _, err := srv.rebuildAtStart(ctx); done <- err }()
			var whys []string
			for err = nil; ; {
				select {
				case err = <-done:
				case <-time.After(20 * time.Millisecond):
					_, body := probe(t, hs.URL+"/readyz")
					if len(whys) == 0 || whys[len(whys)-1] != body {
						whys = append(whys, body)
					}
					if tt.stopOn != "" && strings.Contains(body, tt.stopOn) {
						cancel()
					}
					continue
				}
				break
			}
			if (err != nil) != tt.wantErr {
				t.Fatalf("rebuildAtStart: %v, want an error: %v", err, tt.wantErr)
			}
			if got := gh.calls.Load(); got != tt.wantCalls {
				t.Fatalf("GitHub was asked for the installations %d times, want %d", got, tt.wantCalls)
			}
			code, body := probe(t, hs.URL+"/readyz")
			if (code == http.StatusOK) == tt.wantErr {
				t.Fatalf("/readyz at the end: %d %q", code, body)
			}
			said := strings.Join(append(whys, body), "")
			for _, w := range tt.wantSaid {
				if !strings.Contains(said, w) {
					t.Fatalf("/readyz never said %q; it said:\n%s", w, said)
				}
			}
		})
	}
}

func probe(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}
