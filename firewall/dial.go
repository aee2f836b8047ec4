package firewall

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"

	"github.com/bumperdev/bumper/firewall/policy"
	"github.com/bumperdev/bumper/internal/denied"
)

// resolve turns an allowed target into the addresses that may be dialed, in order.
// Overrides are trusted as given; every other address goes through the address filter.
func (s *Server) resolve(ctx context.Context, t policy.Target) ([]netip.AddrPort, *refusal) {
	if t.Addr.IsValid() {
		if d := s.opts.Filter.Check(t.Addr); !d.Allowed {
			return nil, &refusal{status: http.StatusForbidden, reason: d.Reason, addr: t.Addr.String(), kind: denied.PrivateAddress, host: t.Addr.String(), port: t.Port}
		}
		return []netip.AddrPort{netip.AddrPortFrom(t.Addr, t.Port)}, nil
	}
	if a, ok := s.opts.Overrides[t.Name]; ok {
		return []netip.AddrPort{netip.AddrPortFrom(a, t.Port)}, nil
	}
	addrs, err := s.resolver.LookupNetIP(ctx, "ip", t.Name)
	if err != nil || len(addrs) == 0 {
		return nil, &refusal{status: http.StatusBadGateway, reason: fmt.Sprintf("could not resolve %s", t.Name), kind: denied.Unreachable, host: t.Name, port: t.Port}
	}
	out := make([]netip.AddrPort, 0, len(addrs))
	var first *refusal
	for _, a := range addrs {
		if d := s.opts.Filter.Check(a); !d.Allowed {
			if first == nil {
				first = &refusal{status: http.StatusForbidden, reason: fmt.Sprintf("%s resolves to a refused address: %s", t.Name, d.Reason), addr: a.String(),
					kind: denied.PrivateAddress, host: t.Name, port: t.Port}
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
	return nil, netip.AddrPort{}, &refusal{status: http.StatusBadGateway, reason: fmt.Sprintf("could not connect to upstream: %v", lastErr),
		addr: addrs[len(addrs)-1].String(), kind: denied.Unreachable}
}
