package policy

import (
	"net/netip"

	"github.com/bumperdev/bumper/internal/denied"
)

// blockedV4 are IPv4 ranges the firewall never dials, with the reason given for each.
var blockedV4 = []struct {
	prefix netip.Prefix
	why    string
}{
	{netip.MustParsePrefix("169.254.169.254/32"), "cloud metadata address"},
	{netip.MustParsePrefix("100.100.100.200/32"), "cloud metadata address"},
	{netip.MustParsePrefix("168.63.129.16/32"), "cloud metadata address"},
	{netip.MustParsePrefix("0.0.0.0/8"), "'this network' range 0.0.0.0/8"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private range (RFC 1918)"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private range (RFC 1918)"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private range (RFC 1918)"},
	{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT range (RFC 6598)"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation range"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation range"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation range"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking range"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("255.255.255.255/32"), "broadcast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved range 240.0.0.0/4"},
}

var blockedV6 = []struct {
	prefix netip.Prefix
	why    string
}{
	{netip.MustParsePrefix("fd00:ec2::254/128"), "cloud metadata address"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("::/128"), "unspecified address"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "site-local (deprecated)"},
	{netip.MustParsePrefix("fc00::/7"), "unique local address (ULA)"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation range"},
	{netip.MustParsePrefix("100::/64"), "discard-only range"},
	{netip.MustParsePrefix("2001::/32"), "Teredo tunnelling range"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local-use NAT64 range"},
}

// Embedded-IPv4 forms: the IPv4 address inside is checked like a plain IPv4 address.
var (
	compatV4  = netip.MustParsePrefix("::/96")        // IPv4-compatible (deprecated)
	nat64     = netip.MustParsePrefix("64:ff9b::/96") // well-known NAT64 prefix
	sixToFour = netip.MustParsePrefix("2002::/16")    // 6to4
)

// AddrFilter refuses addresses the firewall must never dial, whatever name led to them.
type AddrFilter struct {
	own map[netip.Addr]struct{}
}

// NewAddrFilter returns a filter that also refuses own, the host's interface addresses
// (taken once at start by the caller, so this code needs no sockets).
func NewAddrFilter(own []netip.Addr) *AddrFilter {
	f := &AddrFilter{own: make(map[netip.Addr]struct{}, len(own))}
	for _, a := range own {
		f.own[a.WithZone("").Unmap()] = struct{}{}
	}
	return f
}

// Check decides whether a may be dialled.
func (f *AddrFilter) Check(a netip.Addr) Decision {
	if !a.IsValid() {
		return deny(denied.PrivateAddress, "", "invalid address")
	}
	a = a.WithZone("")
	if a.Is4In6() {
		if d := f.check4(a.Unmap()); !d.Allowed {
			return deny(denied.PrivateAddress, "", "IPv4-mapped %s: %s", a, d.Reason)
		}
		return allow("public address")
	}
	if a.Is6() {
		if v4, form, ok := embeddedV4(a); ok {
			if d := f.check4(v4); !d.Allowed {
				return deny(denied.PrivateAddress, "", "%s form %s: %s", form, a, d.Reason)
			}
		}
		if _, own := f.own[a]; own {
			return deny(denied.PrivateAddress, "", "address %s belongs to this host", a)
		}
		for _, b := range blockedV6 {
			if b.prefix.Contains(a) {
				return deny(denied.PrivateAddress, "", "address %s is refused: %s", a, b.why)
			}
		}
		if compatV4.Contains(a) {
			return deny(denied.PrivateAddress, "", "address %s is refused: IPv4-compatible IPv6 form", a)
		}
		if !a.IsGlobalUnicast() {
			return deny(denied.PrivateAddress, "", "address %s is refused: not a global unicast address", a)
		}
		return allow("public address")
	}
	return f.check4(a)
}

func (f *AddrFilter) check4(a netip.Addr) Decision {
	if _, own := f.own[a]; own {
		return deny(denied.PrivateAddress, "", "address %s belongs to this host", a)
	}
	for _, b := range blockedV4 {
		if b.prefix.Contains(a) {
			return deny(denied.PrivateAddress, "", "address %s is refused: %s", a, b.why)
		}
	}
	return allow("public address")
}

// embeddedV4 extracts the IPv4 address carried by IPv4-compatible, NAT64 and 6to4 forms.
func embeddedV4(a netip.Addr) (netip.Addr, string, bool) {
	b := a.As16()
	switch {
	case compatV4.Contains(a):
		return netip.AddrFrom4([4]byte(b[12:16])), "IPv4-compatible", true
	case nat64.Contains(a):
		return netip.AddrFrom4([4]byte(b[12:16])), "NAT64", true
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte(b[2:6])), "6to4", true
	}
	return netip.Addr{}, "", false
}
