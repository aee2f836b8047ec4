package gateway

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/bumperdev/bumper/firewall/audit"
	"github.com/bumperdev/bumper/firewall/meter"
	"github.com/bumperdev/bumper/internal/denied"
)

// serveAPI proxies /api/github/<path> to the GitHub API with the installation token.
// The agent's API is read-only and off unless the repository opts in: in order, a
// request is refused when the gateway has no rules (api_allow), when a path segment
// holds a character the matchers might not read as GitHub does (checkAPIChars, 400),
// when it is on the refusal table (hostonly.go: any write, and reads of stranger-written
// text, forks' code, search, alerts and secrets), when it is outside the run's repository
// (repositoryScope), or when no rule allows it.
func (g *Gateway) serveAPI(w http.ResponseWriter, r *http.Request, path string) {
	if g.api == nil {
		g.refuse(w, r, "github-api", http.StatusNotFound, "the GitHub API gateway is not configured")
		return
	}
	if len(g.apiRules) == 0 {
		g.refuse(w, r, "github-api", http.StatusForbidden, "the agent has no GitHub API: nothing is forwarded unless the repository opts in to read-only calls (gateways.api_allow)")
		return
	}
	if msg := checkAPIChars(path); msg != "" {
		g.refuse(w, r, "github-api", http.StatusBadRequest, msg)
		return
	}
	if ref := refusedAPI(r.Method, path, r.URL.RawQuery); ref != nil {
		g.refuse(w, r, "github-api", http.StatusForbidden, fmt.Sprintf("%s %s is refused whatever api_allow says [%s]: %s", r.Method, path, ref.name, ref.why))
		return
	}
	if name, why := g.repositoryScope(path); name != "" {
		g.refuse(w, r, "github-api", http.StatusForbidden, fmt.Sprintf("%s %s is refused whatever api_allow says [%s]: %s", r.Method, path, name, why))
		return
	}
	rule, ok := g.matchAPI(r.Method, path)
	if !ok {
		g.refuse(w, r, "github-api", http.StatusForbidden, fmt.Sprintf("%s %s is not on the GitHub API allowlist", r.Method, path))
		return
	}
	token := g.cfg.Token
	c := &call{g: g, up: g.api, path: path, reason: "allowed by API rule " + rule, setAuth: func(h http.Header) {
		h.Set("Authorization", "Bearer "+token)
	}}
	c.forward(w, r)
}

// serveModel proxies a model API call: only the endpoints the harnesses use, only while
// the run's budget lasts, with the body read first so that the call can be charged its
// worst case if its response reports no usage, and refused if it asks for what the
// firewall does not allow (server tools, dearer tiers, the 1M-token context beta). A
// call that generates tokens holds its worst case against the budget until it ends, and
// is refused when that does not fit in what is left.
func (g *Gateway) serveModel(w http.ResponseWriter, r *http.Request, up *upstream, kind, path string) {
	if up == nil {
		g.refuse(w, r, kind, http.StatusNotFound, "the "+kind+" gateway is not configured")
		return
	}
	ep, ok := findModelEndpoint(kind, r.Method, path)
	if !ok {
		g.refuse(w, r, kind, http.StatusForbidden, fmt.Sprintf("%s %s is not forwarded: the %s gateway forwards only %s (the endpoints the harnesses use)", r.Method, path, kind, modelEndpointList(kind)))
		return
	}
	// Every call is checked, whatever its method: once the budget is spent the run has
	// no model API at all.
	if g.cfg.Meter != nil {
		if err := g.cfg.Meter.Check(); err != nil {
			g.refuseBudget(w, r, kind, err.Error())
			return
		}
	}
	var charge *meter.Reservation
	if r.Method == http.MethodPost {
		if beta := longContextBeta(r.Header); kind == "anthropic" && beta != "" {
			g.refuse(w, r, kind, http.StatusForbidden, fmt.Sprintf("anthropic-beta %q is refused [long-context]: the 1M-token context window bills input beyond 200k tokens at long-context rates (2x input, 1.5x output) that the price table does not charge; work within the standard 200k window", beta))
			return
		}
		mr, ref := readModelRequest(r, kind, ep)
		if ref != nil {
			g.refuse(w, r, kind, ref.status, ref.msg)
			return
		}
		if ep.generates && g.cfg.Meter != nil {
			// Last before forwarding: from here the call is settled or released
			// whatever happens (call.forward).
			res, err := g.cfg.Meter.Reserve(mr)
			if err != nil {
				g.refuseBudget(w, r, kind, err.Error())
				return
			}
			charge = res
		}
	}
	var setAuth func(http.Header)
	if kind == "anthropic" {
		key := g.cfg.AnthropicKey
		bearer := r.Header.Get("Authorization") != "" && r.Header.Get("X-Api-Key") == ""
		setAuth = func(h http.Header) {
			if bearer {
				h.Set("Authorization", "Bearer "+key)
			} else {
				h.Set("X-Api-Key", key)
			}
		}
	} else {
		key := g.cfg.OpenAIKey
		setAuth = func(h http.Header) { h.Set("Authorization", "Bearer "+key) }
	}
	c := &call{g: g, up: up, path: path, setAuth: setAuth, charge: charge, reason: kind + " gateway"}
	c.forward(w, r)
}

