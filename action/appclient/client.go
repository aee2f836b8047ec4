package appclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/bumperdev/bumper/app/wire"
)

// maxResponse bounds what serve may answer. The largest answer is the task: an issue's
// title and body and its comments (GitHub caps each text at 65,536 characters).
const maxResponse = 16 << 20

// requestTimeout bounds one attempt of the default HTTP client. The exchange is the slow
// call: serve re-reads the issue, the approval, the plan and the policy from GitHub.
const requestTimeout = 60 * time.Second

// Client calls `bumper serve`'s runner endpoints: the token exchange and, once
// WithRunToken has given it the exchange's run token, the run call-backs. It is safe for
// concurrent use and never logs.
type Client struct {
	base     *url.URL
	hc       *http.Client
	retry    retryPolicy
	insecure bool
	runToken string
}

// Option changes a Client.
type Option func(*Client)

// WithHTTPClient sends the requests through hc (its transport and timeout). Redirects are
// refused all the same: serve never redirects, and following one would carry the OIDC
// token or the run token to another address.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// AllowInsecureHTTP allows an http:// base URL to a host other than the loopback. Without
// it only https:// or http:// to localhost, 127.0.0.0/8 or ::1 is accepted: the exchange
// sends the run's OIDC token and receives an installation token that can push to the
// repository, and the call-backs carry the run token, so in clear text anyone on the path
// could read them and act as the run. Allow it only where the network itself is private
// to the runner and serve (a test network, a sidecar), never across the internet.
func AllowInsecureHTTP() Option { return func(c *Client) { c.insecure = true } }

// WithRetry sets how many attempts a retried request gets in all (at least 1) and the
// first wait between them; the wait doubles after each attempt, up to 5 seconds. The
// default is 4 attempts, waiting 0.5 s, 1 s and 2 s.
func WithRetry(attempts int, firstWait time.Duration) Option {
	return func(c *Client) {
		c.retry.attempts = max(attempts, 1)
		c.retry.first = firstWait
		c.retry.max = max(firstWait, defaultRetry.max)
	}
}

// New returns a client of the serve at baseURL (scheme, host, optional path prefix; no
// credentials, query or fragment).
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("serve's URL %q does not parse: %w", baseURL, err)
	}
	c := &Client{base: u, retry: defaultRetry}
	for _, o := range opts {
		o(c)
	}
	switch {
	case u.Scheme != "https" && u.Scheme != "http":
		return nil, fmt.Errorf("serve's URL %q must be https:// (or http:// to the loopback)", baseURL)
	case u.Host == "" || u.Hostname() == "":
		return nil, fmt.Errorf("serve's URL %q has no host", baseURL)
	case u.User != nil:
		return nil, fmt.Errorf("serve's URL must not carry credentials")
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return nil, fmt.Errorf("serve's URL %q must not have a query or fragment", baseURL)
	case u.Scheme == "http" && !c.insecure && !loopback(u.Hostname()):
		return nil, fmt.Errorf("serve's URL %q is plain http to a host other than the loopback: the exchange and "+
			"the call-backs carry the run's credentials, so use https (or allow insecure http explicitly, on a private network only)", baseURL)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	hc := &http.Client{Timeout: requestTimeout}
	if c.hc != nil {
		copied := *c.hc
		hc = &copied
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return errRedirect }
	c.hc = hc
	return c, nil
}

// loopback reports whether host names this machine: localhost (RFC 6761) or a loopback
// address.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

var errRedirect = errors.New("serve answered with a redirect, which is not followed: the request would carry the run's credentials elsewhere")

// WithRunToken returns a copy of c that authenticates the call-backs with the run token
// from the exchange (ExchangeResponse.RunToken).
func (c *Client) WithRunToken(token string) *Client {
	cp := *c
	cp.runToken = token
	return &cp
}

// URL is serve's base URL, as errors name it.
func (c *Client) URL() string { return c.base.String() }

// retryWhen says which failures of a request are repeated.
type retryWhen int

const (
	// retryNotSent repeats only requests that never reached serve: the connection could
	// not be made (refused, no route, name not found), so nothing was written.
	retryNotSent retryWhen = iota
	// retryReport also repeats a 5xx answer: serve said it failed ("try again").
	retryReport
	// retryAny repeats any transport failure and any 5xx: for reads, which are
	// idempotent.
	retryAny
)

