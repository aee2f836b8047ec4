package denied

import "testing"

func TestReasonPhrase(t *testing.T) {
	tests := []struct {
		name string
		kind Kind
		host string
		want string
	}{
		{"a name", Host, "pkgs.example.test", "Bumper denied host pkgs.example.test"},
		{"an IPv6 literal", PrivateAddress, "[2001:db8::1]", "Bumper denied private-address [2001:db8::1]"},
		{"no host", Method, "", "Bumper denied method"},
		{"a CR LF cannot split the status line", Host, "a.test\r\nX-Evil: 1", "Bumper denied host"},
		{"a space is left out", Host, "a test", "Bumper denied host"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ReasonPhrase(tc.kind, tc.host); got != tc.want {
				t.Fatalf("ReasonPhrase = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestEntryAndHint(t *testing.T) {
	tests := []struct {
		kind  Kind
		host  string
		port  uint16
		entry string
		hint  bool
	}{
		{Host, "a.test", 443, "a.test", true},
		{Port, "a.test", 8443, "a.test:8443", true},
		{Host, "", 443, "", false},
		{PrivateAddress, "a.test", 443, "", true},
		{Git, "", 0, "", false},
	}
	for _, tc := range tests {
		t.Run(string(tc.kind)+"/"+tc.host, func(t *testing.T) {
			if tc.host != "" || tc.kind != Host {
				if got := Entry(tc.kind, tc.host, tc.port); got != tc.entry {
					t.Fatalf("Entry = %q, want %q", got, tc.entry)
				}
			}
			if got := Hint(tc.kind, tc.host, tc.port); (got != "") != tc.hint {
				t.Fatalf("Hint = %q, want a hint: %v", got, tc.hint)
			}
		})
	}
}
