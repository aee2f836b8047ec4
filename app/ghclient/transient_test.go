package ghclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"syscall"
	"testing"

	"github.com/bradleyfalzon/ghinstallation/v2"
	gogithub "github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/internal/ghretry"
)

func TestTransient(t *testing.T) {
	t.Parallel()
	answer := func(code int) error {
		return fmt.Errorf("failed to list installations: %w",
			&gogithub.ErrorResponse{Response: &http.Response{StatusCode: code}, Message: http.StatusText(code)})
	}
	minted := func(code int) error {
		return &url.Error{Op: "Get", URL: "https://api.github.com/repos/o/r/issues", Err: &ghinstallation.HTTPError{
			Message: "could not refresh installation id 1's token", Response: &http.Response{StatusCode: code}}}
	}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"no error", nil, false},
		{"502 past ghretry's patience", answer(http.StatusBadGateway), true},
		{"503", answer(http.StatusServiceUnavailable), true},
		{"429", answer(http.StatusTooManyRequests), true},
		{"secondary rate limit", fmt.Errorf("failed: %w", &gogithub.AbuseRateLimitError{Message: "secondary"}), true},
		{"primary rate limit", &gogithub.RateLimitError{Message: "API rate limit exceeded"}, true},
		{"credential held by ghretry", &url.Error{Op: "Get", URL: "u", Err: ghretry.ErrHeld}, true},
		{"connection refused", &url.Error{Op: "Get", URL: "u", Err: syscall.ECONNREFUSED}, true},
		{"token minting met a 502", minted(http.StatusBadGateway), true},
		{"wrong private key: 401", answer(http.StatusUnauthorized), false},
		{"token minting refused: 401", minted(http.StatusUnauthorized), false},
		{"wrong App ID: 404", answer(http.StatusNotFound), false},
		{"refused: 422", answer(http.StatusUnprocessableEntity), false},
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
