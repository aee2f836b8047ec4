// Package denied is the vocabulary of the firewall's refusals: the value of the
// X-Bumper-Denied header on every refusal, the "denied" field of its audit line, and
// what the evidence and `bumper env build` read back. It is a package of its own, under
// internal, so the firewall, the runner and the evidence share the words without
// importing one another. The list is short on purpose; docs/firewall.md explains each.
package denied

import "strconv"

// Header is the response header naming a refusal's Kind.
const Header = "X-Bumper-Denied"

// Kind is why the firewall refused a request.
type Kind string

// The kinds of refusal.
const (
	// Host: the name is not on the allowlist, or is on the deny list.
	Host Kind = "host"
	// PrivateAddress: the name resolves only to addresses the firewall never dials
	// (private, loopback, link-local, metadata, the host's own), or the target is an IP
	// literal that is not explicitly allowed.
	PrivateAddress Kind = "private-address"
	// Port: the name is allowed, but not on this port.
	Port Kind = "port"
	// Method: a method, upgrade or protocol the firewall does not carry (https://
	// absolute URIs, WebSocket/h2c upgrades, method overrides).
	Method Kind = "method"
	// Credential: a credential where none may go (userinfo in a target, a placeholder
	// sent to a host it is not for).
	Credential Kind = "credential"
	// Budget: the run's model budget is spent, or a call's worst case does not fit in it.
	Budget Kind = "budget"
	// Malformed: a request the firewall will not read as one (the 400s), or a path no
	// gateway serves.
	Malformed Kind = "malformed"
	// Busy: too many connections from one client.
	Busy Kind = "busy"
	// Unreachable: the name does not resolve or its upstream does not answer (502).
	Unreachable Kind = "unreachable"
	// Unavailable: the firewall's audit log is failing, so nothing is forwarded.
	Unavailable Kind = "unavailable"
	// Git: the git gateway refused (push policy, another repository, not smart HTTP).
	Git Kind = "git"
	// GitHubAPI: the GitHub API gateway refused (writes, stranger-written text, rules).
	GitHubAPI Kind = "github-api"
	// Model: a model gateway refused a call (endpoint, server tool, URL source, tier).
	Model Kind = "model"
)

// All lists every kind, for documentation tests and schema checks.
func All() []Kind {
	return []Kind{Host, PrivateAddress, Port, Method, Credential, Budget, Malformed, Busy,
		Unreachable, Unavailable, Git, GitHubAPI, Model}
}

// Destination reports whether k refuses where a request went rather than what it was:
// the kinds the evidence counts as denied hosts.
func (k Kind) Destination() bool { return k == Host || k == Port || k == PrivateAddress }

// Fixable reports whether an allowlist entry would have let the request through: the
// kinds a suggested policy change can fix.
func (k Kind) Fixable() bool { return k == Host || k == Port }

// Entry is the allowlist entry that would allow host on port for k: the bare name for
// Host (the default ports), name:port for Port. It is empty for other kinds.
func Entry(k Kind, host string, port uint16) string {
	switch k {
	case Host:
		return host
	case Port:
		return host + ":" + strconv.Itoa(int(port))
	}
	return ""
}

// Hint says, in one clause, what a person changes so that the request would pass; ""
// when nothing in a repository's policy would (or, for Host and Port, host is unknown).
func Hint(k Kind, host string, port uint16) string {
	switch k {
	case Host, Port:
		if host == "" {
			return ""
		}
		return `add "` + Entry(k, host, port) + `" to allowlist: in .github/bumper.yml (or to environment.allow: for the environment's setup)`
	case PrivateAddress:
		return "the firewall never dials private, loopback, link-local or this host's addresses, nor an IP literal that is not listed: use a public host name (a private registry needs a resolve pin on the runner host)"
	case Method:
		return "use CONNECT for https:// and plain requests without protocol upgrades"
	case Budget:
		return "raise bounds.cost_per_run_usd in .github/bumper.yml or lower the call's output cap"
	}
	return ""
}

// ReasonPhrase is the status line's reason for a refusal: "Bumper denied host
// pkgs.example.test". Many clients print only the status line of a failed CONNECT, so
// the kind and the host are there too. host is left out unless it is made only of the
// characters of a host name or IP literal, so the line stays one clean line.
func ReasonPhrase(k Kind, host string) string {
	if host == "" || !plainHost(host) {
		return "Bumper denied " + string(k)
	}
	return "Bumper denied " + string(k) + " " + host
}

func plainHost(s string) bool {
	if len(s) > 255 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '.' || c == '-' || c == '_' || c == ':' || c == '[' || c == ']') {
			return false
		}
	}
	return true
}
