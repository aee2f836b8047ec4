package ghemu

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/bumperdev/bumper/ghemu/apierr"
	"github.com/bumperdev/bumper/ghemu/faults"
	"github.com/bumperdev/bumper/ghemu/fidelity"
	"github.com/bumperdev/bumper/ghemu/rest"
	"github.com/bumperdev/bumper/ghemu/web"
)

// SpecPaths are the emulated routes written as GitHub's OpenAPI description writes them,
// for loading just those paths of the description.
func SpecPaths() []string { return rest.SpecPaths() }

// IsNonREST reports whether a request is one of the emulator's non-REST surfaces (git
// smart HTTP, the OIDC issuer, control routes, the web view and its forms, the App
// manifest pages), which GitHub's REST description does not cover.
func IsNonREST(r *http.Request) bool {
	return isGitPath(r.URL.Path) || strings.HasPrefix(r.URL.Path, "/.well-known/") ||
		strings.HasPrefix(r.URL.Path, controlPrefix) || isWebRequest(r) || isWebForm(r) || web.IsManifestPage(r)
}

// injectedFault reports whether an answer is one of the faults GitHub gives on any
// route, injected by the emulator's plan of faults (429, 502, 503), which GitHub's
// description declares on few routes or none. Injected 403s and 422s are still checked.
func injectedFault(r *http.Request, status int) bool {
	return faults.Marked(r.Context()) && (status == http.StatusTooManyRequests || status >= 500)
}

// Checker validates every exchange and webhook of an emulator against GitHub's
// descriptions and collects what differs.
type Checker struct {
	api      *fidelity.OpenAPI
	webhooks *fidelity.Webhooks

	mu         sync.Mutex
	mismatches []fidelity.Mismatch
	hookErrs   []string
	checked    int
	hooks      int
}

// NewChecker loads GitHub's OpenAPI description (only the emulated paths) and the
// webhook schema. Loading is the slow part; share one Checker's descriptions through
// Fork.
func NewChecker() (*Checker, error) {
	api, err := fidelity.LoadOpenAPI(fidelity.Paths(SpecPaths()...), fidelity.Skip(IsNonREST), fidelity.SkipResponse(injectedFault))
	if err != nil {
		return nil, fmt.Errorf("failed to load GitHub's OpenAPI description: %w", err)
	}
	hooks, err := fidelity.LoadWebhooks()
	if err != nil {
		return nil, fmt.Errorf("failed to load the webhook schema: %w", err)
	}
	return &Checker{api: api, webhooks: hooks}, nil
}

// Fork returns a checker that shares the loaded descriptions but keeps its own findings.
func (c *Checker) Fork() *Checker { return &Checker{api: c.api, webhooks: c.webhooks} }

// Wrap returns h with every request and response checked.
func (c *Checker) Wrap(h http.Handler) http.Handler {
	inner := c.api.Middleware(h, func(m fidelity.Mismatch) {
		c.mu.Lock()
		c.mismatches = append(c.mismatches, m)
		c.mu.Unlock()
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Enterprise Server's prefix (underAPIV3): the route under it is checked as the
		// description names it. A path that is not a REST route's below it is left as
		// it is, and the REST API answers it (404), as it would without the check.
		if rr, ok := underAPIV3(r); ok && !IsNonREST(rr) {
			r = rr
		}
		r = r.WithContext(faults.WithMark(r.Context()))
		if !IsNonREST(r) {
			c.mu.Lock()
			c.checked++
			c.mu.Unlock()
			if err := normalizeBody(r); err != nil {
				apierr.Write(w, apierr.BadJSON(err.Error()))
				return
			}
		}
		inner.ServeHTTP(w, r)
	})
}

// normalizeBody rewrites two request forms that GitHub accepts and real clients send,
// but that GitHub's description does not list, into the documented form, so the check
// judges the emulator rather than the client: a literal `null` body (ghinstallation
// sends it when no token options are set) is no body, and a bare array of label names
// (go-github's AddLabelsToIssue; the description's own text allows it) becomes
// {"labels": [...]}. The handler accepts both forms either way.
func normalizeBody(r *http.Request) error {
	if r.Body == nil || r.ContentLength == 0 {
		return nil
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, apierr.MaxBody+1))
	if err != nil {
		return err
	}
	trimmed := bytes.TrimSpace(raw)
	switch {
	case bytes.Equal(trimmed, []byte("null")):
		raw = nil
	case len(trimmed) > 0 && trimmed[0] == '[' && strings.HasSuffix(r.URL.Path, "/labels") &&
		(r.Method == http.MethodPost || r.Method == http.MethodPut):
		raw = append(append([]byte(`{"labels":`), trimmed...), '}')
	}
	r.Body = io.NopCloser(bytes.NewReader(raw))
	r.ContentLength = int64(len(raw))
	return nil
}

// CheckWebhook validates one webhook body; use it as Options.WebhookCheck.
func (c *Checker) CheckWebhook(event string, body []byte) {
	err := c.webhooks.Validate(event, body)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hooks++
	if err != nil {
		c.hookErrs = append(c.hookErrs, fmt.Sprintf("webhook %s: %v", event, err))
	}
}

// Mismatches returns what differed from GitHub's descriptions so far. With
// requests false, mismatches in the requests clients sent are left out: a test that
// sends malformed requests on purpose checks only what the emulator answered.
func (c *Checker) Mismatches(requests bool) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, m := range c.mismatches {
		if m.Phase == fidelity.PhaseRequest && !requests {
			continue
		}
		out = append(out, m.String())
	}
	return append(out, c.hookErrs...)
}

// Counts returns how many REST exchanges and webhook bodies were checked.
func (c *Checker) Counts() (exchanges, webhooks int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.checked, c.hooks
}
