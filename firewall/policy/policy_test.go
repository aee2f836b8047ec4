package policy

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/internal/denied"
)

func mustPolicy(t *testing.T, allowList, denyList []string) *Policy {
	t.Helper()
	p, err := New(allowList, denyList)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

func TestCheckHost(t *testing.T) {
	p := mustPolicy(t,
		[]string{"allowed.test", "*.allowed.test", "api.example.com:443,8443", "plain.test:80,8080",
			"192.0.2.10", "[2001:db8::5]:443", "*.wild.test"},
		[]string{"bad.allowed.test", "*.evil.allowed.test", "api.example.com:8443"})
	tests := []struct {
		name, host string
		port       uint16
		mode       Mode
		want       bool
		reason     string // substring of the reason
	}{
		{"exact connect", "allowed.test", 443, Connect, true, "allowed by allowed.test"},
		{"exact plain", "allowed.test", 80, Plain, true, "allowed by"},
		{"subdomain", "www.allowed.test", 443, Connect, true, "*.allowed.test"},
		{"deep subdomain", "a.b.allowed.test", 443, Connect, true, "*.allowed.test"},
		{"upper case", "WWW.Allowed.TEST", 443, Connect, true, ""},
		{"trailing dot", "allowed.test.", 443, Connect, true, ""},
		{"suffix trick", "evilallowed.test", 443, Connect, false, "not on the allowlist"},
		{"prefix trick", "allowed.test.evil.test", 443, Connect, false, "not on the allowlist"},
		{"wildcard does not match apex", "wild.test", 443, Connect, false, "not on the allowlist"},
		{"wildcard matches sub", "x.wild.test", 443, Connect, true, ""},
		{"connect default port only", "allowed.test", 80, Connect, false, "port 80 is not allowed"},
		{"plain default port only", "allowed.test", 443, Plain, false, "port 443"},
		{"unexpected port", "allowed.test", 22, Connect, false, "port 22"},
		{"listed ports", "api.example.com", 443, Connect, true, ""},
		{"deny port beats allow", "api.example.com", 8443, Connect, false, "deny list"},
		{"plain listed port", "plain.test", 8080, Plain, true, ""},
		{"deny exact first", "bad.allowed.test", 443, Connect, false, "deny list"},
		{"deny wildcard", "x.evil.allowed.test", 443, Connect, false, "deny list"},
		{"deny case", "BAD.allowed.test.", 443, Connect, false, "deny list"},
		{"double trailing dot", "allowed.test..", 443, Connect, false, "empty label"},
		{"empty", "", 443, Connect, false, "empty host"},
		{"leading dot", ".allowed.test", 443, Connect, false, "empty label"},
		{"NUL", "allowed.test\x00.evil", 443, Connect, false, "not allowed in a host name"},
		{"control char", "allowed.test\r\n", 443, Connect, false, "not allowed"},
		{"space", "allowed test", 443, Connect, false, "not allowed"},
		{"percent", "allowed%2etest", 443, Connect, false, ""},
		{"userinfo at", "allowed.test@evil.test", 443, Connect, false, "not allowed"},
		{"overlong name", strings.Repeat("a.", 130) + "allowed.test", 443, Connect, false, "DNS limit"},
		{"overlong label", strings.Repeat("a", 64) + ".allowed.test", 443, Connect, false, "63"},
		{"port zero", "allowed.test", 0, Connect, false, "port 0"},
		{"decimal ip", "2130706433", 80, Plain, false, "non-canonical"},
		{"octal ip", "0177.0.0.1", 80, Plain, false, "non-canonical"},
		{"hex ip", "0x7f.1", 80, Plain, false, "non-canonical"},
		{"short ip", "127.1", 80, Plain, false, "non-canonical"},
		{"hex whole", "0x7f000001", 80, Plain, false, "non-canonical"},
		{"ip out of range", "999.1.1.1", 80, Plain, false, "not a valid one"},
		{"too many parts", "1.2.3.4.5", 80, Plain, false, "not a valid one"},
		{"canonical ip not listed", "127.0.0.1", 80, Plain, false, "IP literal 127.0.0.1 is refused"},
		{"canonical ip listed", "192.0.2.10", 80, Plain, true, "IP literal allowed"},
		{"listed ip wrong port", "192.0.2.10", 443, Plain, false, "port 443"},
		{"ipv6 literal", "[::1]", 443, Connect, false, "IP literal ::1 is refused"},
		{"ipv6 bare", "::1", 443, Connect, false, "refused"},
		{"ipv6 mapped", "[::ffff:127.0.0.1]", 443, Connect, false, "refused"},
		{"ipv6 zone", "[fe80::1%25eth0]", 443, Connect, false, "zone id"},
		{"ipv6 zone raw", "[fe80::1%eth0]", 443, Connect, false, "zone id"},
		{"ipv6 listed", "[2001:db8::5]", 443, Connect, true, ""},
		{"ipv6 garbage", "[not::an:ip:x]", 443, Connect, false, "neither"},
		{"numeric label inside name ok", "1.allowed.test", 443, Connect, true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, d := p.CheckHost(tc.host, tc.port, tc.mode)
			if d.Allowed != tc.want {
				t.Fatalf("CheckHost(%q, %d) allowed=%v (%s), want %v", tc.host, tc.port, d.Allowed, d.Reason, tc.want)
			}
			if d.Reason == "" || !strings.Contains(d.Reason, tc.reason) {
				t.Fatalf("reason %q does not contain %q", d.Reason, tc.reason)
			}
		})
	}
}

