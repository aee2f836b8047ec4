package ghclient

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	gogithub "github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/app/workitem"
	"github.com/bumperdev/bumper/internal/ghretry"
)

var now = time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)

func header(pairs ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(pairs); i += 2 {
		h.Set(pairs[i], pairs[i+1])
	}
	return h
}

// rest is go-github's error for a REST answer.
func rest(code int, headers ...string) error {
	return fmt.Errorf("failed to list installations: %w",
		&gogithub.ErrorResponse{Response: &http.Response{StatusCode: code, Header: header(headers...)}, Message: http.StatusText(code)})
}

// minted is the error of a request whose installation token GitHub would not mint.
func minted(code int, headers ...string) error {
	return &url.Error{Op: "Get", URL: "https://api.github.com/repos/o/r/issues", Err: &ghinstallation.HTTPError{
		Message: "could not refresh installation id 1's token", Response: &http.Response{StatusCode: code, Header: header(headers...)}}}
}

func TestTransient(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"no error", nil, false},
		{"502 past ghretry's patience", rest(http.StatusBadGateway), true},
		{"503", rest(http.StatusServiceUnavailable), true},
		{"429", rest(http.StatusTooManyRequests), true},
		{"secondary rate limit", fmt.Errorf("failed: %w", &gogithub.AbuseRateLimitError{Message: "secondary"}), true},
		{"primary rate limit", &gogithub.RateLimitError{Message: "API rate limit exceeded"}, true},
		{"credential held by ghretry", &url.Error{Op: "Get", URL: "u", Err: &ghretry.HeldError{Until: now}}, true},
		{"connection refused", &url.Error{Op: "Get", URL: "u", Err: syscall.ECONNREFUSED}, true},
		{"an answer cut short", fmt.Errorf("failed to read: %w", io.ErrUnexpectedEOF), true},
		{"another replica's write won", fmt.Errorf("failed to write: %w", workitem.ErrConflict), true},
		{"token minting met a 502", minted(http.StatusBadGateway), true},
		{"token minting met a secondary rate limit", minted(http.StatusForbidden, "Retry-After", "60"), true},
		{"token minting met the primary rate limit", minted(http.StatusForbidden, "X-Ratelimit-Remaining", "0"), true},
		{"wrong private key: 401", rest(http.StatusUnauthorized), false},
		{"token minting refused: 401", minted(http.StatusUnauthorized), false},
		{"token minting forbidden: 403 without a limit", minted(http.StatusForbidden), false},
		{"wrong App ID: 404", rest(http.StatusNotFound), false},
		{"refused: 422", rest(http.StatusUnprocessableEntity), false},
		{"a certificate this host does not trust", &url.Error{Op: "Get", URL: "u", Err: x509.UnknownAuthorityError{}}, false},
		{"a certificate for another name", &url.Error{Op: "Get", URL: "u", Err: x509.HostnameError{Host: "api.github.com"}}, false},
		{"serve stopping", fmt.Errorf("failed: %w", &url.Error{Op: "Get", URL: "u", Err: context.Canceled}), false},
		{"not GitHub's", errors.New("the index is full"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Transient(tt.err); got != tt.want {
				t.Fatalf("Transient(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestWaitAsked(t *testing.T) {
	t.Parallel()
	minute := time.Minute
	reset := strconv.FormatInt(now.Add(10*time.Minute).Unix(), 10)
	tests := []struct {
		name string
		err  error
		want time.Duration
	}{
		{"a 502 asks nothing", rest(http.StatusBadGateway), 0},
		{"ghretry's hold", &url.Error{Op: "Get", URL: "u", Err: &ghretry.HeldError{Until: now.Add(5 * time.Minute)}}, 5 * time.Minute},
		{"a hold already over", &url.Error{Op: "Get", URL: "u", Err: &ghretry.HeldError{Until: now.Add(-time.Second)}}, 0},
		{"a secondary limit's Retry-After", &gogithub.AbuseRateLimitError{RetryAfter: &minute}, time.Minute},
		{"the primary limit's reset", &gogithub.RateLimitError{Rate: gogithub.Rate{Reset: gogithub.Timestamp{Time: now.Add(30 * time.Minute)}}}, 30 * time.Minute},
		{"minting's Retry-After", minted(http.StatusForbidden, "Retry-After", "300"), 5 * time.Minute},
		// The reset is in whole seconds: the wait runs to the second after it.
		{"minting's reset", minted(http.StatusForbidden, "X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", reset), 10*time.Minute + time.Second},
		{"a reset so far off that the clock would wrap", minted(http.StatusForbidden, "X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", "9223372036854775807"), 2*time.Hour + time.Second},
		{"a hostile Retry-After is bounded", minted(http.StatusForbidden, "Retry-After", "99999999999"), 2 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := WaitAsked(tt.err, now); got != tt.want {
				t.Fatalf("WaitAsked(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

// TestNotFound: GitHub's 404, and the 410 it answers for a deleted issue, are
// workitem.ErrNotFound; nothing else is.
func TestNotFound(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		code int
		want bool
	}{{http.StatusNotFound, true}, {http.StatusGone, true}, {http.StatusForbidden, false}, {http.StatusBadGateway, false}} {
		t.Run(http.StatusText(tt.code), func(t *testing.T) {
			t.Parallel()
			if got := errors.Is(notFound(rest(tt.code)), workitem.ErrNotFound); got != tt.want {
				t.Fatalf("a %d is ErrNotFound: %v, want %v", tt.code, got, tt.want)
			}
		})
	}
}
