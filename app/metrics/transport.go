package metrics

import (
	"net/http"
	"strconv"
	"strings"
)

// Transport counts every request to GitHub that passes through it and keeps the
// rate-limit budget GitHub reports. serve puts it below go-githubapp's cache and
// installation-token middleware, so a request counts once when it reaches GitHub (a
// revalidated read shows as 3xx, and costs nothing against the limit), the App's own
// token mints included.
func (m *Metrics) Transport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return &transport{m: m, next: next}
}

type transport struct {
	m    *Metrics
	next http.RoundTripper
}

func (t *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err != nil {
		t.m.api.WithLabelValues(method(r.Method), "error").Inc()
		return resp, err
	}
	t.m.api.WithLabelValues(method(r.Method), statusClass(resp.StatusCode)).Inc()
	if v := resp.Header.Get("X-RateLimit-Remaining"); v != "" {
		if n, perr := strconv.ParseFloat(v, 64); perr == nil {
			if acct := account(r); acct != "" {
				t.m.remaining.WithLabelValues(acct, resource(resp.Header.Get("X-RateLimit-Resource"))).Set(n)
			}
		}
	}
	return resp, nil
}

// method bounds the method label to HTTP's own methods.
func method(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return m
	case "":
		return http.MethodGet
	}
	return "other"
}

func statusClass(code int) string {
	if code < 100 || code > 599 {
		return "other"
	}
	return strconv.Itoa(code/100) + "xx"
}

// resource bounds the resource label to GitHub's rate-limit resources.
func resource(r string) string {
	switch r {
	case "core", "graphql", "search", "code_search", "integration_manifest", "source_import",
		"code_scanning_upload", "actions_runner_registration", "scim", "dependency_snapshots",
		"audit_log", "code_scanning_autofix":
		return r
	case "":
		return "core"
	}
	return "other"
}

// account names whose budget a response reports. GitHub keeps one budget for the App
// (requests with its JWT) and one per installation, that is per account the App is
// installed on; an installation's request under /repos/OWNER/ or /orgs/OWNER/ spends
// OWNER's. Other requests with an installation token (its own revocation, say) name no
// account and leave the gauge alone: a guess would mix two budgets in one series. The
// label's values are bounded by the App's installations.
func account(r *http.Request) string {
	if isJWT(r.Header.Get("Authorization")) {
		return "app"
	}
	p := strings.TrimPrefix(r.URL.EscapedPath(), "/api/v3")
	for _, prefix := range []string{"/repos/", "/orgs/"} {
		if rest, ok := strings.CutPrefix(p, prefix); ok {
			owner, _, _ := strings.Cut(rest, "/")
			return strings.ToLower(owner)
		}
	}
	return ""
}

// isJWT tells the App's JWT (three dot-separated parts) from an installation token
// (ghs_..., no dots).
func isJWT(auth string) bool {
	_, tok, ok := strings.Cut(auth, " ")
	return ok && strings.Count(tok, ".") == 2
}
