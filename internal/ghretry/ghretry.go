// Package ghretry is an http.RoundTripper for GitHub's REST API that waits for what
// GitHub asks clients to wait for and repeats what is safe to repeat.
//
// GitHub answers a busy moment with a 502, 503 or 504, and a client that writes too fast
// with a secondary rate limit: a 403 or 429 with Retry-After, before which GitHub wants no
// request at all from that credential (repeating early extends the block, and may get the
// integration banned). The transport keeps, per credential, the time before which it sends
// nothing, and holds every request of that credential until then. A rate-limited request
// was not processed, so it is repeated whatever its method; a 5xx one may have been, so
// only methods whose repetition changes nothing are repeated (GET, HEAD, OPTIONS, PUT,
// PATCH, DELETE: GitHub's PATCH sets fields, it never appends), and the POSTs whose
// repetition changes nothing: adding an issue's labels, and creating git blobs, trees and
// commits (objects named by their content; one made twice is one object, or an orphan
// nothing points at). Any other POST that met a 5xx is returned to its caller, which
// knows whether creating twice is harmful.
package ghretry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Defaults of a Transport's zero fields.
const (
	DefaultAttempts = 4
	DefaultMaxWait  = 90 * time.Second
	// secondaryDefault is how long GitHub asks a client to wait when its secondary rate
	// limit comes without a Retry-After: at least a minute.
	secondaryDefault = time.Minute
	// maxHold bounds how long an answer may hold a credential: GitHub's primary limit
	// resets within the hour, its secondary ones ask for minutes.
	maxHold = 2 * time.Hour
	// sniff is how much of a 403's body is read to tell a rate limit from a refusal.
	sniff = 64 << 10
)

// ErrHeld is a request not sent because GitHub asked its credential to wait longer than
// the transport waits itself. The error returned is a *HeldError, which says until when.
var ErrHeld = errors.New("GitHub's rate limit holds the credential")

// HeldError is ErrHeld with the time before which the credential sends nothing.
type HeldError struct{ Until time.Time }

func (e *HeldError) Error() string {
	return fmt.Sprintf("failed to send before %s: %v", e.Until.UTC().Format(time.RFC3339), ErrHeld)
}

// Is makes errors.Is(err, ErrHeld) hold.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// Transport repeats GitHub's requests as the package says. Use New.
type Transport struct {
	base     http.RoundTripper
	attempts int
	maxWait  time.Duration
	backoff  time.Duration
	now      func() time.Time

	mu    sync.Mutex
	until map[string]time.Time // credential → nothing is sent before this
}

// Option changes a Transport.
type Option func(*Transport)

// WithAttempts sets how many times a request is sent in all (the first included).
func WithAttempts(n int) Option { return func(t *Transport) { t.attempts = max(n, 1) } }

// WithMaxWait caps the Retry-After the transport waits out itself; a longer one is
// handed to the caller with GitHub's answer, and the credential's later requests fail
// with ErrHeld, unsent, until it is over (at most maxHold).
func WithMaxWait(d time.Duration) Option { return func(t *Transport) { t.maxWait = d } }

// WithBackoff sets the first wait after a 5xx or a failed connection; it doubles.
func WithBackoff(d time.Duration) Option { return func(t *Transport) { t.backoff = d } }

// New wraps base (nil: http.DefaultTransport).
func New(base http.RoundTripper, opts ...Option) *Transport {
	if base == nil {
		base = http.DefaultTransport
	}
	t := &Transport{base: base, attempts: DefaultAttempts, maxWait: DefaultMaxWait, backoff: 500 * time.Millisecond,
		now: time.Now, until: map[string]time.Time{}}
	for _, o := range opts {
		o(t)
	}
	return t
}

// repeatablePOST matches the POSTs the package doc names.
var repeatablePOST = regexp.MustCompile(`/repos/[^/]+/[^/]+/(issues/[0-9]+/labels|git/(blobs|trees|commits))$`)

// idempotent reports whether sending the request twice leaves GitHub as sending it once.
func idempotent(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	case http.MethodPost:
		return repeatablePOST.MatchString(r.URL.Path)
	}
	return false
}

// credential names whose requests a rate limit holds: the App, for a request signed with
// its JWT (minted afresh every few seconds, so the token would name a new credential each
// time while GitHub limits the App); else the token (hashed: the map must not hold
// secrets), or the host for anonymous requests.
func credential(r *http.Request) string {
	auth := r.Header.Get("Authorization")
	if auth == "" {
		return "host:" + r.URL.Host
	}
	if iss := jwtIssuer(auth); iss != "" {
		return "app:" + iss
	}
	sum := sha256.Sum256([]byte(auth))
	return hex.EncodeToString(sum[:8])
}

