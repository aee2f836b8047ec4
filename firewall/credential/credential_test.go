package credential

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

func TestParseHost(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{"npm.corp.example", "npm.corp.example", ""},
		{"NPM.Corp.Example.", "npm.corp.example", ""},
		{"artifacts.corp.example:8443/npm", "artifacts.corp.example:8443/npm", ""},
		{"artifacts.corp.example/api/npm/", "artifacts.corp.example/api/npm", ""},
		{"*.corp.example", "", "wildcard"},
		{"https://npm.corp.example", "", "scheme"},
		{"10.0.0.5", "", "not an IP address"},
		{"user@npm.corp.example", "", "user"},
		{"npm.corp.example:0", "", "port"},
		{"npm.corp.example:99999", "", "port"},
		{"npm.corp.example/a/../b", "", "plain segments"},
		{"npm.corp.example/a/%2e%2e", "", "plain segments"},
		{"npm.corp.example/a//b", "", "plain segments"},
		{"npm_corp.example", "", "not a host name"},
		{"localhostish", "", "not a host name"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			h, err := ParseHost(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseHost: %v %v, want error %q", h, err, tc.err)
				}
				return
			}
			if err != nil || h.String() != tc.want {
				t.Fatalf("ParseHost: %q %v, want %q", h.String(), err, tc.want)
			}
		})
	}
}

