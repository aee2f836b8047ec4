package ghemu

import (
	"net/http"
	"strconv"
	"time"
)

// rateWindow is one credential's hourly budget, as GitHub's core resource counts it.
type rateWindow struct {
	limit int
	used  int
	reset time.Time
}

func (rw *rateWindow) setHeaders(h http.Header) {
	h.Set("X-RateLimit-Limit", strconv.Itoa(rw.limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(max(0, rw.limit-rw.used)))
	h.Set("X-RateLimit-Used", strconv.Itoa(rw.used))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(rw.reset.Unix(), 10))
	h.Set("X-RateLimit-Resource", "core")
}

// anonymousLimit is GitHub's hourly budget for unauthenticated callers.
const anonymousLimit = 60

func rateKey(p *principal, r *http.Request) string {
	switch {
	case p == nil:
		return "ip:" + r.RemoteAddr
	case p.app:
		return "app"
	case p.token != nil:
		return "installation:" + strconv.FormatInt(p.token.InstallationID, 10)
	default:
		return "user:" + key(p.user.Login)
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

// window returns the caller's current window, starting a new one when the old expired.
func (e *Emulator) window(p *principal, r *http.Request) *rateWindow {
	k := rateKey(p, r)
	now := e.now()
	rw := e.limits[k]
	if rw == nil || !now.Before(rw.reset) {
		limit := e.limit
		if p == nil {
			limit = min(limit, anonymousLimit)
		}
		rw = &rateWindow{limit: limit, reset: now.Add(time.Hour).Truncate(time.Second)}
		e.limits[k] = rw
	}
	return rw
}

// spend counts one request unless it was answered 304 (conditional requests that hit
// do not count on GitHub either).
func (e *Emulator) spend(p *principal, r *http.Request, notModified bool) *rateWindow {
	rw := e.window(p, r)
	if !notModified {
		rw.used++
	}
	return rw
}
