package ghclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	gogithub "github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/app/workitem"
	"github.com/bumperdev/bumper/internal/ghretry"
)

// Transient reports whether err is GitHub failing for a while (a 5xx, a rate limit, a
// connection that broke or timed out, another replica's write that beat this one's)
// rather than something asking again will not change: a 401 for a wrong private key, a
// 404 for a wrong App ID, a certificate this host does not trust. ghretry has already
// repeated what it could; a transient error is worth asking again later, a lasting one
// is for the admin to fix. A cancelled context is neither: the caller is stopping.
func Transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var limit *gogithub.RateLimitError
	var abuse *gogithub.AbuseRateLimitError
	if errors.As(err, &limit) || errors.As(err, &abuse) || errors.Is(err, ghretry.ErrHeld) ||
		errors.Is(err, workitem.ErrConflict) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	if code, h := answer(err); code != 0 {
		// A 403 is a refusal unless its headers say it is a limit (a spent primary limit
		// says so even without its reset).
		_, limited := ghretry.LimitWait(h, time.Now())
		limited = limited || h.Get("X-Ratelimit-Remaining") == "0"
		return code >= http.StatusInternalServerError || code == http.StatusTooManyRequests || (code == http.StatusForbidden && limited)
	}
	// A certificate the host does not trust is the admin's to fix (BUMPER_CA_FILE, a
	// proxy's CA), not a bad minute.
	var unknown x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var host x509.HostnameError
	var verify *tls.CertificateVerificationError
	if errors.As(err, &unknown) || errors.As(err, &invalid) || errors.As(err, &host) || errors.As(err, &verify) {
		return false
	}
	// A request that got no answer: a *url.Error is a net.Error too.
	var ne net.Error
	return errors.As(err, &ne)
}

// WaitAsked is how long, from now, GitHub asked to be left alone in err (a rate limit's
// Retry-After or reset, or ghretry's hold of the credential); 0 when it asked nothing.
func WaitAsked(err error, now time.Time) time.Duration {
	var limit *gogithub.RateLimitError
	var abuse *gogithub.AbuseRateLimitError
	var held *ghretry.HeldError
	switch {
	case errors.As(err, &held):
		return max(held.Until.Sub(now), 0)
	case errors.As(err, &abuse) && abuse.RetryAfter != nil:
		return max(*abuse.RetryAfter, 0)
	case errors.As(err, &limit):
		return max(limit.Rate.Reset.Sub(now), 0)
	}
	if code, h := answer(err); code != 0 {
		if d, ok := ghretry.LimitWait(h, now); ok {
			return d
		}
	}
	return 0
}

// answer is the status and headers of GitHub's response in err (0 when there is none):
// a REST answer go-github turned into an error, or the one to an installation token's
// minting (which fails inside the transport, so it comes wrapped in the *url.Error of the
// request it was for).
func answer(err error) (int, http.Header) {
	var er *gogithub.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return er.Response.StatusCode, er.Response.Header
	}
	var mint *ghinstallation.HTTPError
	if errors.As(err, &mint) && mint.Response != nil {
		return mint.Response.StatusCode, mint.Response.Header
	}
	return 0, nil
}
