package rest

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/bumperdev/bumper/ghemu/state"
)

// rateWindow is one credential's hourly budget, as GitHub's core resource counts it.
type rateWindow struct {
	limit int
	used  int
	reset time.Time
}

func (rw rateWindow) setHeaders(h http.Header) {
	h.Set("X-RateLimit-Limit", strconv.Itoa(rw.limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(max(0, rw.limit-rw.used)))
	h.Set("X-RateLimit-Used", strconv.Itoa(rw.used))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(rw.reset.Unix(), 10))
	h.Set("X-RateLimit-Resource", "core")
}

// anonymousLimit is GitHub's hourly budget for unauthenticated callers.
const anonymousLimit = 60

// limiter counts each credential's requests. Its lock guards the windows only.
type limiter struct {
	limit int
	now   func() time.Time

	mu      sync.Mutex
	windows map[string]*rateWindow
}

func newLimiter(limit int, now func() time.Time) *limiter {
	if limit == 0 {
		limit = 5000
	}
	if now == nil {
		now = time.Now
	}
	return &limiter{limit: limit, now: now, windows: map[string]*rateWindow{}}
}

func rateKey(p *principal, r *http.Request) string {
	switch {
	case p == nil:
		return "ip:" + r.RemoteAddr
	case p.app:
		return "app"
	case p.token != nil:
		return "installation:" + strconv.FormatInt(p.token.InstallationID, 10)
	default:
		return "user:" + state.Key(p.user.Login)
	}
}

func rateKeyLabel(p *principal) string {
	switch {
	case p == nil:
		return "this address"
	case p.token != nil:
		return "installation ID " + strconv.FormatInt(p.token.InstallationID, 10)
	case p.app:
		return "the App"
	default:
		return "user " + p.user.Login
	}
}

// window is the caller's current window, a new one when the old expired.
func (l *limiter) window(p *principal, r *http.Request) rateWindow {
	l.mu.Lock()
	defer l.mu.Unlock()
	return *l.current(p, r)
}

func (l *limiter) current(p *principal, r *http.Request) *rateWindow {
	k := rateKey(p, r)
	now := l.now()
	rw := l.windows[k]
	if rw == nil || !now.Before(rw.reset) {
		limit := l.limit
		if p == nil {
			limit = min(limit, anonymousLimit)
		}
		rw = &rateWindow{limit: limit, reset: now.Add(time.Hour).Truncate(time.Second)}
		l.windows[k] = rw
	}
	return rw
}

// spend counts one request unless it was answered 304 (conditional requests that hit
// do not count on GitHub either), and returns the window after it.
func (l *limiter) spend(p *principal, r *http.Request, notModified bool) rateWindow {
	l.mu.Lock()
	defer l.mu.Unlock()
	rw := l.current(p, r)
	if !notModified {
		rw.used++
	}
	return *rw
}
