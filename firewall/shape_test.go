package firewall

import (
	"bufio"
	"bytes"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/firewall/internal/http1"
	"github.com/bumperdev/bumper/firewall/policy"
)

func parseHead(t *testing.T, raw string) *http1.Head {
	t.Helper()
	var h http1.Head
	if err := h.ReadRequest(bufio.NewReader(strings.NewReader(raw)), DefaultMaxHeaderBytes); err != nil {
		t.Fatalf("parse %q: %v", raw, err)
	}
	return &h
}

// TestCheckForward covers each shape rule of an absolute-URI request, with the status
// and reason the client and the audit line get, and what an accepted one is forwarded as.
func TestCheckForward(t *testing.T) {
	req := func(target, headers string) string { return "GET " + target + " HTTP/1.1\r\n" + headers + "\r\n" }
	tests := []struct {
		name, raw string
		status    int    // 0: accepted
		reason    string // substring of the refusal's reason
		authority string // what the audit line names
		host      string
		port      uint16
		path      string
	}{
		{name: "plain", raw: req("http://a.test/p?q=1", "Host: a.test\r\n"), authority: "a.test", host: "a.test", port: 80, path: "/p?q=1"},
		{name: "query without a path", raw: req("http://a.test?x=1", "Host: a.test\r\n"), authority: "a.test", host: "a.test", port: 80, path: "/?x=1"},
		{name: "scheme case, port, no path", raw: req("HTTP://a.test:8080", "Host: A.TEST.:8080\r\n"), authority: "a.test:8080", host: "a.test", port: 8080, path: "/"},
		{name: "default port in Host", raw: req("http://a.test:80/", "Host: a.test\r\n"), authority: "a.test:80", host: "a.test", port: 80, path: "/"},
		{name: "ipv6 literal", raw: req("http://[::1]:81/", "Host: [::1]:81\r\n"), authority: "[::1]:81", host: "[::1]", port: 81, path: "/"},
		{name: "http/1.0 without Host", raw: "GET http://a.test/old HTTP/1.0\r\n\r\n", authority: "a.test", host: "a.test", port: 80, path: "/old"},
		{name: "https absolute URI", raw: req("https://a.test/", "Host: a.test\r\n"), status: 400, reason: "use CONNECT", authority: "https://a.test/"},
		{name: "other scheme", raw: req("ftp://a.test/", "Host: a.test\r\n"), status: 400, reason: "must be an absolute http:// URI", authority: "ftp://a.test/"},
		{name: "authority form", raw: req("a.test:80", "Host: a.test\r\n"), status: 400, reason: "must be an absolute http:// URI", authority: "a.test:80"},
		{name: "fragment", raw: req("http://a.test/#x", "Host: a.test\r\n"), status: 400, reason: "fragment", authority: "a.test"},
		{name: "userinfo", raw: req("http://a.test@evil.test/", "Host: evil.test\r\n"), status: 403, reason: "userinfo", authority: "a.test@evil.test"},
		{name: "port zero", raw: req("http://a.test:0/", "Host: a.test:0\r\n"), status: 400, reason: "invalid port", authority: "a.test:0"},
		{name: "bad port", raw: req("http://a.test:+80/", "Host: a.test\r\n"), status: 400, reason: "invalid port", authority: "a.test:+80"},
		{name: "unbracketed ipv6", raw: req("http://::1/", "Host: x\r\n"), status: 400, reason: "must be in brackets", authority: "::1"},
		{name: "unclosed bracket", raw: req("http://[::1/", "Host: x\r\n"), status: 400, reason: "missing ']'", authority: "[::1"},
		{name: "empty host", raw: req("http://:80/", "Host: x\r\n"), status: 400, reason: "empty host", authority: ":80"},
		{name: "two Host headers", raw: req("http://a.test/", "Host: a.test\r\nHost: a.test\r\n"), status: 400, reason: "more than one Host", authority: "a.test"},
		{name: "no Host", raw: req("http://a.test/", ""), status: 400, reason: "without a Host header", authority: "a.test"},
		{name: "Host disagrees", raw: req("http://a.test/", "Host: b.test\r\n"), status: 400, reason: "Host header disagrees", authority: "a.test"},
		{name: "Host port disagrees", raw: req("http://a.test/", "Host: a.test:8080\r\n"), status: 400, reason: "Host header disagrees", authority: "a.test"},
		{name: "upgrade", raw: req("http://a.test/", "Host: a.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"), status: 400, reason: "upgrades", authority: "a.test"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ft, ref := checkForward(parseHead(t, tc.raw))
			if ft.authority != tc.authority {
				t.Errorf("audit target %q, want %q", ft.authority, tc.authority)
			}
			if tc.status != 0 {
				if ref == nil || ref.status != tc.status || !strings.Contains(ref.reason, tc.reason) {
					t.Fatalf("refusal %+v, want %d with %q", ref, tc.status, tc.reason)
				}
				return
			}
			if ref != nil {
				t.Fatalf("refused: %+v", ref)
			}
			if ft.host != tc.host || ft.port != tc.port || string(ft.path) != tc.path {
				t.Fatalf("target %s port %d path %q, want %s %d %q", ft.host, ft.port, ft.path, tc.host, tc.port, tc.path)
			}
		})
	}
}

