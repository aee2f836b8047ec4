// Package policy decides, without touching the network, whether the firewall may reach a
// host name and port, and whether an address a name resolved to may be dialled.
package policy

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/bumperdev/bumper/internal/denied"
	"github.com/bumperdev/bumper/internal/hostpattern"
	"github.com/bumperdev/bumper/internal/textcut"
)

// Mode is how the client asked to reach a host; it selects the default port.
type Mode int

const (
	// Connect is an HTTP CONNECT tunnel; an entry without ports allows 443.
	Connect Mode = iota
	// Plain is an absolute-URI HTTP request; an entry without ports allows 80.
	Plain
)

// Default ports for entries that list none.
const (
	DefaultConnectPort = 443
	DefaultPlainPort   = 80
)

// NormalizeName lowercases a host name, drops one trailing dot and checks that it is a
// plausible DNS name (hostpattern.NormalizeName).
func NormalizeName(host string) (string, error) { return hostpattern.NormalizeName(host) }

// ParseIPLiteral reports whether a normalised name would be taken as an IPv4 address by
// a URL parser or inet_aton, and the address it denotes (hostpattern.ParseIPLiteral).
func ParseIPLiteral(name string) (netip.Addr, bool) { return hostpattern.ParseIPLiteral(name) }

// Decision is the outcome of one check; Reason says why, for the client and the audit log.
// A refusal also says its Kind and, when the host was read as a valid name or address,
// Host (normalised), so the firewall names both without reading Reason.
type Decision struct {
	Allowed bool
	Reason  string
	Kind    denied.Kind
	Host    string
}

func allow(reason string) Decision { return Decision{Allowed: true, Reason: reason} }

func deny(kind denied.Kind, host string, format string, args ...any) Decision {
	return Decision{Reason: fmt.Sprintf(format, args...), Kind: kind, Host: host}
}

// entry is one allow or deny pattern: an exact name, a `*.suffix`, or an IP literal.
type entry struct {
	text     string // as written, for reasons
	allowed  string // the reason given when this entry allows a request
	name     string // exact name, or the suffix with its leading dot for wildcards
	wildcard bool
	addr     netip.Addr // valid for IP-literal entries
	ports    []uint16   // nil: the mode's default
}

// Policy is an allowlist with an optional deny list. The zero value denies everything.
type Policy struct {
	allow []entry
	deny  []entry
	exact map[string]int // exact allow names → index in allow, for the common case
}

// New builds a policy. Entries are `name`, `*.suffix`, an IP literal (`203.0.113.7`,
// `[2001:db8::1]`), each optionally followed by `:port[,port...]`. Deny entries are checked
// first; their ports, if given, limit the deny to those ports.
func New(allowList, denyList []string) (*Policy, error) {
	p := &Policy{exact: map[string]int{}}
	for _, s := range allowList {
		e, err := parseEntry(s)
		if err != nil {
			return nil, fmt.Errorf("failed to parse allow entry %q: %w", s, err)
		}
		if !e.wildcard && !e.addr.IsValid() {
			if _, dup := p.exact[e.name]; !dup {
				p.exact[e.name] = len(p.allow)
			}
		}
		p.allow = append(p.allow, e)
	}
	for _, s := range denyList {
		e, err := parseEntry(s)
		if err != nil {
			return nil, fmt.Errorf("failed to parse deny entry %q: %w", s, err)
		}
		p.deny = append(p.deny, e)
	}
	return p, nil
}

func parseEntry(s string) (entry, error) {
	e := entry{text: s, allowed: "allowed by " + s}
	p, err := hostpattern.Parse(s)
	if err != nil {
		return e, err
	}
	e.wildcard, e.addr, e.ports = p.Wildcard, p.Addr, p.Ports
	if p.Wildcard {
		e.name = "." + p.Name
	} else {
		e.name = p.Name
	}
	return e, nil
}

func (e *entry) matchesName(name string) bool {
	if e.addr.IsValid() {
		return false
	}
	if e.wildcard {
		return len(name) > len(e.name) && strings.HasSuffix(name, e.name)
	}
	return name == e.name
}

func (e *entry) allowsPort(port uint16, mode Mode) bool {
	if e.ports == nil {
		return port == defaultPort(mode)
	}
	return slices.Contains(e.ports, port)
}

