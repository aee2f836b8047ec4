package fidelity

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
)

// greedyParams are the path parameters GitHub lets span several segments: a git ref
// ("heads/feature/x", which go-github sends unescaped to /git/ref/{ref} and to
// /commits/{ref}/check-runs), a file path under /contents/{path}, and a "base...head"
// comparison whose branch names hold slashes. kin-openapi's routers match one segment
// per parameter and would report these real requests as unknown routes; that is why
// this package matches paths itself.
var greedyParams = []string{"ref", "path", "basehead"}

// pathRoute is one path template of GitHub's description.
type pathRoute struct {
	template string
	segments []string // literal segments; "" where a parameter stands
	params   []string // parameter names; "" where a literal stands
	literals int      // number of literal segments
	greedyAt int      // index of the parameter that may span segments; -1 if none
	item     *openapi3.PathItem
}

// pathRouter maps a request path (served at the root of the emulator's base URL, whatever
// its host) to a path template. It knows every template of the description, including
// those that were pruned away, so it can tell "not a GitHub route" from "not loaded".
type pathRouter struct {
	doc    *openapi3.T
	routes []pathRoute
}

// errRouteNotLoaded is a GitHub route whose path the caller did not ask LoadOpenAPI for.
var errRouteNotLoaded = errors.New("route not loaded")

func newPathRouter(doc *openapi3.T, templates []string) *pathRouter {
	r := &pathRouter{doc: doc}
	for _, t := range templates {
		parts := strings.Split(strings.TrimPrefix(t, "/"), "/")
		pr := pathRoute{template: t, segments: make([]string, len(parts)), params: make([]string, len(parts)), greedyAt: -1}
		for i, p := range parts {
			if strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}") {
				pr.params[i] = p[1 : len(p)-1]
				if pr.greedyAt < 0 && slices.Contains(greedyParams, pr.params[i]) {
					pr.greedyAt = i
				}
			} else {
				pr.segments[i] = p
				pr.literals++
			}
		}
		pr.item = doc.Paths.Value(t)
		r.routes = append(r.routes, pr)
	}
	return r
}

// match finds the template for an escaped request path, and the parameter values
// (percent-decoded). When several templates match, the one with more literal segments
// wins (/issues/comments is not issue "comments"; /commits/{ref}/check-runs is not the
// commit "abc/check-runs"), then the one whose first literal comes earlier.
func (r *pathRouter) match(escapedPath string) (*pathRoute, map[string]string, error) {
	parts := strings.Split(strings.TrimPrefix(escapedPath, "/"), "/")
	decoded := make([]string, len(parts))
	for i, p := range parts {
		d, err := url.PathUnescape(p)
		if err != nil {
			return nil, nil, fmt.Errorf("path segment %q is not valid percent-encoding: %w", p, err)
		}
		decoded[i] = d
	}
	var best *pathRoute
	var bestParams map[string]string
	for i := range r.routes {
		cand := &r.routes[i]
		params := cand.bind(decoded)
		if params == nil {
			continue
		}
		if best == nil || cand.beats(best) {
			best, bestParams = cand, params
		}
	}
	return best, bestParams, nil
}

// bind returns the parameter values if the decoded segments fit the template, else nil.
// Literals match one segment exactly; parameters match one non-empty segment, except
// the greedy one, which takes every segment the literals after it leave over.
func (p *pathRoute) bind(decoded []string) map[string]string {
	extra := len(decoded) - len(p.segments)
	if extra < 0 || (extra > 0 && p.greedyAt < 0) {
		return nil
	}
	// First check, without allocating: most templates fail on a literal.
	for i := range p.segments {
		span := p.span(decoded, i, extra)
		literal := p.params[i] == ""
		if (literal && span[0] != p.segments[i]) || (!literal && slices.Contains(span, "")) {
			return nil
		}
	}
	params := make(map[string]string, len(p.segments)-p.literals)
	for i, name := range p.params {
		if name != "" {
			params[name] = strings.Join(p.span(decoded, i, extra), "/")
		}
	}
	return params
}

// span returns the request segments that template segment i covers, given that the
// request has extra more segments than the template.
func (p *pathRoute) span(decoded []string, i, extra int) []string {
	switch {
	case p.greedyAt < 0 || i < p.greedyAt:
		return decoded[i : i+1]
	case i == p.greedyAt:
		return decoded[i : i+1+extra]
	default:
		return decoded[i+extra : i+1+extra]
	}
}

// beats reports whether p is a more specific match than q for the same request.
func (p *pathRoute) beats(q *pathRoute) bool {
	if p.literals != q.literals {
		return p.literals > q.literals
	}
	for i := range min(len(p.segments), len(q.segments)) {
		pl, ql := p.params[i] == "", q.params[i] == ""
		if pl != ql {
			return pl
		}
	}
	return p.greedyAt < 0 && q.greedyAt >= 0
}

// findRoute resolves a request to its operation. HEAD is looked up as GET, as GitHub
// answers HEAD wherever it answers GET.
func (r *pathRouter) findRoute(req *http.Request) (*routers.Route, map[string]string, error) {
	pr, params, err := r.match(req.URL.EscapedPath())
	if err != nil {
		return nil, nil, err
	}
	if pr == nil {
		return nil, nil, fmt.Errorf("%s %s is not a route of GitHub's REST API: the emulator must serve only real GitHub routes (or the caller must declare the path non-REST with fidelity.Skip)", req.Method, req.URL.Path)
	}
	if pr.item == nil {
		return nil, nil, fmt.Errorf("%w: %s is GitHub's %s, which was not among the paths given to fidelity.Paths; add it there", errRouteNotLoaded, req.URL.Path, pr.template)
	}
	method := req.Method
	if method == http.MethodHead {
		method = http.MethodGet
	}
	op := pr.item.GetOperation(method)
	if op == nil {
		var allowed []string
		for m := range pr.item.Operations() {
			allowed = append(allowed, m)
		}
		slices.Sort(allowed)
		return nil, nil, fmt.Errorf("GitHub's API has no %s on %s (it has %s)", req.Method, pr.template, strings.Join(allowed, ", "))
	}
	return &routers.Route{Spec: r.doc, Path: pr.template, PathItem: pr.item, Method: method, Operation: op}, params, nil
}
