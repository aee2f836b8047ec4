package faults

import (
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
