package evidence

import (
	"slices"
	"strings"
	"time"

	"github.com/bumperdev/bumper/internal/textcut"
)

// AuditEntry is what the egress summary needs of one firewall audit entry. The runner
// copies it from the firewall's log; this package does not import the firewall.
type AuditEntry struct {
	// Kind is "connect", "http", a gateway's name (git, api, anthropic, openai, …), or
	// "request"/"accept" for connections refused before a target was known.
	Kind string
	// Target is host:port for connect and http; the gateway path for gateways.
	Target    string
	Allowed   bool
	Reason    string
	BytesUp   int64
	BytesDown int64
	// Denied is the refusal's kind (internal/denied), empty when allowed or in logs
	// written before the firewall said it; Time is when the firewall took the request.
	Denied string
	Time   time.Time
}

// Via says how a destination was reached.
type Via string

// The ways out.
const (
	ViaConnect Via = "connect" // an HTTP CONNECT tunnel
	ViaHTTP    Via = "http"    // an absolute-URI HTTP request
	ViaGateway Via = "gateway" // a credential-injecting gateway; Host is its name
	ViaProxy   Via = "proxy"   // refused by the proxy before a target was known
)

// Egress summarizes the firewall's decisions by destination.
type Egress struct {
	Allowed         []EgressHost `json:"allowed"`
	Denied          []EgressHost `json:"denied"`
	AllowedRequests int64        `json:"allowed_requests"`
	DeniedRequests  int64        `json:"denied_requests"`
	// OmittedAllowedHosts and OmittedDeniedHosts count the destinations left out of the
	// lists (the least requested, beyond the 100 each list keeps).
	OmittedAllowedHosts int `json:"omitted_allowed_hosts"`
	OmittedDeniedHosts  int `json:"omitted_denied_hosts"`
	// Denials are the destinations refused for where they went, with the suggested
	// change to the allowlist (SummarizeDenials); nil when there were none.
	Denials *Denials `json:"denials,omitempty"`
}

// EgressHost is one destination with its request count and bytes; Reasons (denied
// only) are up to three distinct reasons the firewall gave.
type EgressHost struct {
	Host      string   `json:"host"`
	Via       Via      `json:"via"`
	Count     int64    `json:"count"`
	BytesUp   int64    `json:"bytes_up"`
	BytesDown int64    `json:"bytes_down"`
	Reasons   []string `json:"reasons,omitempty"`
}

const (
	// maxEgressHosts bounds each of SummarizeEgress's lists (the schema says the same).
	maxEgressHosts = 100
	maxHostLen     = 255
	maxReasons     = 3
	maxReasonLen   = 300
	noTargetLabel  = "(no target)"
)

// SummarizeEgress groups audit entries by destination (host:port, lower-cased, for
// connect and http; the gateway's name for gateways), allowed and denied apart, each
// list most requested first (then by name) and cut at 100 destinations with the rest
// counted. Targets come from the VM, so they are cut to 255 characters and made valid
// UTF-8.
func SummarizeEgress(entries []AuditEntry) Egress {
	type key struct {
		host string
		via  Via
	}
	allowed, denied := map[key]*EgressHost{}, map[key]*EgressHost{}
	var out Egress
	for _, a := range entries {
		k := key{via: viaOf(a.Kind)}
		switch k.via {
		case ViaGateway:
			k.host = a.Kind
		default:
			k.host = strings.ToLower(a.Target)
		}
		k.host, _ = textcut.Runes(strings.ToValidUTF8(k.host, "\uFFFD"), maxHostLen)
		if k.host == "" {
			k.host = noTargetLabel
		}
		m := allowed
		if a.Allowed {
			out.AllowedRequests++
		} else {
			m = denied
			out.DeniedRequests++
		}
		h := m[k]
		if h == nil {
			h = &EgressHost{Host: k.host, Via: k.via}
			m[k] = h
		}
		h.Count++
		h.BytesUp += max(a.BytesUp, 0)
		h.BytesDown += max(a.BytesDown, 0)
		if !a.Allowed && a.Reason != "" && len(h.Reasons) < maxReasons {
			r, _ := textcut.Runes(strings.ToValidUTF8(a.Reason, "\uFFFD"), maxReasonLen)
			if !slices.Contains(h.Reasons, r) {
				h.Reasons = append(h.Reasons, r)
			}
		}
	}
	out.Allowed, out.OmittedAllowedHosts = topHosts(allowed)
	out.Denied, out.OmittedDeniedHosts = topHosts(denied)
	return out
}

func viaOf(kind string) Via {
	switch kind {
	case "connect":
		return ViaConnect
	case "http":
		return ViaHTTP
	case "", "request", "accept":
		return ViaProxy
	}
	return ViaGateway
}

func topHosts[K comparable](m map[K]*EgressHost) ([]EgressHost, int) {
	hosts := make([]EgressHost, 0, len(m))
	for _, h := range m {
		hosts = append(hosts, *h)
	}
	slices.SortFunc(hosts, func(a, b EgressHost) int {
		switch {
		case a.Count != b.Count:
			if a.Count > b.Count {
				return -1
			}
			return 1
		case a.Host != b.Host:
			return strings.Compare(a.Host, b.Host)
		}
		return strings.Compare(string(a.Via), string(b.Via))
	})
	if len(hosts) > maxEgressHosts {
		return hosts[:maxEgressHosts], len(hosts) - maxEgressHosts
	}
	return hosts, 0
}
