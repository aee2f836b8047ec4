package firewall

// Attacks on the credential path (issue #26), written as the agent in the VM would try
// them: it can send any bytes to the firewall's listener and wants the runner host's
// credential sent anywhere but its declared host and prefix over verified TLS, or read
// back. Each test asserts the attack is refused and that no upstream sees the value
// where it should not.

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bumperdev/bumper/firewall/credential"
)

// hostileRegistry is a credential host that behaves as some real ones do, to the
// attacker's benefit: it answers TRACE by echoing the request (Apache's default), takes
// X-Original-URL / X-Rewrite-URL as the path (IIS URL Rewrite, Symfony), and strips
// ";params" before resolving dot segments (Tomcat, under Artifactory and Nexus). It
// records every request that reached a path outside /npm/ with the credential.
type hostileRegistry struct {
	mu      sync.Mutex
	reqs    []string
	escaped []string
}

func (h *hostileRegistry) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var hdr strings.Builder
	r.Header.Write(&hdr)
	h.reqs = append(h.reqs, r.Method+" "+r.RequestURI+"\n"+hdr.String())
	if r.Method == "TRACE" || r.Method == "TRACK" {
		rw.Header().Set("Content-Type", "message/http")
		io.WriteString(rw, r.Method+" "+r.RequestURI+" HTTP/1.1\r\n"+hdr.String())
		return
	}
	p := r.URL.EscapedPath()
	for _, k := range []string{"X-Original-Url", "X-Rewrite-Url"} {
		if v := r.Header.Get(k); v != "" {
			p = v
		}
	}
	// Tomcat: drop ;params from every segment, then decode and resolve dot segments.
	segs := strings.Split(p, "/")
	for i, s := range segs {
		s, _, _ = strings.Cut(s, ";")
		if d, err := url.PathUnescape(s); err == nil {
			s = d
		}
		segs[i] = s
	}
	eff := path.Clean("/" + strings.Join(segs, "/"))
	if !strings.HasPrefix(eff+"/", "/npm/") && strings.Contains(r.Header.Get("Authorization"), credReal) {
		h.escaped = append(h.escaped, r.Method+" "+r.RequestURI+" -> "+eff)
	}
	io.WriteString(rw, "ok "+eff)
}

func (h *hostileRegistry) state() (reqs, escaped string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.reqs, "\n"), strings.Join(h.escaped, "\n")
}

type attackWorld struct {
	fw        *Firewall
	reg       *hostileRegistry
	regPort   string
	other     *seen
	otherAuth string
	auditPath string
}

// newAttackWorld is newCredWorld with a hostile registry: example.com:PORT/npm/ holds
// the credential (pinned to loopback, verified against the test server's certificate),
// other.test is a plain upstream on the allowlist.
func newAttackWorld(t *testing.T, mutate ...func(*Config)) *attackWorld {
	t.Helper()
	w := &attackWorld{reg: &hostileRegistry{}, other: &seen{}}
	reg := httptest.NewTLSServer(w.reg)
	t.Cleanup(reg.Close)
	other := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.other.add(r)
		io.WriteString(rw, "other")
	}))
	t.Cleanup(other.Close)
	_, w.regPort, _ = net.SplitHostPort(reg.Listener.Addr().String())
	_, op, _ := net.SplitHostPort(other.Listener.Addr().String())
	w.otherAuth = "other.test:" + op
	w.auditPath = filepath.Join(t.TempDir(), "audit.jsonl")
	host, err := credential.ParseHost("example.com:" + w.regPort + "/npm")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &Config{
		Listen: "127.0.0.1:0", Audit: w.auditPath, Allow: []string{"other.test:" + op},
		Resolve: map[string]string{"example.com": "127.0.0.1", "other.test": "127.0.0.1"},
		Gateway: GatewayConfig{CAFile: writeCA(t, reg)},
		Credentials: []credential.Credential{{Name: "npm", Hosts: []credential.Host{host}, Auth: credential.AuthBearer,
			Value: credReal, Placeholder: credPlaceholder}},
	}
	for _, m := range mutate {
		m(cfg)
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
	return w
}

