package firewall

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/bumperdev/bumper/firewall/policy"
)

// refusal is a decision not to serve a request, with the status the client gets.
type refusal struct {
	status int
	reason string
	addr   string // the address involved, if one was resolved
}

// resolve turns an allowed target into the addresses that may be dialled, in order.
// Overrides are trusted as given; every other address goes through the address filter.
func (s *Server) resolve(ctx context.Context, t policy.Target) ([]netip.AddrPort, *refusal) {
	if t.Addr.IsValid() {
		if d := s.opts.Filter.Check(t.Addr); !d.Allowed {
			return nil, &refusal{http.StatusForbidden, d.Reason, t.Addr.String()}
		}
		return []netip.AddrPort{netip.AddrPortFrom(t.Addr, t.Port)}, nil
	}
	if a, ok := s.opts.Overrides[t.Name]; ok {
		return []netip.AddrPort{netip.AddrPortFrom(a, t.Port)}, nil
	}
	addrs, err := s.resolver.LookupNetIP(ctx, "ip", t.Name)
	if err != nil || len(addrs) == 0 {
		return nil, &refusal{http.StatusBadGateway, fmt.Sprintf("could not resolve %s", t.Name), ""}
	}
	out := make([]netip.AddrPort, 0, len(addrs))
	var first *refusal
	for _, a := range addrs {
		if d := s.opts.Filter.Check(a); !d.Allowed {
			if first == nil {
				first = &refusal{http.StatusForbidden, fmt.Sprintf("%s resolves to a refused address: %s", t.Name, d.Reason), a.String()}
			}
			continue
		}
		out = append(out, netip.AddrPortFrom(a.Unmap(), t.Port))
	}
	if len(out) == 0 {
		return nil, first
	}
	return out, nil
}

// dial connects to the first address that answers. It dials the addresses themselves,
// never the name, so what was checked is what is reached.
func (s *Server) dial(ctx context.Context, addrs []netip.AddrPort) (*net.TCPConn, netip.AddrPort, *refusal) {
	// No TCP keep-alive: idle connections are bounded by the proxy's own timeouts, and
	// the setsockopt calls would cost more than the rest of a CONNECT's set-up.
	d := net.Dialer{Timeout: s.opts.DialTimeout, KeepAlive: -1}
	var lastErr error
	for _, ap := range addrs {
		c, err := d.DialContext(ctx, "tcp", ap.String())
		if err == nil {
			return c.(*net.TCPConn), ap, nil
		}
		lastErr = err
	}
	return nil, netip.AddrPort{}, &refusal{http.StatusBadGateway, fmt.Sprintf("could not connect to upstream: %v", lastErr), addrs[len(addrs)-1].String()}
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