func mustHost(t *testing.T, s string) Host {
	t.Helper()
	h, err := ParseHost(s)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func testSet(t *testing.T) *Set {
	t.Helper()
	s, err := NewSet([]Credential{
		{Name: "npm", Hosts: []Host{mustHost(t, "reg.corp.example/npm")}, Auth: AuthBearer, Value: "npm-secret", Placeholder: PlaceholderPrefix + "npm-00112233445566778899aabb"},
		{Name: "pypi", Hosts: []Host{mustHost(t, "reg.corp.example/pypi"), mustHost(t, "files.corp.example")}, Auth: AuthBasic, Username: "ci", Value: "py-secret", Placeholder: PlaceholderPrefix + "pypi-00112233445566778899aabb"},
		{Name: "gitlab", Hosts: []Host{mustHost(t, "git.corp.example")}, Auth: AuthHeader, Header: "PRIVATE-TOKEN", Value: "gl-secret", Placeholder: PlaceholderPrefix + "gitlab-00112233445566778899aabb"},
		{Name: "gitea", Hosts: []Host{mustHost(t, "gitea.corp.example")}, Auth: AuthGit, Value: "gt-secret", Placeholder: PlaceholderPrefix + "gitea-00112233445566778899aabb"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestMatch(t *testing.T) {
	s := testSet(t)
	tests := []struct {
		host, path, want string
		declared         bool
	}{
		{"reg.corp.example", "/npm/@corp%2fpkg", "npm", true},
		{"REG.corp.example.", "/pypi/simple/", "pypi", true},
		{"reg.corp.example", "/npmx/pkg", "", true},
		{"reg.corp.example", "/", "", true},
		{"files.corp.example", "/anything", "pypi", true},
		{"evil.example", "/npm/", "", false},
		{"corp.example", "/npm/", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.host+tc.path, func(t *testing.T) {
			c, _, declared := s.Match(tc.host, tc.path)
			got := ""
			if c != nil {
				got = c.Name
			}
			if got != tc.want || declared != tc.declared {
				t.Fatalf("Match = %q %v, want %q %v", got, declared, tc.want, tc.declared)
			}
		})
	}
}

func TestApply(t *testing.T) {
	s := testSet(t)
	basic := func(u, p string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(u+":"+p)) }
	tests := []struct {
		name, header, want string
	}{
		{"npm", "Authorization", "Bearer npm-secret"},
		{"pypi", "Authorization", basic("ci", "py-secret")},
		{"gitlab", "Private-Token", "gl-secret"},
		{"gitea", "Authorization", basic(DefaultGitUsername, "gt-secret")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c *Credential
			for i := range s.creds {
				if s.creds[i].Name == tc.name {
					c = &s.creds[i]
				}
			}
			h := http.Header{"Authorization": {"Bearer placeholder"}, "Cookie": {"a=b"}, "Proxy-Authorization": {"x"}, "Private-Token": {"guess"},
				"Private_token": {"smuggled"}, "Authorization_": {"x"}, "X_jfrog_art_api": {"smuggled"}}
			c.Apply(h)
			for k := range h {
				if strings.Contains(k, "_") && k != "Authorization_" {
					t.Fatalf("the client's %s stayed beside the credential: %v", k, h)
				}
			}
			if h.Get(tc.header) != tc.want || h.Get("Cookie") != "" || h.Get("Proxy-Authorization") != "" {
				t.Fatalf("headers %v", h)
			}
			if tc.header != "Authorization" && h.Get("Authorization") != "" {
				t.Fatalf("the client's Authorization stayed: %v", h)
			}
		})
	}
}

func TestCarries(t *testing.T) {
	s := testSet(t)
	ph := PlaceholderPrefix + "pypi-00112233445566778899aabb"
	tests := []struct {
		head, want string
	}{
		{"GET http://x.test/ HTTP/1.1\r\nAuthorization: Bearer " + ph + "\r\n\r\n", "pypi"},
		{"GET http://x.test/?t=" + strings.ToUpper(ph) + " HTTP/1.1\r\n\r\n", "pypi"},
		{"GET / HTTP/1.1\r\nauthorization: basic " + base64.StdEncoding.EncodeToString([]byte("u:"+ph)) + "\r\n\r\n", "pypi"},
		{"GET / HTTP/1.1\r\nAuthorization: Basic !!!notbase64\r\n\r\n", ""},
		{"GET / HTTP/1.1\r\nAuthorization: Bearer " + PlaceholderPrefix + "other-0011\r\n\r\n", ""},
		{"GET / HTTP/1.1\r\n\r\n", ""},
	}
	for i, tc := range tests {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			if got := s.Carries([]byte(tc.head)); got != tc.want {
				t.Fatalf("Carries = %q, want %q", got, tc.want)
			}
		})
	}
	var none *Set
	if none.Carries([]byte(tests[0].head)) != "" || none.Len() != 0 {
		t.Fatal("a nil set carries nothing")
	}
}

func TestNewSetRefuses(t *testing.T) {
	ph := PlaceholderPrefix + "a-00112233445566778899aabb"
	h := Host{Name: "a.example", Port: 443, Prefix: "/"}
	tests := []struct {
		name  string
		creds []Credential
		want  string
	}{
		{"bad name", []Credential{{Name: "A_b", Hosts: []Host{h}, Auth: AuthBearer, Value: "v", Placeholder: ph}}, "credential name"},
		{"no host", []Credential{{Name: "a", Auth: AuthBearer, Value: "v", Placeholder: ph}}, "names no host"},
		{"no value", []Credential{{Name: "a", Hosts: []Host{h}, Auth: AuthBearer, Placeholder: ph}}, "empty value"},
		{"line break", []Credential{{Name: "a", Hosts: []Host{h}, Auth: AuthBearer, Value: "v\r\nX-Evil: 1", Placeholder: ph}}, "line break"},
		{"basic without user", []Credential{{Name: "a", Hosts: []Host{h}, Auth: AuthBasic, Value: "v", Placeholder: ph}}, "username"},
		{"header Host", []Credential{{Name: "a", Hosts: []Host{h}, Auth: AuthHeader, Header: "Host", Value: "v", Placeholder: ph}}, "cannot carry"},
		{"unknown auth", []Credential{{Name: "a", Hosts: []Host{h}, Auth: "digest", Value: "v", Placeholder: ph}}, "not one of"},
		{"no placeholder", []Credential{{Name: "a", Hosts: []Host{h}, Auth: AuthBearer, Value: "v"}}, "placeholder"},
		{"same host twice", []Credential{
			{Name: "a", Hosts: []Host{h}, Auth: AuthBearer, Value: "v", Placeholder: ph},
			{Name: "b", Hosts: []Host{h}, Auth: AuthBearer, Value: "w", Placeholder: ph}}, "both claim"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewSet(tc.creds); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewSet: %v, want %q", err, tc.want)
			}
		})
	}
}