// Exchange presents the run's OIDC token and nonce and returns its credentials.
//
// It is repeated only when the connection to serve could not be made. Once the request
// may have reached serve it is not: the nonce is single-use and serve spends it before
// it answers, so a repeat after a lost answer or a 5xx would at best be refused ("already
// used") and hide what happened. Such a failure is reported as is; the work item then
// needs a new attempt.
func (c *Client) Exchange(ctx context.Context, req wire.ExchangeRequest) (wire.ExchangeResponse, error) {
	var resp wire.ExchangeResponse
	if req.OIDCToken == "" || req.Nonce == "" || req.WorkItem == "" || req.Attempt < 1 {
		return resp, errors.New("the token exchange needs the OIDC token, the nonce, the work item and the attempt")
	}
	err := c.call(ctx, http.MethodPost, wire.PathTokenExchange, "", req, &resp, retryNotSent, req.OIDCToken, req.Nonce)
	if err != nil {
		return wire.ExchangeResponse{}, err
	}
	if err := checkExchange(req, resp); err != nil {
		return wire.ExchangeResponse{}, err
	}
	return resp, nil
}

func checkExchange(req wire.ExchangeRequest, r wire.ExchangeResponse) error {
	var missing []string
	for _, f := range []struct{ name, v string }{
		{"installation_token", r.InstallationToken}, {"run_token", r.RunToken}, {"repository", r.Repository},
		{"work_item", r.WorkItem.String()}, {"revision", r.Revision}, {"stage", string(r.Stage)}, {"base_commit", r.BaseCommit},
		{"base_branch", r.BaseBranch}, {"bot_login", r.BotLogin},
	} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("serve's exchange answer lacks %s", strings.Join(missing, ", "))
	}
	if r.WorkItem.String() != req.WorkItem || r.Attempt != req.Attempt {
		return fmt.Errorf("serve granted credentials for %s attempt %d, but the run asked for %s attempt %d",
			r.WorkItem, r.Attempt, req.WorkItem, req.Attempt)
	}
	if r.WorkItem.Repository != r.Repository {
		return fmt.Errorf("serve granted a token for %s, but the work item is %s", r.Repository, r.WorkItem)
	}
	return nil
}

// Progress reports that the run reached a step (POST /api/v1/run/progress).
//
// The reports (Progress, Evidence, Verdict) are repeated when the connection could not
// be made or serve answered 5xx (it failed and said to try again), not when the request
// was sent and the answer lost: serve probably took it, and its state table refuses the
// same move twice, so a blind repeat would turn a success into a refusal.
func (c *Client) Progress(ctx context.Context, p wire.Progress) error {
	return c.report(ctx, wire.PathProgress, p)
}

// Waiting says the run waits for a VM slot on its runner host, or no longer does (POST
// /api/v1/run/waiting), repeated as the reports are. It moves nothing at serve.
func (c *Client) Waiting(ctx context.Context, w wire.Waiting) error {
	return c.report(ctx, wire.PathWaiting, w)
}

// Evidence reports the attempt's evidence bundle (POST /api/v1/run/evidence) and
// returns serve's receipt: the run's signed statement, or why serve signed none (an
// older serve answers 204, with neither). The statement is not checked here: the runner
// writes it as serve sent it, and `bumper evidence verify` checks it against serve's
// published key.
func (c *Client) Evidence(ctx context.Context, e wire.Evidence) (wire.EvidenceReceipt, error) {
	var r wire.EvidenceReceipt
	if c.runToken == "" {
		return r, errNoRunToken
	}
	err := c.call(ctx, http.MethodPost, wire.PathEvidence, c.runToken, e, &r, retryReport, c.runToken)
	return r, err
}

// Verdict reports a review run's verdict (POST /api/v1/run/verdict).
func (c *Client) Verdict(ctx context.Context, v wire.Verdict) error {
	return c.report(ctx, wire.PathVerdict, v)
}

func (c *Client) report(ctx context.Context, path string, body any) error {
	if c.runToken == "" {
		return errNoRunToken
	}
	return c.call(ctx, http.MethodPost, path, c.runToken, body, nil, retryReport, c.runToken)
}

var errNoRunToken = errors.New("no run token: the call-backs need the exchange's run token (Client.WithRunToken)")

