package faults

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestRetryAfterCountsFromTheWrite: on a busy host the client can read a limit's answer
// before the emulator notes it was answered. A client that waits exactly Retry-After from
// when it read the answer is not early; one that comes sooner is.
func TestRetryAfterCountsFromTheWrite(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	seed := uint64(1)
	f, err := New(&Config{Seed: &seed, REST: []RESTRule{{Route: "/repos/*/*/git/refs", Methods: []string{"POST"}, SecondaryRateLimit: 1, RetryAfter: 2}}},
		Options{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	post := func() Decision {
		r := httptest.NewRequest("POST", "/repos/a/b/git/refs", nil)
		r.Header.Set("Authorization", "token ghs_one")
		return f.Decide(r, "POST", "/repos/{owner}/{repo}/git/refs")
	}
	limited := post()
	if limited.Fault == nil {
		t.Fatal("no limit decided")
	}
	r := httptest.NewRequest("POST", "/repos/a/b/git/refs", nil)
	r.Header.Set("Authorization", "token ghs_one")
	f.Writing(r, limited.Fault) // the client reads the answer from here on
	now = now.Add(5 * time.Millisecond)
	f.Answered(r, limited.Fault, true) // the emulator's goroutine got round to it
	now = now.Add(2*time.Second - 5*time.Millisecond)
	post() // exactly Retry-After after the client could read the answer
	if got := f.EarlyRetries(); got != 0 {
		t.Fatalf("a request Retry-After after the answer was written counted as early: %+v", f.EarlyRetryLog())
	}
}

// TestRequestsInFlightWhenTheLimitWasWritten: a client's requests on other connections
// may have been sent before it read a limit's answer, and reach the emulator just after
// the answer was written (2 ms after, in CI under -race). They are not early; a request
// on the limited request's own connection is (HTTP/1.1: its client had read the answer),
// and so is one on another connection once the answer has had time to arrive.
func TestRequestsInFlightWhenTheLimitWasWritten(t *testing.T) {
	for _, c := range []struct {
		name  string
		conn  string
		after time.Duration
		early bool
	}{
		{"another connection, 2 ms after", "127.0.0.1:40002", 2 * time.Millisecond, false},
		{"another connection, 99 ms after", "127.0.0.1:40002", 99 * time.Millisecond, false},
		{"the same connection, 1 ms after", "127.0.0.1:40001", time.Millisecond, true},
		{"another connection, 150 ms after", "127.0.0.1:40002", 150 * time.Millisecond, true},
		{"another connection, Retry-After after", "127.0.0.1:40002", 2 * time.Second, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
			seed := uint64(1)
			f, err := New(&Config{Seed: &seed, REST: []RESTRule{{Route: "/repos/*/*/pulls/*", Methods: []string{"GET"}, SecondaryRateLimit: 1, RetryAfter: 2}}},
				Options{Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			get := func(conn string) (*http.Request, Decision) {
				r := httptest.NewRequest("GET", "/repos/a/b/pulls/2", nil)
				r.Header.Set("Authorization", "token ghs_one")
				r.RemoteAddr = conn
				return r, f.Decide(r, "GET", "/repos/{owner}/{repo}/pulls/{pull_number}")
			}
			r, limited := get("127.0.0.1:40001")
			if limited.Fault == nil {
				t.Fatal("no limit decided")
			}
			f.Writing(r, limited.Fault)
			f.Answered(r, limited.Fault, true)
			now = now.Add(c.after)
			get(c.conn)
			if got := f.EarlyRetries() == 1; got != c.early {
				t.Fatalf("early = %v, want %v: %+v", got, c.early, f.EarlyRetryLog())
			}
		})
	}
}
