// Package credential holds the runner host's credentials the firewall adds to requests
// toward the hosts they were declared for (issue #26): a private npm scope, a Python
// index, a Go module proxy, an artifact store, a git host. The VM never holds a value:
// it sees a placeholder at most, and reaches such a host by plain HTTP through the
// firewall (http://npm.corp.example/…), which speaks verified TLS upstream and puts the
// real value on the request there, and nowhere else.
//
// Everything here is a pure predicate or header rewrite; the firewall's transport uses
// it (firewall/credforward.go), and the runner builds a Set from its host's file
// (action/credentials).
package credential

import (
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Auth says how a credential goes on a request.
type Auth string

// The ways a credential is sent.
const (
	// AuthBearer sends "Authorization: Bearer VALUE" (npm's _authToken, most registries).
	AuthBearer Auth = "bearer"
	// AuthBasic sends "Authorization: Basic base64(USERNAME:VALUE)" (pip indexes,
	// Artifactory, Nexus).
	AuthBasic Auth = "basic"
	// AuthHeader sends "HEADER: VALUE" (GitLab's PRIVATE-TOKEN, X-JFrog-Art-Api).
	AuthHeader Auth = "header"
	// AuthGit sends a token the way git hosts take one over smart HTTP: Basic with the
	// username (default DefaultGitUsername) and the token as the password.
	AuthGit Auth = "git"
)

// DefaultGitUsername is the user name an AuthGit credential sends unless it names one;
// GitHub and Gitea take any name with a token, GitLab "oauth2" or any.
const DefaultGitUsername = "x-access-token"

// DefaultPort is the upstream port of a host declared without one: TLS.
const DefaultPort = 443

// PlaceholderPrefix starts every placeholder, so a leaked one is recognised for what it
// is (a name the VM may hold, never a secret).
const PlaceholderPrefix = "bumper-placeholder-"

var (
	nameRE   = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)
	headerRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,63}$`)
	labelRE  = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
)

// ValidName reports whether s may name a credential: lower-case letters, digits and
// "-", at most 63, starting with a letter or digit. The runner host's file and a
// repository's credentials: list use the same names.
func ValidName(s string) bool { return nameRE.MatchString(s) }

// Host is one place a credential may be sent: a host name, the port its TLS service
// listens on, and the path prefix requests must start with.
type Host struct {
	Name   string // lower-case, no trailing dot
	Port   uint16 // upstream TLS port
	Prefix string // starts and ends with "/"; "/" for the whole host
}

// String writes the host as the file does: name[:port][/prefix/].
func (h Host) String() string {
	s := h.Name
	if h.Port != DefaultPort {
		s += ":" + strconv.Itoa(int(h.Port))
	}
	if h.Prefix != "/" {
		s += strings.TrimSuffix(h.Prefix, "/")
	}
	return s
}

// ParseHost reads "name[:port][/path/prefix]". Wildcards, IP literals, schemes, queries
// and userinfo are refused: a credential goes to a name the admin wrote out.
func ParseHost(s string) (Host, error) {
	authority, prefix, hasPath := strings.Cut(s, "/")
	if strings.ContainsAny(s, "*?#@\\ \t") || strings.Contains(s, "://") {
		return Host{}, fmt.Errorf("host %q: write name[:port][/path], without a scheme, wildcard, query or user", s)
	}
	name, port := authority, DefaultPort
	if i := strings.LastIndexByte(authority, ':'); i >= 0 {
		p, err := strconv.Atoi(authority[i+1:])
		if err != nil || p < 1 || p > 65535 {
			return Host{}, fmt.Errorf("host %q: the port must be a number from 1 to 65535", s)
		}
		name, port = authority[:i], p
	}
	name = strings.TrimSuffix(strings.ToLower(name), ".")
	if net.ParseIP(name) != nil {
		return Host{}, fmt.Errorf("host %q: a credential goes to a host name, not an IP address (pin the name with the runner host's resolve setting)", s)
	}
	if !validHostName(name) {
		return Host{}, fmt.Errorf("host %q: %q is not a host name (letters, digits, '-' and dots)", s, name)
	}
	h := Host{Name: name, Port: uint16(port), Prefix: "/"}
	if hasPath {
		segs := strings.Split(strings.Trim(prefix, "/"), "/")
		for _, sg := range segs {
			if sg == "" || sg == "." || sg == ".." || strings.ContainsAny(sg, "%;") {
				return Host{}, fmt.Errorf("host %q: the path prefix must be plain segments (no empty, '.', '..', '%%' or ';')", s)
			}
		}
		if prefix = strings.Trim(prefix, "/"); prefix != "" {
			h.Prefix = "/" + prefix + "/"
		}
	}
	return h, nil
}

func validHostName(name string) bool {
	if name == "" || len(name) > 253 || !strings.Contains(name, ".") && name != "localhost" {
		return false
	}
	for _, l := range strings.Split(name, ".") {
		if !labelRE.MatchString(l) {
			return false
		}
	}
	return true
}

// Credential is one secret and where it may go.
type Credential struct {
	Name  string
	Hosts []Host
	Auth  Auth
	// Header is AuthHeader's header name; Username AuthBasic's (required) or AuthGit's
	// (default DefaultGitUsername).
	Header, Username string
	// Value is the secret. It is never written anywhere but the request to its hosts.
	Value string
	// Placeholder is what the VM may hold in its place (Placeholder).
	Placeholder string
	// RootCAs, when set, are the only roots the credential's hosts are verified against
	// (an internal registry under a company CA); nil: the firewall's.
	RootCAs *x509.CertPool
}

// Check says what is wrong with c, if anything.
func (c Credential) Check() error {
	switch {
	case !ValidName(c.Name):
		return fmt.Errorf("credential name %q: use lower-case letters, digits and '-' (at most 63)", c.Name)
	case len(c.Hosts) == 0:
		return fmt.Errorf("credential %s names no host: it would never be sent", c.Name)
	case c.Value == "":
		return fmt.Errorf("credential %s has an empty value", c.Name)
	case strings.ContainsAny(c.Value, "\r\n\x00"):
		return fmt.Errorf("credential %s: the value holds a line break or NUL; a header cannot carry it", c.Name)
	case !strings.HasPrefix(c.Placeholder, PlaceholderPrefix) || len(c.Placeholder) < len(PlaceholderPrefix)+16:
		return fmt.Errorf("credential %s has no placeholder", c.Name)
	}
	switch c.Auth {
	case AuthBearer, AuthGit:
	case AuthBasic:
		if c.Username == "" || strings.ContainsAny(c.Username, ":\r\n") {
			return fmt.Errorf("credential %s: auth basic needs a username without ':'", c.Name)
		}
	case AuthHeader:
		if !headerRE.MatchString(c.Header) {
			return fmt.Errorf("credential %s: auth header needs a header name (letters, digits, '-')", c.Name)
		}
		switch http.CanonicalHeaderKey(c.Header) {
		case "Host", "Content-Length", "Transfer-Encoding", "Connection", "Cookie":
			return fmt.Errorf("credential %s: header %s cannot carry a credential", c.Name, c.Header)
		}
	default:
		return fmt.Errorf("credential %s: auth %q is not one of bearer, basic, header, git", c.Name, c.Auth)
	}
	return nil
}

// Set is the credentials one run was granted. The zero Set holds none.
type Set struct {
	creds []Credential
	// routes are every (credential, host) pair, longest prefix first.
	routes []route
}

type route struct {
	host Host
	cred int
}

// NewSet checks every credential and refuses two that claim the same host and prefix:
// which one a request gets would be a guess.
func NewSet(creds []Credential) (*Set, error) {
	s := &Set{creds: creds}
	seen := map[string]string{}
	for i, c := range creds {
		if err := c.Check(); err != nil {
			return nil, err
		}
		for _, h := range c.Hosts {
			k := h.Name + h.Prefix
			if other, ok := seen[k]; ok {
				return nil, fmt.Errorf("credentials %s and %s both claim %s", other, c.Name, h)
			}
			seen[k] = c.Name
			s.routes = append(s.routes, route{h, i})
		}
	}
	sort.SliceStable(s.routes, func(a, b int) bool { return len(s.routes[a].host.Prefix) > len(s.routes[b].host.Prefix) })
	return s, nil
}

// Len is how many credentials the set holds.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.creds)
}

// Names are the set's credential names, in order.
func (s *Set) Names() []string {
	if s == nil {
		return nil
	}
	out := make([]string, len(s.creds))
	for i, c := range s.creds {
		out[i] = c.Name
	}
	return out
}

// Match is where a request to host (the name the VM asked for) and path goes: the
// credential and the host entry with the longest matching prefix. declared says the
// host has a credential at all, so a path outside every prefix is refused rather than
// sent without one to a host the allowlist may not even name.
func (s *Set) Match(host, path string) (c *Credential, h Host, declared bool) {
	if s == nil {
		return nil, Host{}, false
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, r := range s.routes {
		if r.host.Name != host {
			continue
		}
		declared = true
		if r.host.Prefix == "/" || strings.HasPrefix(path, r.host.Prefix) {
			return &s.creds[r.cred], r.host, true
		}
	}
	return nil, Host{}, declared
}

// RootCAs are the roots a host is verified against: those of a credential declared for
// it that has its own, nil when none has (the firewall's roots then).
func (s *Set) RootCAs(host string) *x509.CertPool {
	if s == nil {
		return nil
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, r := range s.routes {
		if r.host.Name == host && s.creds[r.cred].RootCAs != nil {
			return s.creds[r.cred].RootCAs
		}
	}
	return nil
}

// Declared lists a host's prefixes, for a refusal that says where the credential goes.
func (s *Set) Declared(host string) []string {
	var out []string
	if s == nil {
		return out
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, r := range s.routes {
		if r.host.Name == host {
			out = append(out, r.host.String()+" ("+s.creds[r.cred].Name+")")
		}
	}
	return out
}

// clientCredentialHeaders are removed from every request a credential goes on: whatever
// the VM sent (a placeholder, a guess) never reaches the host beside the real value.
var clientCredentialHeaders = []string{"Authorization", "Proxy-Authorization", "Cookie", "X-Api-Key", "Private-Token", "Job-Token", "X-Jfrog-Art-Api"}

// Apply removes whatever credential the client sent and puts c's on h.
func (c *Credential) Apply(h http.Header) {
	for _, k := range clientCredentialHeaders {
		h.Del(k)
	}
	// CGI, Rails and nginx with underscores allowed read Private_Token as Private-Token:
	// a client's spelling with underscores goes too, so no second value rides beside
	// the real one.
	for k := range h {
		alias := http.CanonicalHeaderKey(strings.ReplaceAll(k, "_", "-"))
		if alias != k && (slices.Contains(clientCredentialHeaders, alias) || c.Auth == AuthHeader && alias == http.CanonicalHeaderKey(c.Header)) {
			h.Del(k)
		}
	}
	switch c.Auth {
	case AuthBearer:
		h.Set("Authorization", "Bearer "+c.Value)
	case AuthBasic:
		h.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(c.Username+":"+c.Value)))
	case AuthGit:
		user := c.Username
		if user == "" {
			user = DefaultGitUsername
		}
		h.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(user+":"+c.Value)))
	case AuthHeader:
		h.Del(c.Header)
		h.Set(c.Header, c.Value)
	}
}

// Carries reports which of the set's placeholders a request head holds, in its bytes or
// inside a Basic credential (where a tool writes base64(user:placeholder)); "" when none.
// It is how a placeholder sent toward any other host is caught: the value is worthless
// there, but the tool was pointed at the wrong place and the run should say so.
func (s *Set) Carries(head []byte) string {
	if s.Len() == 0 {
		return ""
	}
	text := string(head)
	lower := strings.ToLower(text)
	for _, c := range s.creds {
		if strings.Contains(lower, c.Placeholder) {
			return c.Name
		}
	}
	if !strings.Contains(lower, "basic") {
		return ""
	}
	for _, line := range strings.Split(text, "\n") {
		_, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) < 6 || !strings.EqualFold(v[:5], "basic") || v[5] != ' ' && v[5] != '\t' {
			continue
		}
		raw, ok := decodeBase64(strings.Trim(v[6:], " \t"))
		if !ok {
			continue
		}
		for _, c := range s.creds {
			if strings.Contains(strings.ToLower(string(raw)), c.Placeholder) {
				return c.Name
			}
		}
	}
	return ""
}

// decodeBase64 reads base64 as lenient servers do: padded or not, standard or URL
// alphabet.
func decodeBase64(v string) ([]byte, bool) {
	v = strings.TrimRight(v, "=")
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		if raw, err := enc.DecodeString(v); err == nil {
			return raw, true
		}
	}
	return nil, false
}