// TestCheckConnect covers each shape rule of a CONNECT request.
func TestCheckConnect(t *testing.T) {
	req := func(target, headers string) string { return "CONNECT " + target + " HTTP/1.1\r\n" + headers + "\r\n" }
	tests := []struct {
		name, raw string
		status    int
		reason    string
		host      string
		port      uint16
	}{
		{name: "plain", raw: req("a.test:443", ""), host: "a.test", port: 443},
		{name: "matching Host", raw: req("a.test:443", "Host: A.test.:443\r\n"), host: "a.test", port: 443},
		{name: "ipv6", raw: req("[2001:db8::1]:443", ""), host: "[2001:db8::1]", port: 443},
		{name: "empty body", raw: req("a.test:443", "Content-Length: 0\r\n"), host: "a.test", port: 443},
		{name: "no port", raw: req("a.test", ""), status: 400, reason: "has no port"},
		{name: "ipv6 without port", raw: req("[::1]", ""), status: 400, reason: "has no port"},
		{name: "empty port", raw: req("a.test:", ""), status: 400, reason: "empty port"},
		{name: "port zero", raw: req("a.test:0", ""), status: 400, reason: "invalid port"},
		{name: "port too large", raw: req("a.test:65536", ""), status: 400, reason: "invalid port"},
		{name: "two Host headers", raw: req("a.test:443", "Host: a.test:443\r\nHost: a.test:443\r\n"), status: 400, reason: "more than one Host"},
		{name: "Host disagrees", raw: req("denied.test:443", "Host: a.test:443\r\n"), status: 400, reason: "disagrees with the CONNECT target"},
		{name: "Host without port", raw: req("a.test:443", "Host: a.test\r\n"), status: 400, reason: "disagrees with the CONNECT target"},
		{name: "sized body", raw: req("a.test:443", "Content-Length: 3\r\n"), status: 400, reason: "may not have a body"},
		{name: "chunked body", raw: req("a.test:443", "Transfer-Encoding: chunked\r\n"), status: 400, reason: "may not have a body"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := parseHead(t, tc.raw)
			ct, ref := checkConnect(h)
			if ct.target != string(h.Target()) {
				t.Errorf("audit target %q, want the request's %q", ct.target, h.Target())
			}
			if tc.status != 0 {
				if ref == nil || ref.status != tc.status || !strings.Contains(ref.reason, tc.reason) {
					t.Fatalf("refusal %+v, want %d with %q", ref, tc.status, tc.reason)
				}
				return
			}
			if ref != nil {
				t.Fatalf("refused: %+v", ref)
			}
			if ct.host != tc.host || ct.port != tc.port {
				t.Fatalf("target %s port %d, want %s %d", ct.host, ct.port, tc.host, tc.port)
			}
		})
	}
}

// TestCheckTunnelStart: bytes pipelined after a CONNECT, before the tunnel is up, are
// refused.
func TestCheckTunnelStart(t *testing.T) {
	if ref := checkTunnelStart(0); ref != nil {
		t.Fatalf("nothing buffered refused: %+v", ref)
	}
	if ref := checkTunnelStart(17); ref == nil || ref.status != 400 || !strings.Contains(ref.reason, "bytes sent after CONNECT") {
		t.Fatalf("pipelined bytes: %+v, want a 400", ref)
	}
}

// FuzzTarget runs the authority splitting and the policy on arbitrary targets: an
// accepted target must be a clean allowed name.
func FuzzTarget(f *testing.F) {
	p, err := policy.New([]string{"allowed.test", "*.allowed.test"}, nil)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"allowed.test:443", "www.allowed.test:443", "[::1]:443", "2130706433:443", "allowed.test@evil:443", "ALLOWED.test.:443"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		host, port, err := splitHostPort(target, 0)
		if err != nil {
			return
		}
		tgt, d := p.CheckHost(host, port, policy.Connect)
		if !d.Allowed {
			return
		}
		if tgt.Name != "allowed.test" && !bytes.HasSuffix([]byte(tgt.Name), []byte(".allowed.test")) {
			t.Fatalf("%q allowed as %q", target, tgt.Name)
		}
		if port != 443 {
			t.Fatalf("%q allowed on port %d", target, port)
		}
	})
}
