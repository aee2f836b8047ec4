package firewall

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/bumperdev/bumper/firewall/internal/http1"
	"github.com/bumperdev/bumper/firewall/policy"
	"github.com/bumperdev/bumper/internal/denied"
)

// The request-shape rules: what a well-formed HTTP/1 request must also look like before
// the proxy looks at its destination. They are pure functions of the parsed head (no
// policy, DNS or I/O), each refusal a 400, but for userinfo in the target (403).

// refusal is a decision not to serve a request, with the status the client gets.
type refusal struct {
	status int
	reason string
	addr   string      // the address involved, if one was resolved
	kind   denied.Kind // what the client is told was refused (X-Bumper-Denied)
	host   string      // the normalised host refused, when the policy read one
	port   uint16
}

// Error lets a refusal travel through a dialer's error (credDial).
func (r *refusal) Error() string { return r.reason }

func badRequest(reason string) *refusal {
	return &refusal{status: http.StatusBadRequest, reason: reason, kind: denied.Malformed}
}

// refuseMethod is a 400 for a method, upgrade or protocol the proxy does not carry.
func refuseMethod(reason string) *refusal {
	return &refusal{status: http.StatusBadRequest, reason: reason, kind: denied.Method}
}

// policyRefusal is the 403 for a destination the policy refused.
func policyRefusal(d policy.Decision, port uint16) *refusal {
	return &refusal{status: http.StatusForbidden, reason: d.Reason, kind: d.Kind, host: d.Host, port: port}
}

// forwardTarget is where an absolute-URI request goes.
type forwardTarget struct {
	// authority is the target's authority as sent; on a refusal, what the audit line
	// names as the target.
	authority string
	host      string
	port      uint16
	path      []byte // origin form, starting with "/" (added when the target's path was empty)
}

// checkForward applies the shape rules of an absolute-URI (plain HTTP) request: an
// http:// target (https:// must use CONNECT) without fragment or userinfo, a host and
// port that parse, exactly one Host header agreeing with the target (none is allowed in
// HTTP/1.0), and no protocol upgrade.
func checkForward(h *http1.Head) (forwardTarget, *refusal) {
	target := h.Target()
	const scheme = "http://"
	if len(target) < len(scheme) || !http1.EqFold(target[:len(scheme)], scheme) {
		ft := forwardTarget{authority: http1.Clip(target)}
		if len(target) > 8 && http1.EqFold(target[:8], "https://") {
			return ft, refuseMethod("https:// request targets are refused: use CONNECT for TLS")
		}
		return ft, badRequest("request target must be an absolute http:// URI, a gateway path, or a CONNECT authority")
	}
	rest := target[len(scheme):]
	authEnd := bytes.IndexAny(rest, "/?#")
	if authEnd < 0 {
		authEnd = len(rest)
	}
	t := forwardTarget{authority: string(rest[:authEnd]), path: rest[authEnd:]}
	if bytes.IndexByte(t.path, '#') >= 0 {
		return t, badRequest("a fragment in the request target is refused")
	}
	if strings.IndexByte(t.authority, '@') >= 0 {
		return t, &refusal{status: http.StatusForbidden, reason: "userinfo (user@host) in the request target is refused", kind: denied.Credential}
	}
	var err error
	if t.host, t.port, err = splitHostPort(t.authority, policy.DefaultPlainPort); err != nil {
		return t, badRequest("bad request target: " + err.Error())
	}
	switch {
	case h.HostCount > 1:
		return t, badRequest("more than one Host header")
	case h.HostCount == 0 && !h.HTTP10:
		return t, badRequest("HTTP/1.1 request without a Host header")
	case h.HostCount == 1 && !sameAuthority(string(h.Host), t.host, t.port, policy.DefaultPlainPort):
		return t, badRequest("Host header disagrees with the request target")
	case h.Upgrade:
		return t, refuseMethod("protocol upgrades through plain HTTP are refused")
	}
	if len(t.path) == 0 || t.path[0] != '/' {
		// "http://a.test" and "http://a.test?x" have an empty path, which origin form
		// writes as "/" ("/?x"); a target without its "/" is malformed upstream.
		t.path = append([]byte("/"), t.path...)
	}
	return t, nil
}

// connectTarget is where a CONNECT tunnel goes.
type connectTarget struct {
	target string // the authority as sent, which the audit line names
	host   string
	port   uint16
}

// checkConnect applies the shape rules of a CONNECT request: an authority with a port,
// at most one Host header, agreeing with it, and no body.
func checkConnect(h *http1.Head) (connectTarget, *refusal) {
	t := connectTarget{target: string(h.Target())}
	var err error
	if t.host, t.port, err = splitHostPort(t.target, 0); err != nil {
		return t, badRequest("bad CONNECT target: " + err.Error())
	}
	switch {
	case h.HostCount > 1:
		return t, badRequest("more than one Host header")
	case h.HostCount == 1 && !sameAuthority(string(h.Host), t.host, t.port, 0):
		return t, badRequest("Host header disagrees with the CONNECT target")
	case h.HasBody():
		return t, badRequest("a CONNECT request may not have a body")
	}
	return t, nil
}

// checkTunnelStart refuses a CONNECT whose client sent bytes (buffered, already read
// past the head) before the tunnel was established: they were meant for someone else.
// It is checked after the policy, so a refused destination is said to be refused.
func checkTunnelStart(buffered int) *refusal {
	if buffered > 0 {
		return badRequest("bytes sent after CONNECT before the tunnel was established")
	}
	return nil
}

// splitHostPort splits an authority into host and port; the port is required when
// def is 0. IPv6 hosts keep their brackets so the policy sees the literal form.
func splitHostPort(auth string, def uint16) (string, uint16, error) {
	host, portStr := auth, ""
	if strings.HasPrefix(auth, "[") {
		end := strings.IndexByte(auth, ']')
		if end < 0 {
			return "", 0, fmt.Errorf("missing ']' in %q", auth)
		}
		host, portStr = auth[:end+1], auth[end+1:]
		if portStr != "" {
			if portStr[0] != ':' {
				return "", 0, fmt.Errorf("unexpected %q after ']'", portStr)
			}
			portStr = portStr[1:]
		} else if def == 0 {
			return "", 0, fmt.Errorf("authority %q has no port", auth)
		}
	} else if i := strings.LastIndexByte(auth, ':'); i >= 0 {
		if strings.IndexByte(auth[:i], ':') >= 0 {
			return "", 0, fmt.Errorf("IPv6 literal %q must be in brackets", auth)
		}
		host, portStr = auth[:i], auth[i+1:]
	} else if def == 0 {
		return "", 0, fmt.Errorf("authority %q has no port", auth)
	}
	if host == "" {
		return "", 0, fmt.Errorf("empty host in %q", auth)
	}
	if portStr == "" {
		if def == 0 {
			return "", 0, fmt.Errorf("authority %q has an empty port", auth)
		}
		return host, def, nil
	}
	n, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil || n == 0 || portStr[0] == '+' {
		return "", 0, fmt.Errorf("invalid port %q", portStr)
	}
	return host, uint16(n), nil
}

// sameAuthority compares a Host header with the target, as the origin would see them:
// case and one trailing dot do not matter, a missing port is the default one.
func sameAuthority(hostHeader string, host string, port uint16, def uint16) bool {
	h, p, err := splitHostPort(hostHeader, def)
	if err != nil || p != port {
		return false
	}
	return strings.EqualFold(strings.TrimSuffix(h, "."), strings.TrimSuffix(host, "."))
}