// ShouldStop asks whether the run should stop (GET /api/v1/run/should-stop).
func (c *Client) ShouldStop(ctx context.Context) (wire.ShouldStop, error) {
	if c.runToken == "" {
		return wire.ShouldStop{}, errNoRunToken
	}
	var out struct {
		Stop   *bool        `json:"stop"`
		Reason string       `json:"reason"`
		Steers []wire.Steer `json:"steers"`
	}
	if err := c.call(ctx, http.MethodGet, wire.PathShouldStop, c.runToken, nil, &out, retryAny, c.runToken); err != nil {
		return wire.ShouldStop{}, err
	}
	if out.Stop == nil {
		return wire.ShouldStop{}, errors.New("serve's should-stop answer lacks \"stop\"")
	}
	return wire.ShouldStop{Stop: *out.Stop, Reason: out.Reason, Steers: out.Steers}, nil
}

// Refresh asks for a new run token for the same run (POST /api/v1/run/refresh): serve
// signs one while the attempt is current and its work item active, and refuses
// (*Refused) once the run is over. Use the answer with WithRunToken.
func (c *Client) Refresh(ctx context.Context) (wire.Refresh, error) {
	if c.runToken == "" {
		return wire.Refresh{}, errNoRunToken
	}
	var out wire.Refresh
	if err := c.call(ctx, http.MethodPost, wire.PathRefresh, c.runToken, struct{}{}, &out, retryAny, c.runToken); err != nil {
		return wire.Refresh{}, err
	}
	if out.RunToken == "" || out.RunTokenExpiresAt.IsZero() {
		return wire.Refresh{}, errors.New("serve's refresh answer lacks run_token or run_token_expires_at")
	}
	return out, nil
}

// Task fetches the task as approved (GET /api/v1/run/task).
func (c *Client) Task(ctx context.Context) (wire.Task, error) {
	if c.runToken == "" {
		return wire.Task{}, errNoRunToken
	}
	var t wire.Task
	if err := c.call(ctx, http.MethodGet, wire.PathTask, c.runToken, nil, &t, retryAny, c.runToken); err != nil {
		return wire.Task{}, err
	}
	var missing []string
	for _, f := range []struct{ name, v string }{
		{"work_item", t.WorkItem.String()}, {"stage", string(t.Stage)}, {"spec_revision", t.SpecRevision},
		{"title", t.Title}, {"base_commit", t.BaseCommit},
	} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return wire.Task{}, fmt.Errorf("serve's task lacks %s", strings.Join(missing, ", "))
	}
	if (t.Plan == "") != (t.PlanRevision == "") {
		return wire.Task{}, errors.New("serve's task has a plan without its revision, or a revision without its plan")
	}
	return t, nil
}

// call sends one request, repeated as when says, and decodes a 2xx answer into out (nil:
// none expected). secrets are redacted from anything serve's answers put in an error.
func (c *Client) call(ctx context.Context, method, path, bearer string, in, out any, when retryWhen, secrets ...string) error {
	var payload []byte
	if in != nil {
		var err error
		if payload, err = json.Marshal(in); err != nil {
			return fmt.Errorf("failed to encode the request to %s: %w", path, err)
		}
	}
	target := c.base.JoinPath(path).String()
	var transient bool // the last failure was one the policy repeats
	n, err := c.retry.run(ctx, func(ctx context.Context) (bool, error) {
		transient = false
		var body io.Reader
		if payload != nil {
			body = bytes.NewReader(payload)
		}
		req, err := http.NewRequestWithContext(ctx, method, target, body)
		if err != nil {
			return false, fmt.Errorf("failed to build the request to %s: %w", path, err)
		}
		req.Header.Set("Accept", "application/json")
		req.Header.Set("User-Agent", "bumper-run")
		if payload != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := c.hc.Do(req)
		if err != nil {
			switch {
			case errors.Is(err, errRedirect):
				return false, errRedirect
			case ctx.Err() != nil:
				return false, err
			case notSent(err) || when == retryAny:
				transient = true
				return true, err
			case when == retryNotSent:
				return false, fmt.Errorf("serve at %s did not answer the token exchange, and it is not repeated: the nonce "+
					"is single-use and may be spent; the work item needs a new attempt: %w", c.URL(), err)
			default:
				return false, fmt.Errorf("serve at %s did not answer %s %s, and it is not repeated: serve may have taken it: %w",
					c.URL(), method, path, err)
			}
		}
		defer resp.Body.Close()
		raw, tooLong, err := readBounded(resp.Body, maxResponse)
		if err != nil {
			transient = when == retryAny
			return transient, fmt.Errorf("failed to read serve's answer to %s: %w", path, err)
		}
		switch code := resp.StatusCode; {
		case code >= 200 && code < 300:
			if tooLong {
				return false, fmt.Errorf("serve's answer to %s is larger than %d bytes", path, maxResponse)
			}
			if out == nil || code == http.StatusNoContent {
				return false, nil
			}
			if err := decode(raw, out); err != nil {
				return false, fmt.Errorf("serve's answer to %s does not decode: %w", path, err)
			}
			return false, nil
		case code == http.StatusForbidden:
			return false, &Refused{Path: path, Reason: message(raw, secrets)}
		case code >= 500 && when != retryNotSent:
			transient = true
			return true, &StatusError{Path: path, Code: code, Message: message(raw, secrets)}
		default:
			return false, &StatusError{Path: path, Code: code, Message: message(raw, secrets)}
		}
	})
	switch {
	case err == nil || !transient:
		return err
	case ctx.Err() != nil:
		return fmt.Errorf("gave up on serve at %s after %d attempts: %w (last: %w)", c.URL(), n, ctx.Err(), err)
	default:
		return &Unreachable{URL: c.URL(), Attempts: n, Err: err}
	}
}