func TestCheckHostTarget(t *testing.T) {
	p := mustPolicy(t, []string{"*.allowed.test", "192.0.2.10"}, nil)
	tgt, d := p.CheckHost("WWW.allowed.test.", 443, Connect)
	if !d.Allowed || tgt.Name != "www.allowed.test" || tgt.Addr.IsValid() {
		t.Fatalf("got %+v %+v", tgt, d)
	}
	tgt, d = p.CheckHost("192.0.2.10", 80, Plain)
	if !d.Allowed || tgt.Addr != netip.MustParseAddr("192.0.2.10") {
		t.Fatalf("got %+v %+v", tgt, d)
	}
}

func TestZeroPolicyDeniesAll(t *testing.T) {
	var p Policy
	if _, d := p.CheckHost("example.com", 443, Connect); d.Allowed {
		t.Fatal("zero policy allowed a host")
	}
}

func TestNewRejectsBadEntries(t *testing.T) {
	for _, bad := range []string{"", "exa mple.com", "a.test:0", "a.test:x", "a.test:70000",
		"[::1", "[::1]x", "0x7f.1", "127.1", "*.", "[fe80::1%eth0]"} {
		t.Run(bad, func(t *testing.T) {
			if _, err := New([]string{bad}, nil); err == nil {
				t.Fatalf("New(%q) accepted a bad entry", bad)
			}
		})
	}
}

func TestParseIPLiteral(t *testing.T) {
	tests := []struct {
		in   string
		want string // "" means not an IP; "invalid" means IP-like but invalid
	}{
		{"2130706433", "127.0.0.1"},
		{"0177.0.0.1", "127.0.0.1"},
		{"0x7f.1", "127.0.0.1"},
		{"127.1", "127.0.0.1"},
		{"127.0.1", "127.0.0.1"},
		{"0x7f.0.0.0x1", "127.0.0.1"},
		{"0", "0.0.0.0"},
		{"0x", "0.0.0.0"},
		{"4294967295", "255.255.255.255"},
		{"4294967296", "invalid"},
		{"256.1.1.1", "invalid"},
		{"1.2.3.256", "invalid"},
		{"08.1.1.1", "invalid"},
		{"a.1", "invalid"},
		{"example.com", ""},
		{"1.example", ""},
		{"0xg", ""},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			a, isIP := ParseIPLiteral(tc.in)
			switch {
			case tc.want == "" && isIP:
				t.Fatalf("%q taken as IP %v", tc.in, a)
			case tc.want == "":
			case !isIP:
				t.Fatalf("%q not taken as IP", tc.in)
			case tc.want == "invalid" && a.IsValid():
				t.Fatalf("%q parsed to %v, want invalid", tc.in, a)
			case tc.want != "invalid" && a.String() != tc.want:
				t.Fatalf("%q parsed to %v, want %s", tc.in, a, tc.want)
			}
		})
	}
}

