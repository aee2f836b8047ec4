package publish

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ErrAlreadyRevoked: GitHub no longer knows the token (401): it was revoked before, or
// has expired. Either way it cannot be used any more; for a caller that only needs the
// token dead, it is as good as a revocation (see Revoked).
var ErrAlreadyRevoked = errors.New("the installation token was already revoked or has expired")

// Revoked reports whether Revoke's answer means the token can no longer be used: it
// was revoked now (nil) or before (ErrAlreadyRevoked).
func Revoked(err error) bool { return err == nil || errors.Is(err, ErrAlreadyRevoked) }

// revokeAttempts and revokeBackoff: a connection failure or a 5xx is tried again.
var (
	revokeAttempts = 3
	revokeBackoff  = 500 * time.Millisecond
)

// Revoke revokes the installation token with DELETE <apiBaseURL>/installation/token,
// authenticated by the token itself: nil when GitHub answered 204, ErrAlreadyRevoked
// when it answered 401 (already revoked or expired), an error otherwise. It is safe to
// call any number of times. client may be nil (a client with a 30 s timeout); no
// redirect is followed. The token appears in no error and no log.
func Revoke(ctx context.Context, apiBaseURL, token string, client *http.Client) error {
	base, err := url.Parse(strings.TrimRight(apiBaseURL, "/"))
	if err != nil || (base.Scheme != "https" && base.Scheme != "http") || base.Host == "" || base.User != nil || base.RawQuery != "" {
		return fmt.Errorf("%w: GitHub API base URL %q: want https://host[/path] without credentials or query", ErrInvalidOptions, apiBaseURL)
	}
	if token == "" || strings.ContainsAny(token, " \t\r\n") {
		return fmt.Errorf("%w: no usable token to revoke", ErrInvalidOptions)
	}
	c := &http.Client{Timeout: 30 * time.Second}
	if client != nil {
		cc := *client
		c = &cc
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	endpoint := base.String() + "/installation/token"
	var last error
	for attempt := 1; attempt <= revokeAttempts; attempt++ {
		if attempt > 1 {
			t := time.NewTimer(revokeBackoff << (attempt - 2))
			select {
			case <-ctx.Done():
				t.Stop()
				return fmt.Errorf("failed to revoke the installation token: %w (last: %w)", ctx.Err(), last)
			case <-t.C:
			}
		}
		var retry bool
		retry, last = revokeOnce(ctx, c, endpoint, token)
		if !retry {
			return last
		}
	}
	return fmt.Errorf("failed to revoke the installation token (%d attempts): %w", revokeAttempts, last)
}

func revokeOnce(ctx context.Context, c *http.Client, endpoint, token string) (retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, endpoint, nil)
	if err != nil {
		return false, fmt.Errorf("failed to revoke the installation token: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	resp, err := c.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return false, fmt.Errorf("failed to revoke the installation token: %w", ctx.Err())
		}
		return true, fmt.Errorf("DELETE %s: %s", endpoint, redact(err.Error(), token))
	}
	defer resp.Body.Close()
	excerpt, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode == http.StatusNoContent:
		return false, nil
	case resp.StatusCode == http.StatusUnauthorized:
		return false, ErrAlreadyRevoked
	case resp.StatusCode >= 500:
		return true, fmt.Errorf("DELETE %s answered %s", endpoint, resp.Status)
	default:
		return false, fmt.Errorf("failed to revoke the installation token: DELETE %s answered %s: %s", endpoint, resp.Status, redact(strings.TrimSpace(string(excerpt)), token))
	}
}

func redact(s, token string) string { return strings.ReplaceAll(s, token, "[token]") }
