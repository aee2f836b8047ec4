package credential

import (
	"encoding/base64"
	"testing"
)

// TestCarriesAttacks: ways an agent might hide a placeholder in a request head to
// another host so the firewall does not recognise it (the value is worthless there, but
// the refusal and the audit line are what tell the maintainer the tool is misdirected).
func TestCarriesAttacks(t *testing.T) {
	ph := PlaceholderPrefix + "npm-0123456789abcdef01234567"
	s, err := NewSet([]Credential{{Name: "npm", Hosts: []Host{{Name: "npm.corp.example", Port: 443, Prefix: "/"}}, Auth: AuthBearer, Value: "real", Placeholder: ph}})
	if err != nil {
		t.Fatal(err)
	}
	b := func(enc *base64.Encoding, s string) string { return enc.EncodeToString([]byte(s)) }
	for _, head := range []string{
		"Authorization: Basic\t" + b(base64.StdEncoding, "u:"+ph),
		"Authorization: basic   " + b(base64.StdEncoding, "u:"+ph),
		"Authorization: Basic " + b(base64.RawStdEncoding, "u:"+ph+"x"),
		"Authorization: Basic " + b(base64.URLEncoding, "u:"+ph+"\xff\xfe"),
		"Proxy-Authorization:Basic " + b(base64.StdEncoding, ph+":x"),
		"X-Token: " + ph,
	} {
		if got := s.Carries([]byte("GET http://other.test/ HTTP/1.1\r\n" + head + "\r\n\r\n")); got != "npm" {
			t.Errorf("head %q: Carries = %q, want npm", head, got)
		}
	}
}