func TestAddrFilter(t *testing.T) {
	f := NewAddrFilter([]netip.Addr{netip.MustParseAddr("198.51.99.7"), netip.MustParseAddr("2a01:4f8::7")})
	tests := []struct {
		addr string
		want bool
	}{
		{"93.184.215.14", true},
		{"2606:4700::1111", true},
		{"127.0.0.1", false},
		{"127.0.0.2", false},
		{"0.0.0.0", false},
		{"0.1.2.3", false},
		{"10.1.2.3", false},
		{"172.16.0.1", false},
		{"172.31.255.255", false},
		{"172.32.0.1", true},
		{"192.168.1.1", false},
		{"100.64.0.1", false},
		{"100.127.255.255", false},
		{"100.128.0.1", true},
		{"169.254.169.254", false},
		{"169.254.1.1", false},
		{"100.100.100.200", false},
		{"168.63.129.16", false},
		{"224.0.0.1", false},
		{"239.255.255.250", false},
		{"255.255.255.255", false},
		{"198.51.99.7", false},
		{"2a01:4f8::7", false},
		{"::1", false},
		{"::", false},
		{"fe80::1", false},
		{"fe80::1%eth0", false},
		{"fd00:ec2::254", false},
		{"fc00::1", false},
		{"fd12:3456::1", false},
		{"ff02::1", false},
		{"::ffff:127.0.0.1", false},
		{"::ffff:169.254.169.254", false},
		{"::ffff:10.0.0.1", false},
		{"::ffff:93.184.215.14", true},
		{"::127.0.0.1", false},
		{"::10.0.0.1", false},
		{"::93.184.215.14", false},
		{"64:ff9b::a9fe:a9fe", false},
		{"64:ff9b::7f00:1", false},
		{"64:ff9b::5db8:d70e", true},
		{"2002:7f00:1::", false},
		{"2002:a9fe:a9fe::1", false},
		{"2002:5db8:d70e::1", true},
		{"2001:0:4136:e378::1", false},
		{"::ffff:198.51.99.7", false},
	}
	for _, tc := range tests {
		t.Run(tc.addr, func(t *testing.T) {
			d := f.Check(netip.MustParseAddr(tc.addr))
			if d.Allowed != tc.want {
				t.Fatalf("Check(%s) allowed=%v (%s), want %v", tc.addr, d.Allowed, d.Reason, tc.want)
			}
			if d.Reason == "" {
				t.Fatal("empty reason")
			}
		})
	}
	if d := f.Check(netip.Addr{}); d.Allowed {
		t.Fatal("invalid address allowed")
	}
}

func BenchmarkCheckHost(b *testing.B) {
	p, err := New([]string{"allowed.test", "*.allowed.test", "github.com", "*.githubusercontent.com", "registry.npmjs.org"}, []string{"bad.allowed.test"})
	if err != nil {
		b.Fatal(err)
	}
	f := NewAddrFilter(nil)
	a := netip.MustParseAddr("93.184.215.14")
	b.ReportAllocs()
	for b.Loop() {
		if _, d := p.CheckHost("www.allowed.test", 443, Connect); !d.Allowed {
			b.Fatal(d.Reason)
		}
		if d := f.Check(a); !d.Allowed {
			b.Fatal(d.Reason)
		}
	}
}

// TestDecisionKinds: a refusal carries its kind and the normalised host, so the
// firewall names them without reading the reason.
func TestDecisionKinds(t *testing.T) {
	p, err := New([]string{"allowed.test", "203.0.113.7:8443"}, []string{"bad.allowed.test"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, host string
		port       uint16
		kind       denied.Kind
		wantHost   string
	}{
		{"not listed", "Pkgs.Example.Test.", 443, denied.Host, "pkgs.example.test"},
		{"deny list", "bad.allowed.test", 443, denied.Host, "bad.allowed.test"},
		{"port", "allowed.test", 22, denied.Port, "allowed.test"},
		{"port zero", "allowed.test", 0, denied.Port, ""},
		{"IP literal", "198.51.100.1", 443, denied.PrivateAddress, "198.51.100.1"},
		{"listed IP literal on another port", "203.0.113.7", 443, denied.Port, "203.0.113.7"},
		{"octal IP literal", "0177.0.0.1", 443, denied.PrivateAddress, ""},
		{"zone id", "[fe80::1%eth0]", 443, denied.PrivateAddress, ""},
		{"bad bytes", "a b.test", 443, denied.Malformed, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, d := p.CheckHost(tc.host, tc.port, Connect)
			if d.Allowed || d.Kind != tc.kind || d.Host != tc.wantHost {
				t.Fatalf("CheckHost(%q) = %+v, want kind %q host %q", tc.host, d, tc.kind, tc.wantHost)
			}
		})
	}
	if d := NewAddrFilter(nil).Check(netip.MustParseAddr("10.0.0.1")); d.Kind != denied.PrivateAddress {
		t.Fatalf("address filter kind %q", d.Kind)
	}
}
