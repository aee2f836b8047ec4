package ghclient

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"

	"github.com/bradleyfalzon/ghinstallation/v2"
	gogithub "github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/internal/ghretry"
)

// Transient reports whether err is GitHub failing for a while (a 5xx, a rate limit, a
// connection that broke or timed out) rather than a refusal that asking again will not
// change (a 401 for a wrong private key, a 404 for a wrong App ID). ghretry has already
// repeated what it could; a transient error is worth asking again later, a lasting one
// is for the admin to fix. A cancelled context is neither: the caller is stopping.
func Transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var limit *gogithub.RateLimitError
	var abuse *gogithub.AbuseRateLimitError
	if errors.As(err, &limit) || errors.As(err, &abuse) || errors.Is(err, ghretry.ErrHeld) {
		return true
	}
	if code := status(err); code != 0 {
		return transientStatus(code)
	}
	// Minting an installation token fails inside the transport, so GitHub's answer comes
	// wrapped in the *url.Error of the request it was for.
	var mint *ghinstallation.HTTPError
	if errors.As(err, &mint) && mint.Response != nil {
		return transientStatus(mint.Response.StatusCode)
	}
	var ue *url.Error
	var ne net.Error
	return errors.As(err, &ue) || errors.As(err, &ne)
}

func transientStatus(code int) bool {
	return code >= http.StatusInternalServerError || code == http.StatusTooManyRequests
}
