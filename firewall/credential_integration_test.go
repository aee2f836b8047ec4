package firewall

import (
	"bufio"
	"context"
	"crypto/x509"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/bumperdev/bumper/firewall/credential"
)

const (
	credReal        = "npm_REALVALUE_0123456789abcdef"
	credPlaceholder = credential.PlaceholderPrefix + "npm-0123456789abcdef01234567"
)

// seen records what an upstream was sent.
type seen struct {
	mu   sync.Mutex
	reqs []string // "METHOD path auth"
}

func (s *seen) add(r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("Authorization")+" "+r.Header.Get("Cookie"))
}

func (s *seen) all() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.reqs, "\n")
}

// credWorld is a firewall with one credential for example.com's /npm/ (the TLS
// upstream, pinned to loopback) and other.test (a plain upstream on the allowlist).
type credWorld struct {
	fw            *Firewall
	registry      *seen
	other         *seen
	regPort       int
	otherURL      string
	client        *http.Client
	auditPath     string
	otherAuthorty string
}

func newCredWorld(t *testing.T, caFile func(*httptest.Server) string, mutate ...func(*Config, *httptest.Server)) *credWorld {
	t.Helper()
	w := &credWorld{registry: &seen{}, other: &seen{}}
	reg := httptest.NewTLSServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.registry.add(r)
		switch r.URL.Path {
		case "/npm/redirect-same":
			http.Redirect(rw, r, "https://example.com:"+strconv.Itoa(w.regPort)+"/npm/pkg", http.StatusFound)
		case "/npm/redirect-away":
			http.Redirect(rw, r, w.otherURL+"/blob", http.StatusFound)
		default:
			if r.Header.Get("Authorization") != "Bearer "+credReal {
				http.Error(rw, "no token", http.StatusUnauthorized)
				return
			}
			io.WriteString(rw, "package "+r.URL.Path)
		}
	}))
	t.Cleanup(reg.Close)
	other := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.other.add(r)
		io.WriteString(rw, "other")
	}))
	t.Cleanup(other.Close)
	_, rp, _ := net.SplitHostPort(reg.Listener.Addr().String())
	w.regPort, _ = strconv.Atoi(rp)
	_, op, _ := net.SplitHostPort(other.Listener.Addr().String())
	w.otherAuthorty = "other.test:" + op
	w.otherURL = "http://" + w.otherAuthorty
	w.auditPath = filepath.Join(t.TempDir(), "audit.jsonl")
	host, err := credential.ParseHost("example.com:" + rp + "/npm")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &Config{
		Listen: "127.0.0.1:0", Audit: w.auditPath, Allow: []string{"other.test:" + op},
		Resolve: map[string]string{"example.com": "127.0.0.1", "other.test": "127.0.0.1"},
		Gateway: GatewayConfig{CAFile: caFile(reg)},
		Credentials: []credential.Credential{{Name: "npm", Hosts: []credential.Host{host}, Auth: credential.AuthBearer,
			Value: credReal, Placeholder: credPlaceholder}},
	}
	for _, m := range mutate {
		m(cfg, reg)
	}
	fw, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { fw.Stop(context.Background()); cancel() })
	if err := fw.Start(ctx); err != nil {
		t.Fatal(err)
	}
	w.fw = fw
	proxy, _ := url.Parse("http://" + fw.Addr())
	w.client = &http.Client{
		Transport:     &http.Transport{Proxy: http.ProxyURL(proxy)},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return w
}

// reply is what a client got: the status, the headers, the body.
type reply struct {
	StatusCode int
	Header     http.Header
}

func (w *credWorld) get(t *testing.T, target string, hdr ...string) (reply, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := w.client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", target, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header}, string(b)
}