// jwtIssuer is the iss claim of a bearer JWT, unverified (it only names a hold), or "".
func jwtIssuer(auth string) string {
	tok, ok := strings.CutPrefix(auth, "Bearer ")
	parts := strings.Split(tok, ".")
	if !ok || len(parts) != 3 {
		return ""
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var claims struct {
		Iss json.RawMessage `json:"iss"`
	}
	if json.Unmarshal(raw, &claims) != nil {
		return ""
	}
	// GitHub's App JWTs carry the App's ID (a number) or client ID (a string).
	return strings.Trim(string(claims.Iss), `"`)
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	cred := credential(r)
	// A body that cannot be read again can be sent once.
	replayable := r.Body == nil || r.Body == http.NoBody || r.GetBody != nil
	wait := t.backoff
	for attempt := 1; ; attempt++ {
		if err := t.holdFor(r.Context(), cred); err != nil {
			return nil, err
		}
		req := r
		if attempt > 1 {
			req = r.Clone(r.Context())
			if r.GetBody != nil {
				body, err := r.GetBody()
				if err != nil {
					return nil, fmt.Errorf("failed to read the request's body again: %w", err)
				}
				req.Body = body
			}
		}
		resp, err := t.base.RoundTrip(req)
		last := attempt >= t.attempts || !replayable
		if err != nil {
			// A connection that failed may have carried the request; repeat only what is safe.
			if last || !idempotent(r) || r.Context().Err() != nil {
				return nil, err
			}
			if err := sleep(r.Context(), wait); err != nil {
				return nil, err
			}
			wait *= 2
			continue
		}
		if d, limited := t.rateLimited(resp); limited {
			t.hold(cred, d)
			if last || d > t.maxWait {
				return resp, nil
			}
			discard(resp)
			continue
		}
		switch resp.StatusCode {
		case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			if last || !idempotent(r) {
				return resp, nil
			}
			discard(resp)
			if err := sleep(r.Context(), wait); err != nil {
				return nil, err
			}
			wait *= 2
			continue
		}
		return resp, nil
	}
}

// LimitWait is how long the headers of a GitHub answer ask its credential to wait: its
// Retry-After, or for a spent primary limit the time to its reset (and a second, the
// reset being in whole seconds); at most maxHold. ok is false when they ask nothing.
func LimitWait(h http.Header, now time.Time) (time.Duration, bool) {
	if s := h.Get("Retry-After"); s != "" {
		if n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil && n >= 0 {
			// Bounded before it is multiplied: a hostile answer's seconds could overflow
			// a Duration into a negative wait, repeated at once.
			return time.Duration(min(n, int64(maxHold/time.Second))) * time.Second, true
		}
	}
	if h.Get("X-Ratelimit-Remaining") == "0" {
		if reset, err := strconv.ParseInt(h.Get("X-Ratelimit-Reset"), 10, 64); err == nil {
			if reset > now.Unix()+int64(maxHold/time.Second) { // so far off time.Unix wraps
				return maxHold + time.Second, true
			}
			return min(max(time.Unix(reset, 0).Sub(now), 0), maxHold) + time.Second, true
		}
	}
	return 0, false
}

// rateLimited reports whether resp is a rate limit and how long GitHub asks to wait.
// It reads a 403's body to tell (a refusal is also a 403) and puts it back.
func (t *Transport) rateLimited(resp *http.Response) (time.Duration, bool) {
	if resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusTooManyRequests {
		return 0, false
	}
	if d, ok := LimitWait(resp.Header, t.now()); ok {
		return d, true
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		return secondaryDefault, true
	}
	head, err := io.ReadAll(io.LimitReader(resp.Body, sniff))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	if err == nil && bytes.Contains(bytes.ToLower(head), []byte("secondary rate limit")) {
		return secondaryDefault, true
	}
	return 0, false
}

// hold keeps the credential's requests back for d from now (never shortening a hold).
func (t *Transport) hold(cred string, d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if until := t.now().Add(d); until.After(t.until[cred]) {
		t.until[cred] = until
	}
}

// holdFor waits until the credential may send again, or fails at once (ErrHeld) when
// that is further off than the transport's patience: a caller without a deadline (a
// serve handler) is not kept for as long as an answer asked.
func (t *Transport) holdFor(ctx context.Context, cred string) error {
	for {
		t.mu.Lock()
		until, ok := t.until[cred]
		now := t.now()
		if ok && !now.Before(until) {
			delete(t.until, cred)
		}
		t.mu.Unlock()
		if !ok || !now.Before(until) {
			return nil
		}
		if until.Sub(now) > t.maxWait {
			return &HeldError{Until: until}
		}
		if err := sleep(ctx, until.Sub(now)); err != nil {
			return fmt.Errorf("failed to wait out GitHub's rate limit: %w", err)
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-tm.C:
		return nil
	}
}

// discard reads what is left of a response that is not returned, so its connection is
// reused.
func discard(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, sniff))
	resp.Body.Close()
}
