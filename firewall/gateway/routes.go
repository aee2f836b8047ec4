package gateway

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/bumperdev/bumper/firewall/audit"
)

// serveAPI proxies /api/github/<path> to the GitHub API with the installation token.
func (g *Gateway) serveAPI(w http.ResponseWriter, r *http.Request, path string) {
	if g.api == nil {
		g.refuse(w, r, "github-api", http.StatusNotFound, "the GitHub API gateway is not configured")
		return
	}
	reason := "GitHub API gateway"
	if len(g.apiRules) > 0 {
		rule, ok := g.matchAPI(r.Method, path)
		if !ok {
			g.refuse(w, r, "github-api", http.StatusForbidden, fmt.Sprintf("%s %s is not on the GitHub API allowlist", r.Method, path))
			return
		}
		reason = "allowed by API rule " + rule
	}
	token := g.cfg.Token
	c := &call{g: g, up: g.api, path: path, reason: reason, setAuth: func(h http.Header) {
		h.Set("Authorization", "Bearer "+token)
	}}
	c.forward(w, r)
}

// serveModel proxies a model API call, refusing it once the run's budget is spent.
func (g *Gateway) serveModel(w http.ResponseWriter, r *http.Request, up *upstream, kind, path string) {
	if up == nil {
		g.refuse(w, r, kind, http.StatusNotFound, "the "+kind+" gateway is not configured")
		return
	}
	if g.cfg.Meter != nil && r.Method == http.MethodPost {
		if err := g.cfg.Meter.Check(); err != nil {
			g.refuseBudget(w, r, kind, err.Error())
			return
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
	c := &call{g: g, up: up, path: path, setAuth: setAuth, meter: g.cfg.Meter != nil, reason: kind + " gateway"}
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
	g.record(r, &audit.Entry{Time: time.Now(), Kind: kind, Target: r.URL.Path, Reason: msg, Status: status})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Bumper-Firewall", "budget")
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
		if rule.method != "*" && rule.method != method {
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