// rawAll sends raw bytes and returns everything the firewall answers until it closes.
func rawAll(t *testing.T, addr, raw string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(c)
	return string(b)
}

func (w *attackWorld) noLeak(t *testing.T, answer string) {
	t.Helper()
	if strings.Contains(answer, credReal) {
		t.Fatalf("the value came back to the client:\n%s", answer)
	}
	if _, esc := w.reg.state(); esc != "" {
		t.Fatalf("the credential reached a path outside /npm/: %s", esc)
	}
	if got := w.other.all(); strings.Contains(got, credReal) {
		t.Fatalf("the other host saw the value: %q", got)
	}
}

// TestAttackCredentialReflection: methods and headers that make a credential host echo
// the request, or serve another path than the one the firewall checked, are refused
// before the host sees anything.
func TestAttackCredentialReflection(t *testing.T) {
	w := newAttackWorld(t)
	const host = "Host: example.com\r\n"
	refused := []struct{ name, raw string }{
		// Apache answers TRACE with the request it got, Authorization included.
		{"TRACE echoes the added header", "TRACE http://example.com/npm/x HTTP/1.1\r\n" + host + "\r\n"},
		{"TRACK", "TRACK http://example.com/npm/x HTTP/1.1\r\n" + host + "\r\n"},
		{"trace lower case", "trace http://example.com/npm/x HTTP/1.1\r\n" + host + "\r\n"},
		{"an unknown method", "PROPFIND http://example.com/npm/x HTTP/1.1\r\n" + host + "\r\n"},
		// Tomcat drops ";params" before resolving "..": /npm/..;/admin is /admin.
		{"path parameter dot-dot", "GET http://example.com/npm/..;/admin HTTP/1.1\r\n" + host + "\r\n"},
		{"path parameter dot-dot with a value", "GET http://example.com/npm/..;jsessionid=1/admin HTTP/1.1\r\n" + host + "\r\n"},
		{"encoded path parameter dot-dot", "GET http://example.com/npm/%2e%2e;/admin HTTP/1.1\r\n" + host + "\r\n"},
		{"encoded semicolon dot-dot", "GET http://example.com/npm/..%3b/admin HTTP/1.1\r\n" + host + "\r\n"},
		{"dot with a parameter", "GET http://example.com/npm/.;/x HTTP/1.1\r\n" + host + "\r\n"},
		{"three dots", "GET http://example.com/npm/.../admin HTTP/1.1\r\n" + host + "\r\n"},
		{"dot-dot and a space (IIS trims it)", "GET http://example.com/npm/..%20/admin HTTP/1.1\r\n" + host + "\r\n"},
		{"NUL in the path", "GET http://example.com/npm/x%00/../admin HTTP/1.1\r\n" + host + "\r\n"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := w.reg.state()
			out := rawAll(t, w.fw.Addr(), tc.raw)
			if !strings.HasPrefix(out, "HTTP/1.1 403 ") || !strings.Contains(out, "X-Bumper-Denied: credential") {
				t.Fatalf("answer %q, want 403 credential", clip(out, 400))
			}
			w.noLeak(t, out)
			if after, _ := w.reg.state(); after != before {
				t.Fatalf("the registry was reached: %q", strings.TrimPrefix(after, before))
			}
		})
	}

	// Headers some servers take as the request's real path or method are not sent to
	// a credential host: the firewall checked the request line, not them.
	for _, hv := range []string{"X-Original-URL: /admin", "X-Rewrite-URL: /admin", "x-original-url: /admin"} {
		t.Run("path override "+hv, func(t *testing.T) {
			out := rawAll(t, w.fw.Addr(), "GET http://example.com/npm/x HTTP/1.1\r\n"+host+hv+"\r\n\r\n")
			if !strings.HasPrefix(out, "HTTP/1.1 200 ") || !strings.Contains(out, "ok /npm/x") {
				t.Fatalf("answer %q, want the request served at /npm/x", clip(out, 400))
			}
			w.noLeak(t, out)
		})
	}
	t.Run("method override headers are dropped", func(t *testing.T) {
		before, _ := w.reg.state()
		out := rawAll(t, w.fw.Addr(), "POST http://example.com/npm/x HTTP/1.1\r\n"+host+
			"X-HTTP-Method-Override: TRACE\r\nX-HTTP-Method: TRACE\r\nX-Method-Override: TRACE\r\nContent-Length: 0\r\n\r\n")
		after, _ := w.reg.state()
		got := strings.ToLower(strings.TrimPrefix(after, before))
		if !strings.HasPrefix(out, "HTTP/1.1 200 ") || strings.Contains(got, "override") || strings.Contains(got, "x-http-method") {
			t.Fatalf("answer %q; the registry saw %q", clip(out, 300), got)
		}
	})
	t.Run("ordinary methods still go", func(t *testing.T) {
		for _, m := range []string{"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"} {
			out := rawAll(t, w.fw.Addr(), m+" http://example.com/npm/x HTTP/1.1\r\n"+host+"Content-Length: 0\r\n\r\n")
			if !strings.HasPrefix(out, "HTTP/1.1 200 ") {
				t.Fatalf("%s: %q", m, clip(out, 300))
			}
		}
		w.noLeak(t, "")
	})
}

