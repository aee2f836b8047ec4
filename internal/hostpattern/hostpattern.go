// Package hostpattern is the syntax of an allowlist entry, the one the firewall's policy
// enforces: a host name, a `*.suffix` or an IP literal, optionally followed by
// `:port[,port...]`. The firewall (firewall/policy) and the repository configuration
// (internal/repoconfig, whose hosts the App checks too and which may not import the
// firewall) parse entries with this one parser, so a file that parses is one the
// firewall accepts.
package hostpattern

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// MaxNameLen is the DNS limit for a name in text form (without the trailing dot).
const MaxNameLen = 253

// Entry is one parsed allowlist entry.
type Entry struct {
	// Name is the normalised host name (lower case, no trailing dot); for a wildcard,
	// the suffix without its "*.". Empty for an IP literal.
	Name     string
	Wildcard bool
	// Addr is valid for an IP-literal entry (unmapped, without a zone).
	Addr netip.Addr
	// Ports are the entry's ports; nil means the mode's default.
	Ports []uint16
}

// String is the entry in canonical form: the same entry always reads the same.
func (e Entry) String() string {
	var b strings.Builder
	switch {
	case e.Addr.Is6():
		b.WriteString("[" + e.Addr.String() + "]")
	case e.Addr.IsValid():
		b.WriteString(e.Addr.String())
	case e.Wildcard:
		b.WriteString("*." + e.Name)
	default:
		b.WriteString(e.Name)
	}
	for i, p := range e.Ports {
		if i == 0 {
			b.WriteByte(':')
		} else {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(int(p)))
	}
	return b.String()
}

// Parse reads one entry: `name`, `*.suffix` or an IP literal (`203.0.113.7`,
// `[2001:db8::1]`), each optionally followed by `:port[,port...]`.
func Parse(s string) (Entry, error) {
	var e Entry
	hostPart, portPart, err := splitEntry(strings.TrimSpace(s))
	if err != nil {
		return e, err
	}
	if portPart != "" {
		for _, ps := range strings.Split(portPart, ",") {
			n, err := strconv.ParseUint(ps, 10, 16)
			if err != nil || n == 0 {
				return e, fmt.Errorf("port %q is not a number from 1 to 65535", ps)
			}
			e.Ports = append(e.Ports, uint16(n))
		}
	}
	if a, err := netip.ParseAddr(strings.Trim(hostPart, "[]")); err == nil {
		if a.Zone() != "" {
			return e, fmt.Errorf("IP entries may not carry a zone id")
		}
		e.Addr = a.Unmap()
		return e, nil
	}
	if rest, ok := strings.CutPrefix(hostPart, "*."); ok {
		e.Wildcard = true
		hostPart = rest
	}
	name, err := NormalizeName(hostPart)
	if err != nil {
		return e, err
	}
	if _, isIP := ParseIPLiteral(name); isIP {
		return e, fmt.Errorf("write IP entries in canonical form (for example 192.0.2.1)")
	}
	e.Name = name
	return e, nil
}

// splitEntry separates `host:ports`; bare IPv6 entries must be bracketed to carry ports.
func splitEntry(s string) (host, ports string, err error) {
	if s == "" {
		return "", "", fmt.Errorf("empty entry")
	}
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", "", fmt.Errorf("missing ']' in IPv6 entry")
		}
		host, rest := s[:end+1], s[end+1:]
		if rest == "" {
			return host, "", nil
		}
		if !strings.HasPrefix(rest, ":") {
			return "", "", fmt.Errorf("unexpected %q after ']'", rest)
		}
		return host, rest[1:], nil
	}
	if strings.Count(s, ":") > 1 {
		return s, "", nil // a bare IPv6 address
	}
	host, ports, _ = strings.Cut(s, ":")
	return host, ports, nil
}
