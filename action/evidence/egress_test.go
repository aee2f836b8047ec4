package evidence_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/evidence/evidencetest"
)

func TestSummarizeEgress(t *testing.T) {
	g := evidence.SummarizeEgress([]evidence.AuditEntry{
		{Kind: "connect", Target: "Proxy.Golang.org:443", Allowed: true, BytesUp: 10, BytesDown: 100},
		{Kind: "connect", Target: "proxy.golang.org:443", Allowed: true, BytesUp: 5, BytesDown: -1},
		{Kind: "anthropic", Target: "/anthropic/v1/messages", Allowed: true, BytesUp: 7},
		{Kind: "connect", Target: "evil.example:443", Reason: "not in the allowlist"},
		{Kind: "connect", Target: "evil.example:443", Reason: "not in the allowlist"},
		{Kind: "connect", Target: "evil.example:443", Reason: "port not allowed"},
		{Kind: "git", Target: "/git/acme/widgets.git/git-receive-pack", Reason: "push refused: refs/heads/main"},
		{Kind: "accept", Reason: "too many connections"},
	})
	got := fmt.Sprintf("%+v", g)
	want := "{Allowed:[{Host:proxy.golang.org:443 Via:connect Count:2 BytesUp:15 BytesDown:100 Reasons:[]} " +
		"{Host:anthropic Via:gateway Count:1 BytesUp:7 BytesDown:0 Reasons:[]}] " +
		"Denied:[{Host:evil.example:443 Via:connect Count:3 BytesUp:0 BytesDown:0 Reasons:[not in the allowlist port not allowed]} " +
		"{Host:(no target) Via:proxy Count:1 BytesUp:0 BytesDown:0 Reasons:[too many connections]} " +
		"{Host:git Via:gateway Count:1 BytesUp:0 BytesDown:0 Reasons:[push refused: refs/heads/main]}] " +
		"AllowedRequests:3 DeniedRequests:5 OmittedAllowedHosts:0 OmittedDeniedHosts:0 Denials:<nil>}"
	if got != want {
		t.Errorf("SummarizeEgress =\n%s\nwant\n%s", got, want)
	}
}

func TestSummarizeEgressHostile(t *testing.T) {
	var entries []evidence.AuditEntry
	for i := range 5000 {
		entries = append(entries, evidence.AuditEntry{Kind: "connect", Target: fmt.Sprintf("h%04d.example:443", i),
			Reason: fmt.Sprintf("reason %d", i%7)})
	}
	for i := range 10 { // the most requested come first whatever their names
		entries = append(entries, evidence.AuditEntry{Kind: "connect", Target: "zz.example:443", Reason: fmt.Sprintf("reason %d", i)})
	}
	entries = append(entries, evidence.AuditEntry{Kind: "connect", Target: strings.Repeat("\xffa", 1000) + ":443"})
	g := evidence.SummarizeEgress(entries)
	const kept = 100 // destinations each list keeps
	if len(g.Denied) != kept || g.OmittedDeniedHosts != 5002-kept || g.DeniedRequests != 5011 {
		t.Fatalf("denied %d hosts, %d omitted, %d requests", len(g.Denied), g.OmittedDeniedHosts, g.DeniedRequests)
	}
	if g.Denied[0].Host != "zz.example:443" || g.Denied[0].Count != 10 || len(g.Denied[0].Reasons) != 3 {
		t.Errorf("first denied = %+v, want zz.example with 10 requests and 3 reasons", g.Denied[0])
	}
	for _, h := range g.Denied {
		if !utf8.ValidString(h.Host) || utf8.RuneCountInString(h.Host) > 255 {
			t.Errorf("host %q is not cut or not valid UTF-8", h.Host)
		}
	}
	e := evidencetest.Realistic()
	e.Egress = g
	if err := e.Validate(); err != nil {
		t.Errorf("a summary of hostile entries does not validate: %v", err)
	}
}

func TestExcerpt(t *testing.T) {
	if got := evidence.Excerpt("short\noutput\n"); got != "short\noutput\n" {
		t.Errorf("Excerpt changed short output: %q", got)
	}
	long := "FIRST LINE\n" + strings.Repeat("é middle ", 200_000) + "\nLAST LINE\n"
	got := evidence.Excerpt(long)
	if len(got) > evidence.MaxExcerptBytes || !utf8.ValidString(got) {
		t.Fatalf("Excerpt is %d bytes, valid UTF-8 %t", len(got), utf8.ValidString(got))
	}
	if !strings.HasPrefix(got, "FIRST LINE\n") || !strings.HasSuffix(got, "\nLAST LINE\n") || !strings.Contains(got, "bytes left out") {
		t.Errorf("Excerpt lost its head, tail or marker: %q … %q", got[:40], got[len(got)-40:])
	}
	if got := evidence.Excerpt("bad \xff byte"); !utf8.ValidString(got) {
		t.Errorf("Excerpt kept invalid UTF-8: %q", got)
	}
}