// TestCredentialGoesOnlyToItsHost: the firewall adds the runner host's credential to
// plain-HTTP requests to its declared host and prefix, over verified TLS, in place of
// whatever the client sent; everything an agent might try to get it elsewhere is refused
// before any upstream sees a byte.
func TestCredentialGoesOnlyToItsHost(t *testing.T) {
	w := newCredWorld(t, func(s *httptest.Server) string { return writeCA(t, s) })
	basicPH := "Basic " + base64.StdEncoding.EncodeToString([]byte("agent:"+credPlaceholder))

	t.Run("added on the declared host, the placeholder replaced", func(t *testing.T) {
		for _, hdr := range [][]string{nil, {"Authorization", "Bearer " + credPlaceholder}, {"Authorization", "Bearer guess", "Cookie", "s=1"}} {
			resp, body := w.get(t, "http://example.com/npm/@corp%2fpkg", hdr...)
			if resp.StatusCode != http.StatusOK || !strings.Contains(body, "package /npm/@corp/pkg") {
				t.Fatalf("with %v: %d %q", hdr, resp.StatusCode, body)
			}
		}
		got := w.registry.all()
		if strings.Count(got, "Bearer "+credReal) != 3 || strings.Contains(got, credPlaceholder) || strings.Contains(got, "guess") || strings.Contains(got, "s=1") {
			t.Fatalf("the registry saw %q", got)
		}
	})

	refused := []struct {
		name, target string
		hdr          []string
		want         string
	}{
		{"outside the prefix", "http://example.com/admin", nil, "outside the paths"},
		{"dot segments", "http://example.com/npm/../admin", nil, "dot segments"},
		{"encoded dot segments", "http://example.com/npm/%2e%2e/admin", nil, "dot segments"},
		{"encoded slash", "http://example.com/npm/..%2fadmin", nil, "dot segments"},
		{"backslash", "http://example.com/npm/..%5cadmin", nil, "dot segments"},
		{"another port", "http://example.com:8080/npm/pkg", nil, "port 8080 is refused"},
		{"placeholder to another host", w.otherURL + "/", []string{"Authorization", "Bearer " + credPlaceholder}, "placeholder of credential npm"},
		{"placeholder in basic to another host", w.otherURL + "/", []string{"Authorization", basicPH}, "placeholder of credential npm"},
		{"placeholder in the query", w.otherURL + "/?token=" + credPlaceholder, nil, "placeholder of credential npm"},
		{"placeholder in another header, upper case", w.otherURL + "/", []string{"X-Token", strings.ToUpper(credPlaceholder)}, "placeholder of credential npm"},
		{"placeholder to a gateway path", "http://" + w.fw.Addr() + "/git/o/r.git/info/refs", []string{"Authorization", basicPH}, "placeholder of credential npm"},
	}
	before := w.registry.all()
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			var resp reply
			var body string
			if strings.HasPrefix(tc.target, "http://"+w.fw.Addr()) {
				resp, body = originForm(t, w.fw.Addr(), tc.target, tc.hdr)
			} else {
				resp, body = w.get(t, tc.target, tc.hdr...)
			}
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, tc.want) || resp.Header.Get("X-Bumper-Denied") != "credential" {
				t.Fatalf("%d %v %q, want 403 credential %q", resp.StatusCode, resp.Header, body, tc.want)
			}
		})
	}
	if got := w.registry.all(); got != before {
		t.Fatalf("the registry was reached by refused requests: %q", strings.TrimPrefix(got, before))
	}
	if got := w.other.all(); got != "" {
		t.Fatalf("the other host was reached by refused requests: %q", got)
	}

	t.Run("placeholder in a CONNECT", func(t *testing.T) {
		out := rawExchange(t, w.fw.Addr(), "CONNECT "+w.otherAuthorty+" HTTP/1.1\r\nHost: "+w.otherAuthorty+"\r\nProxy-Authorization: "+basicPH+"\r\n\r\n")
		if !strings.HasPrefix(out, "HTTP/1.1 403") {
			t.Fatalf("CONNECT carrying the placeholder: %q", out)
		}
	})

	t.Run("a redirect on the host comes back through the firewall", func(t *testing.T) {
		resp, _ := w.get(t, "http://example.com/npm/redirect-same")
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || loc != "http://example.com/npm/pkg" {
			t.Fatalf("%d Location %q", resp.StatusCode, loc)
		}
	})

	t.Run("a redirect elsewhere drops the credential", func(t *testing.T) {
		resp, _ := w.get(t, "http://example.com/npm/redirect-away")
		loc := resp.Header.Get("Location")
		if resp.StatusCode != http.StatusFound || loc != w.otherURL+"/blob" {
			t.Fatalf("%d Location %q", resp.StatusCode, loc)
		}
		if resp, _ := w.get(t, loc); resp.StatusCode != http.StatusOK {
			t.Fatalf("following the redirect: %d", resp.StatusCode)
		}
		if got := w.other.all(); strings.Contains(got, credReal) || !strings.Contains(got, "GET /blob") {
			t.Fatalf("the other host saw %q", got)
		}
	})

	w.fw.Stop(context.Background())
	log, err := os.ReadFile(w.auditPath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(log), credReal) || !strings.Contains(string(log), "credential npm (bearer) added toward example.com:") {
		t.Fatalf("audit log:\n%s", log)
	}
}

// TestCredentialHostMustVerify: a credential host whose certificate the firewall does
// not trust gets nothing: the credential is never sent over a connection it could not
// verify.
func TestCredentialHostMustVerify(t *testing.T) {
	w := newCredWorld(t, func(*httptest.Server) string { return "" })
	resp, body := w.get(t, "http://example.com/npm/pkg")
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "certificate") {
		t.Fatalf("%d %q, want 502 naming the certificate", resp.StatusCode, body)
	}
	if got := w.registry.all(); got != "" {
		t.Fatalf("the registry saw %q", got)
	}
}

// TestCredentialOwnRoots: a credential that names its own CA (an internal registry
// under a company CA) is verified against it alone.
func TestCredentialOwnRoots(t *testing.T) {
	w := newCredWorld(t, func(*httptest.Server) string { return "" }, func(c *Config, reg *httptest.Server) {
		pool := x509.NewCertPool()
		pool.AddCert(reg.Certificate())
		c.Credentials[0].RootCAs = pool
	})
	if resp, body := w.get(t, "http://example.com/npm/pkg"); resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
}

// originForm sends one origin-form request straight to the firewall, as the VM does to
// its gateways.
func originForm(t *testing.T, addr, target string, hdr []string) (reply, string) {
	t.Helper()
	u, _ := url.Parse(target)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := "GET " + u.RequestURI() + " HTTP/1.1\r\nHost: " + addr + "\r\n"
	for i := 0; i+1 < len(hdr); i += 2 {
		req += hdr[i] + ": " + hdr[i+1] + "\r\n"
	}
	io.WriteString(c, req+"\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header}, string(b)
}
