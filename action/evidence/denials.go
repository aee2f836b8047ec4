package evidence

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bumperdev/bumper/internal/denied"
	"github.com/bumperdev/bumper/internal/hostpattern"
	"github.com/bumperdev/bumper/internal/textcut"
)

// Bounds of Denials (the schema says the same).
const (
	MaxDeniedHosts = 50
	MaxPatchBytes  = 64 << 10
)

// Denials are the destinations the firewall refused to the forward proxy (CONNECT and
// absolute-URI HTTP) for where they went, not for what they were: kinds host, port and
// private-address. Bumper's own gateways are never among them (their audit lines have a
// gateway's kind), nor the firewall's own address.
type Denials struct {
	// Hosts are the refused destinations, first refused first, at most MaxDeniedHosts.
	Hosts []DeniedHost `json:"hosts"`
	// OmittedHosts counts the destinations refused after the list was full.
	OmittedHosts int `json:"omitted_hosts"`
	// Patch is a unified diff of .github/bumper.yml at the base commit adding the
	// entries (DeniedHost.Entry) to Key; empty when no entry would help or the file
	// could not be read as YAML lines this code can edit (PatchProblem says so).
	Patch        string `json:"patch,omitempty"`
	PatchProblem string `json:"patch_problem,omitempty"`
	// Key is the policy key the patch extends: "allowlist" for a run,
	// "environment.allow" for an environment's setup.
	Key string `json:"key,omitempty"`
}

// DeniedHost is one refused destination.
type DeniedHost struct {
	// Host is the name (normalised: lower case, no trailing dot) or IP literal.
	Host string `json:"host"`
	Port int    `json:"port"`
	// Kind is the refusal's kind (internal/denied): host, port or private-address.
	Kind  string    `json:"kind"`
	Count int64     `json:"count"`
	First time.Time `json:"first"`
	// Entry is the allowlist entry that would let it through (host, or host:port);
	// empty for private-address, which no entry in a repository's file fixes.
	Entry string `json:"entry,omitempty"`
}

// DeniedHostCount is the number of distinct refused destinations, omitted included.
func (d *Denials) DeniedHostCount() int {
	if d == nil {
		return 0
	}
	return len(d.Hosts) + d.OmittedHosts
}

// Entries are the allowlist entries the patch adds, in the order of Hosts, without
// repeats.
func (d *Denials) Entries() []string {
	var out []string
	for _, h := range d.Hosts {
		if h.Entry != "" && !slices.Contains(out, h.Entry) {
			out = append(out, h.Entry)
		}
	}
	return out
}

// SummarizeDenials aggregates the refused destinations of entries (in log order),
// leaving out own (the firewall's address, host or host:port), and proposes a patch
// of policyFile (nil: no such file at the base commit) that adds the entries to key
// (PolicyKeyAllowlist or PolicyKeyEnvironmentAllow). It returns nil when nothing was
// refused for its destination.
func SummarizeDenials(entries []AuditEntry, own []string, key string, policyFile []byte) *Denials {
	type k struct {
		host, kind string
		port       int
	}
	seen := map[k]int{}
	d := &Denials{Key: key}
	for _, a := range entries {
		kind := denied.Kind(a.Denied)
		if a.Allowed || (a.Kind != "connect" && a.Kind != "http") || !kind.Destination() {
			continue
		}
		host, port, ok := destination(a.Kind, a.Target)
		if !ok || isOwn(host, port, own) {
			continue
		}
		key := k{host: host, kind: string(kind)}
		if kind == denied.Port {
			key.port = port
		}
		if i, ok := seen[key]; ok {
			if i >= 0 {
				d.Hosts[i].Count++
			}
			continue
		}
		if len(d.Hosts) >= MaxDeniedHosts {
			seen[key] = -1 // counted once among the omitted
			d.OmittedHosts++
			continue
		}
		seen[key] = len(d.Hosts)
		d.Hosts = append(d.Hosts, DeniedHost{Host: host, Port: port, Kind: string(kind), Count: 1, First: a.Time.UTC(),
			Entry: denied.Entry(kind, host, uint16(port))})
	}
	if len(d.Hosts) == 0 {
		return nil
	}
	if add := d.Entries(); len(add) > 0 {
		patch, err := AllowlistPatch(policyFile, key, add)
		switch {
		case err != nil:
			d.PatchProblem, _ = textcut.Runes(err.Error(), 1000)
		case len(patch) > MaxPatchBytes:
			d.PatchProblem, _ = textcut.Runes(fmt.Sprintf("the patch would be %d bytes, more than the evidence keeps; add %s by hand", len(patch), strings.Join(add, ", ")), 1000)
		default:
			d.Patch = patch
		}
	}
	return d
}

// destination reads an audit target (host:port for connect, the authority as sent for
// http) as a normalised host and port; ok is false when it is not a name or address
// the policy could have allowed.
func destination(kind, target string) (string, int, bool) {
	def := 443
	if kind == "http" {
		def = 80
	}
	host, portStr, err := net.SplitHostPort(target)
	if err != nil {
		host, portStr = target, strconv.Itoa(def)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port <= 0 || port > 65535 {
		return "", 0, false
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	e, err := hostpattern.Parse(host)
	if err != nil || e.Wildcard || e.Ports != nil {
		return "", 0, false
	}
	if e.Addr.IsValid() {
		if e.Addr.Is6() {
			return "[" + e.Addr.String() + "]", port, true
		}
		return e.Addr.String(), port, true
	}
	return e.Name, port, true
}

func isOwn(host string, port int, own []string) bool {
	for _, o := range own {
		if o == host || o == host+":"+strconv.Itoa(port) {
			return true
		}
	}
	return false
}

// Text is the denied hosts and the suggested change as plain text for a terminal or a
// job log: one line per host, then the patch. Hosts are names or addresses the firewall
// normalised (letters, digits, '-', '_', '.', ':' and brackets), so they print as they are.
func (d *Denials) Text() string {
	if d == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d hosts were denied:\n", d.DeniedHostCount())
	for _, h := range d.Hosts {
		fmt.Fprintf(&b, "  %s port %d (%s): %d requests, first at %s\n", h.Host, h.Port, h.Kind, h.Count, h.First.Format(time.RFC3339))
	}
	if d.OmittedHosts > 0 {
		fmt.Fprintf(&b, "  and %d more\n", d.OmittedHosts)
	}
	switch {
	case d.Patch != "":
		fmt.Fprintf(&b, "Suggested change to %s: in .github/bumper.yml (git apply; say why each host is needed):\n%s", d.Key, d.Patch)
	case d.PatchProblem != "":
		fmt.Fprintf(&b, "No change to %s: is suggested: %s\n", d.Key, d.PatchProblem)
	}
	return b.String()
}
