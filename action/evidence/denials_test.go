package evidence_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/evidence/evidencetest"
)

// TestSummarizeDenials feeds what an agent's refused requests leave in the audit log,
// with what must not count among them, and checks the hosts, their counts and first
// times, and that the bundle with them still validates.
func TestSummarizeDenials(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 15, 0, 0, 0, time.UTC)
	var entries []evidence.AuditEntry
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	for i := range 20 { // twenty tries of one host are one host
		entries = append(entries, evidence.AuditEntry{Kind: "connect", Target: "pkgs.example.test:443", Denied: "host", Time: at(10 + i)})
	}
	entries = append(entries,
		evidence.AuditEntry{Kind: "http", Target: "PyPI.Unlisted.Test.", Denied: "host", Time: at(40)},
		evidence.AuditEntry{Kind: "connect", Target: "pypi.unlisted.test:443", Denied: "host", Time: at(41)},
		evidence.AuditEntry{Kind: "connect", Target: "github.com:22", Denied: "port", Time: at(42)},
		evidence.AuditEntry{Kind: "connect", Target: "meta.example.test:443", Denied: "private-address", Time: at(43)},
		// Not denied hosts: the gateways, the firewall's own address, the shape of a
		// request, a busy client, an unreachable name, what was allowed, old lines.
		evidence.AuditEntry{Kind: "git", Target: "/git/o/other.git/info/refs", Denied: "git", Time: at(44)},
		evidence.AuditEntry{Kind: "github-api", Target: "/api/github/repos/o/r/issues", Denied: "github-api", Time: at(44)},
		evidence.AuditEntry{Kind: "anthropic", Target: "/anthropic/v1/batches", Denied: "model", Time: at(44)},
		evidence.AuditEntry{Kind: "gateway", Target: "/openai/../x", Denied: "malformed", Time: at(44)},
		evidence.AuditEntry{Kind: "connect", Target: "10.0.2.2:3128", Denied: "private-address", Time: at(45)},
		evidence.AuditEntry{Kind: "http", Target: "10.0.2.2:3128", Denied: "private-address", Time: at(45)},
		evidence.AuditEntry{Kind: "request", Denied: "malformed", Time: at(46)},
		evidence.AuditEntry{Kind: "accept", Denied: "busy", Time: at(46)},
		evidence.AuditEntry{Kind: "connect", Target: "nx.example.test:443", Denied: "unreachable", Time: at(47)},
		evidence.AuditEntry{Kind: "connect", Target: "github.com:443", Allowed: true, Time: at(48)},
		evidence.AuditEntry{Kind: "connect", Target: "old.example.test:443", Time: at(49)},
		evidence.AuditEntry{Kind: "connect", Target: "a`b.test:443", Denied: "host", Time: at(49)},
	)
	d := evidence.SummarizeDenials(entries, []string{"10.0.2.2:3128"}, evidence.PolicyKeyAllowlist, nil)
	if d == nil {
		t.Fatal("no denials")
	}
	want := []struct {
		host  string
		kind  string
		count int64
		first time.Time
		entry string
	}{
		{"pkgs.example.test", "host", 20, at(10), "pkgs.example.test"},
		{"pypi.unlisted.test", "host", 2, at(40), "pypi.unlisted.test"},
		{"github.com", "port", 1, at(42), "github.com:22"},
		{"meta.example.test", "private-address", 1, at(43), ""},
	}
	if len(d.Hosts) != len(want) {
		t.Fatalf("hosts %+v, want %d", d.Hosts, len(want))
	}
	for i, w := range want {
		t.Run(w.host, func(t *testing.T) {
			h := d.Hosts[i]
			if h.Host != w.host || h.Kind != w.kind || h.Count != w.count || !h.First.Equal(w.first) || h.Entry != w.entry {
				t.Fatalf("%+v, want %+v", h, w)
			}
		})
	}
	if d.DeniedHostCount() != 4 || !strings.Contains(d.Patch, `+  - "github.com:22"`) || strings.Contains(d.Patch, "meta.example.test") {
		t.Fatalf("count %d, patch:\n%s", d.DeniedHostCount(), d.Patch)
	}
	e := evidencetest.Realistic()
	e.Egress.Denials = d
	if err := e.Validate(); err != nil {
		t.Fatalf("the bundle with its denials does not validate: %v", err)
	}
}

// TestSummarizeDenialsIsBounded: a flood of distinct names keeps 50, counts the rest
// once each, and the bundle validates.
func TestSummarizeDenialsIsBounded(t *testing.T) {
	var entries []evidence.AuditEntry
	for round := range 2 {
		for i := range 80 {
			entries = append(entries, evidence.AuditEntry{Kind: "connect", Target: fmt.Sprintf("h%d.example.test:443", i),
				Denied: "host", Time: time.Unix(int64(round*100+i), 0)})
		}
	}
	d := evidence.SummarizeDenials(entries, nil, evidence.PolicyKeyAllowlist, []byte("version: 1\n"))
	if len(d.Hosts) != evidence.MaxDeniedHosts || d.OmittedHosts != 30 || d.Hosts[0].Count != 2 || d.DeniedHostCount() != 80 {
		t.Fatalf("%d hosts, %d omitted, first counted %d", len(d.Hosts), d.OmittedHosts, d.Hosts[0].Count)
	}
	e := evidencetest.Realistic()
	e.Egress.Denials = d
	if err := e.Validate(); err != nil {
		t.Fatalf("does not validate: %v", err)
	}
	e.Egress.Denials.Hosts = append(e.Egress.Denials.Hosts, e.Egress.Denials.Hosts[0])
	if err := e.Validate(); err == nil {
		t.Fatal("51 denied hosts validate")
	}
}
