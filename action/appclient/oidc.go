package appclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"time"
)

// The variables GitHub's runner sets for a job whose workflow grants
// `permissions: id-token: write`, and nothing else.
const (
	EnvIDTokenRequestURL   = "ACTIONS_ID_TOKEN_REQUEST_URL"
	EnvIDTokenRequestToken = "ACTIONS_ID_TOKEN_REQUEST_TOKEN"
)

// ErrNoIDTokenRequest is OIDCToken's error when the job has no ID token request URL or
// token: GitHub sets them only for a workflow that asks for them.
var ErrNoIDTokenRequest = errors.New(EnvIDTokenRequestURL + " and " + EnvIDTokenRequestToken +
	" are not set: the workflow needs `permissions: id-token: write` for the runner to prove who it is")

// maxIDTokenResponse bounds the issuer's answer: a JWT and a count.
const maxIDTokenResponse = 64 << 10

// OIDCTokenFromEnv is OIDCToken with the request URL and token of the job's environment.
func OIDCTokenFromEnv(ctx context.Context, audience string, client *http.Client) (string, error) {
	return OIDCToken(ctx, os.Getenv(EnvIDTokenRequestURL), os.Getenv(EnvIDTokenRequestToken), audience, client)
}

// OIDCToken fetches the job's OIDC ID token for audience the way actions/toolkit's
// core.getIDToken does: GET requestURL (ACTIONS_ID_TOKEN_REQUEST_URL, which already
// carries a query such as api-version=2.0) with audience added to its query and
// `Authorization: Bearer <requestToken>`, answered `{"value": "<JWT>"}`. Server errors and
// failed connections are retried a few times, as the toolkit's client does; the GET is
// idempotent. Neither the request token nor the ID token ever appears in an error. A nil
// client is one with a 30-second timeout.
func OIDCToken(ctx context.Context, requestURL, requestToken, audience string, client *http.Client) (string, error) {
	return oidcToken(ctx, requestURL, requestToken, audience, client, defaultRetry)
}

func oidcToken(ctx context.Context, requestURL, requestToken, audience string, client *http.Client, rp retryPolicy) (string, error) {
	if requestURL == "" || requestToken == "" {
		return "", ErrNoIDTokenRequest
	}
	u, err := url.Parse(requestURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", fmt.Errorf("%s is not an http(s) URL", EnvIDTokenRequestURL)
	}
	if audience != "" {
		q := u.Query()
		q.Set("audience", audience)
		u.RawQuery = q.Encode()
	}
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	var value string
	err = rp.do(ctx, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return false, fmt.Errorf("failed to build the ID token request: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+requestToken)
		req.Header.Set("Accept", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return true, fmt.Errorf("failed to ask %s for an ID token: %w", EnvIDTokenRequestURL, err)
		}
		defer resp.Body.Close()
		body, tooLong, err := readBounded(resp.Body, maxIDTokenResponse)
		if err != nil {
			return true, fmt.Errorf("failed to read the ID token response: %w", err)
		}
		if resp.StatusCode != http.StatusOK {
			return resp.StatusCode >= 500, fmt.Errorf("%s answered %s: %s", EnvIDTokenRequestURL, resp.Status,
				excerpt(body, requestToken))
		}
		if tooLong {
			return false, fmt.Errorf("the ID token response is larger than %d bytes", maxIDTokenResponse)
		}
		var out struct {
			Value string `json:"value"`
		}
		// The body holds the token: its text never goes into an error.
		if err := json.Unmarshal(body, &out); err != nil {
			return false, fmt.Errorf("the ID token response is not the JSON {\"value\": …} (%d bytes)", len(body))
		}
		if out.Value == "" {
			return false, fmt.Errorf("%s answered no ID token (an empty \"value\")", EnvIDTokenRequestURL)
		}
		value = out.Value
		return false, nil
	})
	if err != nil {
		return "", err
	}
	return value, nil
}

// readBounded reads at most limit bytes and says whether there was more.
func readBounded(r io.Reader, limit int64) ([]byte, bool, error) {
	body, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, false, err
	}
	if int64(len(body)) > limit {
		return body[:limit], true, nil
	}
	return body, false, nil
}