// TestAttackCredentialRouting: every way of pointing a request that gets the credential
// somewhere else (another host, port, scheme, a Host header that disagrees, userinfo,
// pipelining, smuggling) is refused or goes without the credential.
func TestAttackCredentialRouting(t *testing.T) {
	w := newAttackWorld(t)
	oa := w.otherAuth
	refused := []struct{ name, raw, status string }{
		{"Host header names another host", "GET http://example.com/npm/x HTTP/1.1\r\nHost: " + oa + "\r\n\r\n", "400"},
		{"target another host, Host the credential's", "GET http://" + oa + "/npm/x HTTP/1.1\r\nHost: example.com\r\n\r\n", "400"},
		{"two Host headers", "GET http://example.com/npm/x HTTP/1.1\r\nHost: example.com\r\nHost: " + oa + "\r\n\r\n", "400"},
		{"userinfo naming the host", "GET http://example.com@" + oa + "/npm/x HTTP/1.1\r\nHost: " + oa + "\r\n\r\n", "403"},
		{"userinfo before the host", "GET http://" + oa + "@example.com/npm/x HTTP/1.1\r\nHost: example.com\r\n\r\n", "403"},
		{"https absolute URI", "GET https://example.com/npm/x HTTP/1.1\r\nHost: example.com\r\n\r\n", "400"},
		{"port 443", "GET http://example.com:443/npm/x HTTP/1.1\r\nHost: example.com:443\r\n\r\n", "403"},
		{"the registry's own port", "GET http://example.com:" + w.regPort + "/npm/x HTTP/1.1\r\nHost: example.com:" + w.regPort + "\r\n\r\n", "403"},
		{"CONNECT to the credential host", "CONNECT example.com:" + w.regPort + " HTTP/1.1\r\nHost: example.com:" + w.regPort + "\r\n\r\n", "403"},
		{"both framings", "POST http://example.com/npm/x HTTP/1.1\r\nHost: example.com\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "400"},
		{"obs-fold Host", "GET http://example.com/npm/x HTTP/1.1\r\nHost: example.com\r\n " + oa + "\r\n\r\n", "400"},
		{"bare LF", "GET http://example.com/npm/x HTTP/1.1\nHost: example.com\n\n", "400"},
		{"tab in the request line", "GET\thttp://example.com/npm/x HTTP/1.1\r\nHost: example.com\r\n\r\n", "400"},
		{"HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "400"},
		{"upgrade", "GET http://example.com/npm/x HTTP/1.1\r\nHost: example.com\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n", "400"},
		{"fullwidth dot host", "GET http://example\uff0ecom/npm/x HTTP/1.1\r\nHost: example\uff0ecom\r\n\r\n", ""},
		{"IPv6 literal of the pin", "GET http://[::ffff:127.0.0.1]/npm/x HTTP/1.1\r\nHost: [::ffff:127.0.0.1]\r\n\r\n", "403"},
		{"two trailing dots", "GET http://example.com../npm/x HTTP/1.1\r\nHost: example.com..\r\n\r\n", ""},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := w.reg.state()
			out := rawAll(t, w.fw.Addr(), tc.raw)
			if tc.status != "" && !strings.HasPrefix(out, "HTTP/1.1 "+tc.status+" ") || tc.status == "" && !strings.HasPrefix(out, "HTTP/1.1 4") && !strings.HasPrefix(out, "HTTP/1.1 5") {
				t.Fatalf("answer %q, want %s", clip(out, 300), tc.status)
			}
			w.noLeak(t, out)
			if after, _ := w.reg.state(); after != before {
				t.Fatalf("the registry was reached: %q", strings.TrimPrefix(after, before))
			}
			if got := w.other.all(); got != "" {
				t.Fatalf("the other host was reached: %q", got)
			}
		})
	}

	// Case and one trailing dot name the declared host: they get the credential, sent
	// to the declared host only.
	t.Run("case and trailing dot go to the declared host", func(t *testing.T) {
		out := rawAll(t, w.fw.Addr(), "GET http://EXAMPLE.com./npm/x HTTP/1.1\r\nHost: example.COM\r\n\r\n")
		if !strings.HasPrefix(out, "HTTP/1.1 200 ") {
			t.Fatalf("%q", clip(out, 300))
		}
		w.noLeak(t, out)
	})

	// A second request pipelined behind a credential request, or smuggled in its body,
	// never reaches anyone: the connection closes after the credential request.
	smuggled := "GET http://" + oa + "/smuggled HTTP/1.1\r\nHost: " + oa + "\r\n\r\n"
	for _, tc := range []struct{ name, raw string }{
		{"pipelined", "GET http://example.com/npm/x HTTP/1.1\r\nHost: example.com\r\n\r\n" + smuggled},
		{"pipelined after HTTP/1.0", "GET http://example.com/npm/x HTTP/1.0\r\n\r\n" + smuggled},
		{"in a sized body", "POST http://example.com/npm/x HTTP/1.1\r\nHost: example.com\r\nContent-Length: 0\r\n\r\n" + smuggled},
		{"after a chunked body", "POST http://example.com/npm/x HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled},
		{"chunk extension", "POST http://example.com/npm/x HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: chunked\r\n\r\n1;a=\"\r\n0\r\n\r\n\"\r\nx\r\n0\r\n\r\n" + smuggled},
		{"trailer with a placeholder", "POST http://example.com/npm/x HTTP/1.1\r\nHost: example.com\r\nTrailer: Authorization\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nAuthorization: Bearer " + credPlaceholder + "\r\n\r\n" + smuggled},
		{"expect 100-continue", "PUT http://example.com/npm/x HTTP/1.1\r\nHost: example.com\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nab" + smuggled},
	} {
		t.Run("smuggle "+tc.name, func(t *testing.T) {
			out := rawAll(t, w.fw.Addr(), tc.raw)
			if strings.Count(out, "HTTP/1.1 2") > 1 || strings.Contains(out, "other") {
				t.Fatalf("two answers: %q", clip(out, 600))
			}
			w.noLeak(t, out)
			if got := w.other.all(); got != "" {
				t.Fatalf("the smuggled request reached the other host: %q", got)
			}
		})
	}

	// The other way round: a plain request to an allowed host, keep-alive, and then a
	// credential request on the same connection: the second is judged on its own and
	// goes to the declared host only.
	t.Run("credential request behind a plain one", func(t *testing.T) {
		out := rawAll(t, w.fw.Addr(), "GET http://"+oa+"/first HTTP/1.1\r\nHost: "+oa+"\r\n\r\n"+
			"GET http://example.com/npm/x HTTP/1.1\r\nHost: example.com\r\nAuthorization: Bearer "+credPlaceholder+"\r\n\r\n")
		if !strings.Contains(out, "ok /npm/x") {
			t.Fatalf("%q", clip(out, 600))
		}
		w.noLeak(t, out)
	})

	// The placeholder toward another host, encoded in the path, is not recognised, but
	// the other host sees only the placeholder, never the value.
	t.Run("percent-encoded placeholder elsewhere carries no value", func(t *testing.T) {
		enc := strings.ReplaceAll(credPlaceholder, "-", "%2D")
		rawAll(t, w.fw.Addr(), "GET http://"+oa+"/"+enc+" HTTP/1.1\r\nHost: "+oa+"\r\n\r\n")
		w.noLeak(t, "")
	})
}

// TestAttackCredentialDoS: crafted credential-host requests neither hang the firewall
// nor hold a connection past its idle timeout.
func TestAttackCredentialDoS(t *testing.T) {
	w := newAttackWorld(t, func(c *Config) { c.Limits.IdleTimeout = 500 * time.Millisecond })
	for _, tc := range []struct{ name, raw string }{
		{"body never sent", "POST http://example.com/npm/x HTTP/1.1\r\nHost: example.com\r\nContent-Length: 1000000\r\n\r\nab"},
		{"chunk never ends", "POST http://example.com/npm/x HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: chunked\r\n\r\nfffffff\r\nab"},
		{"huge chunk size", "POST http://example.com/npm/x HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffffff\r\n"},
		{"expect 100-continue without a body", "PUT http://example.com/npm/x HTTP/1.1\r\nHost: example.com\r\nExpect: 100-continue\r\nContent-Length: 10\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			out := rawAll(t, w.fw.Addr(), tc.raw)
			if d := time.Since(start); d > 8*time.Second {
				t.Fatalf("held for %v: %q", d, clip(out, 300))
			}
			w.noLeak(t, out)
		})
	}
	t.Run("header flood", func(t *testing.T) {
		raw := "GET http://example.com/npm/x HTTP/1.1\r\nHost: example.com\r\n" + strings.Repeat("X-A: "+strings.Repeat("b", 1000)+"\r\n", 200) + "\r\n"
		out := rawAll(t, w.fw.Addr(), raw)
		if !strings.HasPrefix(out, "HTTP/1.1 4") {
			t.Fatalf("%q", clip(out, 300))
		}
	})
}

