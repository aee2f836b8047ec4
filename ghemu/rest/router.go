package rest

import (
	"net/http"
	"net/url"
	"strings"
)

// router matches GitHub-style path templates ("/repos/{owner}/{repo}/git/ref/{ref...}").
// net/http.ServeMux cannot hold GitHub's route set: patterns such as
// "/repos/{o}/{r}/issues/comments/{id}" and "/repos/{o}/{r}/issues/{n}/comments" overlap
// with neither more specific, which ServeMux rejects. Routes here are tried in the order
// they were added, so the literal one wins because it is registered first.
type router struct {
	routes []route
}

type route struct {
	method   string
	template string
	segs     []string
	handler  handlerFunc
	need     need
}

// handlerFunc serves one matched route. params holds the template's variables, already
// unescaped.
type handlerFunc func(w http.ResponseWriter, r *http.Request, c *call)

func (rt *router) add(method, template string, n need, h handlerFunc) {
	rt.routes = append(rt.routes, route{
		method:   method,
		template: template,
		segs:     strings.Split(strings.Trim(template, "/"), "/"),
		handler:  h,
		need:     n,
	})
}

// match finds the route for method and path. An unknown method on a known path is not
// found either: GitHub answers it with 404, not 405.
func (rt *router) match(method, escapedPath string) (*route, map[string]string) {
	parts := strings.Split(strings.Trim(escapedPath, "/"), "/")
	for i := range rt.routes {
		r := &rt.routes[i]
		if r.method != method && !(method == http.MethodHead && r.method == http.MethodGet) {
			continue
		}
		if params, ok := matchSegs(r.segs, parts); ok {
			return r, params
		}
	}
	return nil, nil
}

func matchSegs(segs, parts []string) (map[string]string, bool) {
	params := map[string]string{}
	for i, s := range segs {
		if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "...}") {
			// A rest wildcard takes every part but those the literal tail needs, so
			// "/commits/{ref...}/check-runs" matches refs with slashes.
			tail := len(segs) - i - 1
			if len(parts)-tail <= i {
				return nil, false
			}
			rest := make([]string, 0, len(parts)-tail-i)
			for _, p := range parts[i : len(parts)-tail] {
				u, err := url.PathUnescape(p)
				if err != nil {
					return nil, false
				}
				rest = append(rest, u)
			}
			params[s[1:len(s)-4]] = strings.Join(rest, "/")
			tailParams, ok := matchSegs(segs[i+1:], parts[len(parts)-tail:])
			if !ok {
				return nil, false
			}
			for k, v := range tailParams {
				params[k] = v
			}
			return params, true
		}
		if i >= len(parts) {
			return nil, false
		}
		if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
			u, err := url.PathUnescape(parts[i])
			if err != nil || u == "" {
				return nil, false
			}
			params[s[1:len(s)-1]] = u
			continue
		}
		if s != parts[i] {
			return nil, false
		}
	}
	if len(parts) != len(segs) {
		return nil, false
	}
	return params, true
}
