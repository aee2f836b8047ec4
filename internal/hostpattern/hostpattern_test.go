package hostpattern

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct{ in, want, wantErr string }{
		{"proxy.golang.org", "proxy.golang.org", ""},
		{"Sum.Golang.ORG.", "sum.golang.org", ""},
		{"*.npmjs.org", "*.npmjs.org", ""},
		{"registry.npmjs.org:443,8443", "registry.npmjs.org:443,8443", ""},
		{"203.0.113.7", "203.0.113.7", ""},
		{"[2001:db8::1]:443", "[2001:db8::1]:443", ""},
		{"2001:db8::1", "[2001:db8::1]", ""},
		{"::ffff:192.0.2.1", "192.0.2.1", ""},
		{"", "", "empty entry"},
		{"https://x.org", "", "not a number"},
		{"x.org/path", "", "is not allowed in a host name"},
		{"x.org:0", "", "not a number from 1 to 65535"},
		{"x.org:65536", "", "not a number from 1 to 65535"},
		{"0x7f.1", "", "canonical form"},
		{"a..b", "", "empty label"},
		{"[fe80::1%eth0]", "", "zone"},
		{"[::1", "", "missing ']'"},
		{strings.Repeat("a", 64) + ".org", "", "longer than 63"},
	}
	for _, tt := range tests {
		e, err := Parse(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Parse(%q) error %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || e.String() != tt.want {
			t.Errorf("Parse(%q) = %q, %v; want %q", tt.in, e.String(), err, tt.want)
		}
	}
}