// notSent reports whether a transport error happened before the request was written:
// the connection was never made.
func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// decode reads one JSON value. Unknown fields are accepted: serve and the runner are
// upgraded separately, and a field a newer serve adds must not stop an older runner;
// the fields the runner needs are checked by the caller instead. Trailing data is not.
func decode(raw []byte, out any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(out); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("data after the JSON value")
	}
	return nil
}

// message is serve's error text: the "error" of its JSON body, or an excerpt of the body.
func message(raw []byte, secrets []string) string {
	var e wire.Error
	if json.Unmarshal(raw, &e) == nil && e.Error != "" {
		raw = []byte(e.Error)
	}
	return excerpt(raw, secrets...)
}

// excerpt is at most 512 bytes of body as one printable line, with secrets redacted.
func excerpt(body []byte, secrets ...string) string {
	s := string(body)
	for _, sec := range secrets {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, "[redacted]")
		}
	}
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "?"))
	s = strings.TrimSpace(s)
	if len(s) > 512 {
		cut := 512
		for cut > 0 && !utf8Start(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	if s == "" {
		return "(no body)"
	}
	return s
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// Refused is serve's 403: a check failed and serve says which. For the token exchange it
// is the precondition failure `bumper run` reports ("exchange refused: <reason>").
type Refused struct {
	Path   string // the endpoint
	Reason string // serve's reason, verbatim (secrets redacted)
}

func (e *Refused) Error() string {
	if e.Path == wire.PathTokenExchange {
		return "exchange refused: " + e.Reason
	}
	return fmt.Sprintf("serve refused %s: %s", e.Path, e.Reason)
}

// StatusError is any other answer than 2xx or 403 that is not repeated (or no longer).
type StatusError struct {
	Path    string
	Code    int
	Message string // serve's, secrets redacted
}

func (e *StatusError) Error() string {
	status := fmt.Sprintf("%d %s", e.Code, http.StatusText(e.Code))
	switch {
	case e.Code == http.StatusBadRequest:
		return fmt.Sprintf("serve rejected the request to %s as malformed (%s): %s; is this runner's version one serve speaks?", e.Path, status, e.Message)
	case e.Code == http.StatusNotFound || e.Code == http.StatusMethodNotAllowed:
		return fmt.Sprintf("serve has no %s (%s): is the URL that of bumper serve, and is it recent enough?", e.Path, status)
	case e.Code >= 500 && e.Path == wire.PathTokenExchange:
		return fmt.Sprintf("serve failed the token exchange (%s): %s; not repeated: the nonce is single-use and may be spent", status, e.Message)
	default:
		return fmt.Sprintf("serve answered %s with %s: %s", e.Path, status, e.Message)
	}
}

// Unreachable is a request that failed every attempt: no connection, or 5xx each time.
type Unreachable struct {
	URL      string
	Attempts int
	Err      error // the last attempt's
}

func (e *Unreachable) Error() string {
	return fmt.Sprintf("serve unreachable at %s (%d attempts): %v", e.URL, e.Attempts, e.Err)
}

func (e *Unreachable) Unwrap() error { return e.Err }
