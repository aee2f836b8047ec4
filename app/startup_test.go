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
	code  int
	n     int64
	calls atomic.Int64
}

func (f *failingFirst) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && r.URL.Path == "/app/installations" && f.calls.Add(1) <= f.n {
		return &http.Response{StatusCode: f.code, Status: http.StatusText(f.code), Request: r,
			Header: http.Header{"Content-Type": {"application/json"}},
			Body:   io.NopCloser(strings.NewReader(`{"message":"` + http.StatusText(f.code) + `"}`))}, nil
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestRebuildAtStart checks a start-up rebuild GitHub failed is tried again, /readyz
// saying why meanwhile, until it succeeds; and that one GitHub refused (a wrong private
// key's 401) ends serve at once instead of being retried for ever.
func TestRebuildAtStart(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		code int
		// n is how many answers fail: ghretry sends a request four times before it
		// gives up, so four 502s fail one rebuild.
		n         int64
		wantErr   bool
		wantCalls int64
	}{
		{"GitHub's bad minute outlasts ghretry", http.StatusBadGateway, 4, false, 5},
		{"wrong private key", http.StatusUnauthorized, 1 << 30, true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil)
			gh := &failingFirst{code: tt.code, n: tt.n}
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
					if _, body := probe(t, hs.URL+"/readyz"); len(whys) == 0 || whys[len(whys)-1] != body {
						whys = append(whys, body)
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
			if tt.wantErr {
				if code != http.StatusServiceUnavailable || !strings.Contains(body, "failed; see serve's log") {
					t.Fatalf("/readyz after a refusal: %d %q", code, body)
				}
				return
			}
			if code != http.StatusOK {
				t.Fatalf("/readyz after the retried rebuild: %d %q", code, body)
			}
			said := strings.Join(whys, "")
			if !strings.Contains(said, "failed 1 time(s), last: ") || !strings.Contains(said, "502") || !strings.Contains(said, "trying again in 300ms") {
				t.Fatalf("/readyz never said the rebuild was being tried again; it said:\n%s", said)
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