// TestAttackCredentialPrivateAddress: a credential host that is not pinned and resolves
// to a private address is not dialled, credential or not.
func TestAttackCredentialPrivateAddress(t *testing.T) {
	w := newAttackWorld(t, func(c *Config) {
		h, err := credential.ParseHost("localhost/npm")
		if err != nil {
			t.Fatal(err)
		}
		c.Credentials[0].Hosts = append(c.Credentials[0].Hosts, h)
	})
	out := rawAll(t, w.fw.Addr(), "GET http://localhost/npm/x HTTP/1.1\r\nHost: localhost\r\n\r\n")
	if !strings.HasPrefix(out, "HTTP/1.1 403 ") || !strings.Contains(out, "private") && !strings.Contains(out, "refused address") {
		t.Fatalf("%q", clip(out, 400))
	}
	w.noLeak(t, out)
}

// TestAttackCredentialAuditClean: after all of the above, the audit log never holds
// the value.
func TestAttackCredentialAuditClean(t *testing.T) {
	w := newAttackWorld(t)
	for _, raw := range []string{
		"TRACE http://example.com/npm/x HTTP/1.1\r\nHost: example.com\r\n\r\n",
		"GET http://example.com/npm/x HTTP/1.1\r\nHost: example.com\r\n\r\n",
		"GET http://example.com/npm/..;/x HTTP/1.1\r\nHost: example.com\r\n\r\n",
		"GET http://" + w.otherAuth + "/ HTTP/1.1\r\nHost: " + w.otherAuth + "\r\nAuthorization: Bearer " + credPlaceholder + "\r\n\r\n",
	} {
		rawAll(t, w.fw.Addr(), raw)
	}
	w.fw.Stop(context.Background())
	log, err := os.ReadFile(w.auditPath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(log), credReal) {
		t.Fatalf("the audit log holds the value:\n%s", log)
	}
	_ = bufio.NewReader
	_ = strconv.Itoa
}