// denies reports whether a deny entry covers port: without ports it covers all of them.
func (e *entry) denies(port uint16) bool {
	return e.ports == nil || slices.Contains(e.ports, port)
}

func defaultPort(m Mode) uint16 {
	if m == Connect {
		return DefaultConnectPort
	}
	return DefaultPlainPort
}

// Target is a host the policy accepted: a normalised name, or an IP literal that was
// explicitly allowed (then Addr is valid and no lookup is needed).
type Target struct {
	Name string
	Addr netip.Addr
	Port uint16
}

// CheckHost decides whether host:port may be reached in mode. host is what the client
// sent (URL host or CONNECT authority, brackets allowed for IPv6).
func (p *Policy) CheckHost(host string, port uint16, mode Mode) (Target, Decision) {
	if port == 0 {
		return Target{}, deny(denied.Port, "", "port 0 is not a valid destination port")
	}
	if strings.HasPrefix(host, "[") || strings.IndexByte(host, ':') >= 0 || strings.IndexByte(host, '%') >= 0 {
		return p.checkIPv6Literal(host, port, mode)
	}
	name, err := NormalizeName(host)
	if err != nil {
		return Target{}, deny(denied.Malformed, "", "host %q refused: %v", clip(host), err)
	}
	if a, isIP := ParseIPLiteral(name); isIP {
		if !a.IsValid() {
			return Target{}, deny(denied.PrivateAddress, "", "host %q looks like an IPv4 address but is not a valid one", name)
		}
		if a.String() != name {
			return Target{}, deny(denied.PrivateAddress, "", "IP literal %q in a non-canonical form (%s) is refused", name, a)
		}
		return p.checkAddrLiteral(a, port, mode)
	}
	t := Target{Name: name, Port: port}
	for i := range p.deny {
		if e := &p.deny[i]; e.matchesName(name) && e.denies(port) {
			return t, deny(denied.Host, name, "%s is on the deny list (%s)", name, e.text)
		}
	}
	if i, ok := p.exact[name]; ok && p.allow[i].allowsPort(port, mode) {
		return t, allow(p.allow[i].allowed)
	}
	nameMatched := ""
	for i := range p.allow {
		e := &p.allow[i]
		if !e.matchesName(name) {
			continue
		}
		if e.allowsPort(port, mode) {
			return t, allow(e.allowed)
		}
		nameMatched = e.text
	}
	if nameMatched != "" {
		return t, deny(denied.Port, name, "port %d is not allowed for %s (entry %s)", port, name, nameMatched)
	}
	return t, deny(denied.Host, name, "%s is not on the allowlist", name)
}

func (p *Policy) checkIPv6Literal(host string, port uint16, mode Mode) (Target, Decision) {
	inner := strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.IndexByte(inner, '%') >= 0 {
		return Target{}, deny(denied.PrivateAddress, "", "IP literal %q with a zone id is refused", clip(host))
	}
	a, err := netip.ParseAddr(inner)
	if err != nil || !a.Is6() {
		return Target{}, deny(denied.Malformed, "", "host %q is neither a valid name nor a valid IPv6 literal", clip(host))
	}
	return p.checkAddrLiteral(a, port, mode)
}

func (p *Policy) checkAddrLiteral(a netip.Addr, port uint16, mode Mode) (Target, Decision) {
	t := Target{Addr: a, Port: port}
	key := a.Unmap()
	for i := range p.deny {
		if e := &p.deny[i]; e.addr == key && e.denies(port) {
			return t, deny(denied.PrivateAddress, a.String(), "IP literal %s is on the deny list", a)
		}
	}
	for i := range p.allow {
		if e := &p.allow[i]; e.addr == key {
			if e.allowsPort(port, mode) {
				return t, allow("IP literal allowed by " + e.text)
			}
			return t, deny(denied.Port, a.String(), "port %d is not allowed for IP literal %s", port, a)
		}
	}
	return t, deny(denied.PrivateAddress, a.String(), "IP literal %s is refused: only names on the allowlist may be reached (list the address to allow it)", a)
}

// clip keeps reasons short when a client sends an enormous host.
func clip(s string) string { return textcut.Clip(s, 80, "...") }