// refuseBudget answers in the API's own error shape so the harness shows the message.
func (g *Gateway) refuseBudget(w http.ResponseWriter, r *http.Request, kind, msg string) {
	msg = "bumper: " + msg
	var body any
	status := http.StatusPaymentRequired
	if kind == "anthropic" {
		body = map[string]any{"type": "error", "error": map[string]any{"type": "billing_error", "message": msg}}
	} else {
		// OpenAI reports an exhausted quota as 429 insufficient_quota, which clients do
		// not retry.
		status = http.StatusTooManyRequests
		body = map[string]any{"error": map[string]any{"message": msg, "type": "insufficient_quota", "param": nil, "code": "insufficient_quota"}}
	}
	b, _ := json.Marshal(body)
	g.record(r, &audit.Entry{Time: time.Now(), Kind: kind, Target: r.URL.Path, Reason: msg, Status: status, Denied: string(denied.Budget)})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Bumper-Firewall", "budget")
	w.Header().Set(denied.Header, string(denied.Budget))
	w.WriteHeader(status)
	w.Write(b)
}

// apiRule is one "METHOD /path" allowlist entry for the GitHub API gateway.
type apiRule struct {
	text   string
	method string
	segs   []string
}

func parseAPIRule(s string) (apiRule, error) {
	method, path, ok := strings.Cut(strings.TrimSpace(s), " ")
	path = strings.TrimSpace(path)
	if !ok || method == "" || !strings.HasPrefix(path, "/") {
		return apiRule{}, fmt.Errorf("failed to parse GitHub API rule %q: want \"METHOD /path\" (segments may be * or a final **)", s)
	}
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for i, sg := range segs {
		if sg == "**" && i != len(segs)-1 {
			return apiRule{}, fmt.Errorf("failed to parse GitHub API rule %q: ** may only be the last segment", s)
		}
	}
	return apiRule{text: s, method: strings.ToUpper(method), segs: segs}, nil
}

func (g *Gateway) matchAPI(method, path string) (string, bool) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for _, rule := range g.apiRules {
		// HEAD is a GET without the body: a rule that allows one allows the other.
		if rule.method != "*" && rule.method != method && !(rule.method == http.MethodGet && method == http.MethodHead) {
			continue
		}
		if matchSegs(rule.segs, segs) {
			return rule.text, true
		}
	}
	return "", false
}

func matchSegs(pattern, segs []string) bool {
	for i, p := range pattern {
		if p == "**" {
			return len(segs) > i
		}
		if i >= len(segs) || (p != "*" && p != segs[i]) {
			return false
		}
	}
	return len(segs) == len(pattern)
}

func basicToken(token string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+token))
}
