package firewall

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/firewall/audit"
	"github.com/bumperdev/bumper/firewall/policy"
)

// fakeResolver answers from a map; names not in it fail like NXDOMAIN.
type fakeResolver map[string][]netip.Addr

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := f[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

type testProxy struct {
	addr      string
	auditPath string
	log       *audit.Log
	srv       *Server
}

// waitClientConns waits until the server counts n connections from loopback: the
// per-client limit is decided at accept, after the client's dial has returned.
func (tp *testProxy) waitClientConns(t testing.TB, n int) {
	t.Helper()
	lo := netip.MustParseAddr("127.0.0.1")
	for deadline := time.Now().Add(5 * time.Second); ; {
		tp.srv.mu.Lock()
		got := tp.srv.perClient[lo]
		tp.srv.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server counts %d connections from loopback, want %d", got, n)
		}
		runtime.Gosched()
	}
}

// startProxy runs a firewall on loopback. upstream is "host:port" of the plain upstream,
// tlsUp of the TLS one; allowed.test and www.allowed.test are pinned to loopback.
func startProxy(t testing.TB, httpPort, tlsPort string, mutate func(*Options)) *testProxy {
	t.Helper()
	p, err := policy.New([]string{
		"allowed.test:" + httpPort + "," + tlsPort + ",443",
		"*.allowed.test:" + httpPort + "," + tlsPort + ",443",
	}, []string{"blocked.allowed.test"})
	if err != nil {
		t.Fatal(err)
	}
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	al, err := audit.Open(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{
		Policy: p,
		Filter: policy.NewAddrFilter(nil),
		Resolver: fakeResolver{
			"meta.allowed.test":   {netip.MustParseAddr("169.254.169.254")},
			"ten.allowed.test":    {netip.MustParseAddr("10.1.2.3")},
			"mapped.allowed.test": {netip.MustParseAddr("::ffff:127.0.0.1")},
			"mixed.allowed.test":  {netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("fd00:ec2::254")},
		},
		Overrides: map[string]netip.Addr{
			"allowed.test":     netip.MustParseAddr("127.0.0.1"),
			"www.allowed.test": netip.MustParseAddr("127.0.0.1"),
		},
		Audit:          al,
		MaxHeaderBytes: 4096,
	}
	if mutate != nil {
		mutate(&opts)
	}
	srv, err := NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := Listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		al.Close()
	})
	return &testProxy{addr: ln.Addr().String(), auditPath: auditPath, log: al, srv: srv}
}

// waitAudit waits for an audit line containing every substring and returns it.
func (tp *testProxy) waitAudit(t testing.TB, subs ...string) string {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		tp.log.Flush()
		data, _ := os.ReadFile(tp.auditPath)
		for _, line := range strings.Split(string(data), "\n") {
			ok := line != ""
			for _, s := range subs {
				ok = ok && strings.Contains(line, s)
			}
			if ok {
				return line
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no audit line with %q in:\n%s", subs, data)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func upstreams(t *testing.T) (plain, tlsSrv *httptest.Server, httpPort, tlsPort string) {
	t.Helper()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Proxy-Authorization") != "" || r.Header.Get("X-Drop-Me") != "" {
			http.Error(w, "hop-by-hop header leaked", http.StatusTeapot)
			return
		}
		if r.URL.Path == "/chunked" {
			w.Write([]byte("part1-"))
			w.(http.Flusher).Flush()
			w.Write([]byte("part2"))
			return
		}
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "hello %s %s %s body=%s", r.Method, r.Host, r.URL.RequestURI(), body)
	})
	plain = httptest.NewServer(h)
	tlsSrv = httptest.NewTLSServer(h)
	t.Cleanup(plain.Close)
	t.Cleanup(tlsSrv.Close)
	_, httpPort, _ = net.SplitHostPort(plain.Listener.Addr().String())
	_, tlsPort, _ = net.SplitHostPort(tlsSrv.Listener.Addr().String())
	return
}

// serveTCP runs a raw TCP upstream on loopback that gives each connection to handle (and
// closes it after), until the test ends. It returns the address and its port.
func serveTCP(t testing.TB, handle func(net.Conn)) (addr, port string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	addr = ln.Addr().String()
	_, port, _ = net.SplitHostPort(addr)
	return addr, port
}

func TestForwardAndTunnel(t *testing.T) {
	_, tlsSrv, hp, tp := upstreams(t)
	px := startProxy(t, hp, tp, nil)
	proxyURL, _ := url.Parse("http://" + px.addr)
	certPool := tlsSrv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	client := &http.Client{Transport: &http.Transport{
		Proxy:           http.ProxyURL(proxyURL),
		TLSClientConfig: &tls.Config{RootCAs: certPool, ServerName: "example.com"},
	}, Timeout: 5 * time.Second}
	tests := []struct {
		name, method, url, body, want string
	}{
		{"get", "GET", "http://allowed.test:" + hp + "/a?b=c", "", "hello GET allowed.test:" + hp + " /a?b=c body="},
		{"get again on pooled conn", "GET", "http://www.allowed.test:" + hp + "/x", "", "hello GET www.allowed.test:" + hp + " /x body="},
		{"post body", "POST", "http://allowed.test:" + hp + "/p", "payload", "body=payload"},
		{"chunked response", "GET", "http://allowed.test:" + hp + "/chunked", "", "part1-part2"},
		{"connect tls", "GET", "https://allowed.test:" + tp + "/t", "", "hello GET allowed.test:" + tp + " /t body="},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, tc.url, strings.NewReader(tc.body))
			if tc.body == "" {
				req.Body = nil
			}
			if strings.HasPrefix(tc.url, "http:") { // the proxy must drop headers Connection names
				req.Header.Set("Connection", "X-Drop-Me")
				req.Header.Set("X-Drop-Me", "1")
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(b), tc.want) {
				t.Fatalf("status %d body %q, want %q", resp.StatusCode, b, tc.want)
			}
		})
	}
	client.CloseIdleConnections()
	px.waitAudit(t, `"kind":"http"`, `"method":"POST"`, `"allowed":true`, `"addr":"127.0.0.1:`+hp+`"`)
	px.waitAudit(t, `"kind":"connect"`, `"allowed":true`, `"target":"allowed.test:`+tp+`"`)
}

// rawExchange sends raw bytes to the proxy and returns the status line it answers with.
func rawExchange(t *testing.T, addr, raw string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("read: %v", err)
	}
	return strings.TrimSpace(line)
}

func TestHostileRequests(t *testing.T) {
	_, _, hp, tp := upstreams(t)
	px := startProxy(t, hp, tp, nil)
	a := "allowed.test:" + hp
	long := strings.Repeat("a", 63) + "."
	tests := []struct {
		name, raw, status string
		audit             []string // substrings of the audit line that records the refusal
	}{
		{"decimal ip", "GET http://2130706433:" + hp + "/ HTTP/1.1\r\nHost: 2130706433:" + hp + "\r\n\r\n", "403", []string{"non-canonical"}},
		{"octal ip", "GET http://0177.0.0.1:" + hp + "/ HTTP/1.1\r\nHost: 0177.0.0.1:" + hp + "\r\n\r\n", "403", []string{"non-canonical"}},
		{"hex ip", "GET http://0x7f.1:" + hp + "/ HTTP/1.1\r\nHost: 0x7f.1:" + hp + "\r\n\r\n", "403", []string{"0x7f.1", "non-canonical"}},
		{"canonical ip", "GET http://127.0.0.1:" + hp + "/ HTTP/1.1\r\nHost: 127.0.0.1:" + hp + "\r\n\r\n", "403", []string{"IP literal 127.0.0.1 is refused"}},
		{"ipv6 literal", "GET http://[::1]:" + hp + "/ HTTP/1.1\r\nHost: [::1]:" + hp + "\r\n\r\n", "403", []string{"IP literal ::1"}},
		{"ipv6 zone", "CONNECT [fe80::1%25lo]:443 HTTP/1.1\r\n\r\n", "403", []string{"zone id"}},
		{"connect ipv6 literal", "CONNECT [::ffff:127.0.0.1]:443 HTTP/1.1\r\n\r\n", "403", []string{"IP literal ::ffff:127.0.0.1"}},
		{"userinfo", "GET http://allowed.test@evil.test/ HTTP/1.1\r\nHost: evil.test\r\n\r\n", "403", []string{"userinfo"}},
		{"userinfo allowed host", "GET http://user:pw@" + a + "/ HTTP/1.1\r\nHost: " + a + "\r\n\r\n", "403", []string{"userinfo"}},
		{"host mismatch", "GET http://" + a + "/ HTTP/1.1\r\nHost: denied.test\r\n\r\n", "400", []string{"Host header disagrees"}},
		{"host spoof denied target", "GET http://denied.test:" + hp + "/ HTTP/1.1\r\nHost: " + a + "\r\n\r\n", "400", []string{"Host header disagrees"}},
		{"connect host mismatch", "CONNECT denied.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\n", "400", []string{"disagrees with the CONNECT target"}},
		{"two hosts", "GET http://" + a + "/ HTTP/1.1\r\nHost: " + a + "\r\nHost: " + a + "\r\n\r\n", "400", []string{"more than one Host"}},
		{"no host", "GET http://" + a + "/ HTTP/1.1\r\n\r\n", "400", []string{"without a Host header"}},
		{"smuggling cl te", "POST http://" + a + "/ HTTP/1.1\r\nHost: " + a + "\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "400", []string{"smuggling"}},
		{"te gzip", "POST http://" + a + "/ HTTP/1.1\r\nHost: " + a + "\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "400", []string{"Transfer-Encoding"}},
		{"two content lengths", "POST http://" + a + "/ HTTP/1.1\r\nHost: " + a + "\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxx", "400", []string{"conflicting Content-Length"}},
		{"bad content length", "POST http://" + a + "/ HTTP/1.1\r\nHost: " + a + "\r\nContent-Length: -1\r\n\r\n", "400", []string{"invalid Content-Length"}},
		{"oversized header", "GET http://" + a + "/ HTTP/1.1\r\nHost: " + a + "\r\nX-Big: " + strings.Repeat("x", 5000) + "\r\n\r\n", "400", []string{"larger than the configured limit"}},
		{"obs fold", "GET http://" + a + "/ HTTP/1.1\r\nHost: " + a + "\r\nX-A: 1\r\n 2\r\n\r\n", "400", []string{"folding"}},
		{"bare lf", "GET http://" + a + "/ HTTP/1.1\nHost: " + a + "\n\n", "400", []string{"bare LF"}},
		{"nul in target", "GET http://allowed.test\x00.evil.test/ HTTP/1.1\r\nHost: x\r\n\r\n", "400", []string{"control character"}},
		{"control in header", "GET http://" + a + "/ HTTP/1.1\r\nHost: " + a + "\r\nX-A: a\x01b\r\n\r\n", "400", []string{"control character"}},
		{"http2 version", "GET http://" + a + "/ HTTP/2.0\r\nHost: " + a + "\r\n\r\n", "400", []string{"unsupported protocol version"}},
		{"https absolute", "GET https://" + a + "/ HTTP/1.1\r\nHost: " + a + "\r\n\r\n", "400", []string{"use CONNECT"}},
		{"upgrade", "GET http://" + a + "/ HTTP/1.1\r\nHost: " + a + "\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", "400", []string{"upgrades"}},
		{"denied name", "GET http://denied.test/ HTTP/1.1\r\nHost: denied.test\r\n\r\n", "403", []string{"not on the allowlist"}},
		{"deny list", "CONNECT blocked.allowed.test:443 HTTP/1.1\r\n\r\n", "403", []string{"deny list"}},
		{"suffix trick", "CONNECT evilallowed.test:443 HTTP/1.1\r\n\r\n", "403", []string{"not on the allowlist"}},
		{"overlong name", "CONNECT " + strings.Repeat(long, 4) + "allowed.test:443 HTTP/1.1\r\n\r\n", "403", []string{"DNS limit"}},
		{"connect unexpected port", "CONNECT allowed.test:22 HTTP/1.1\r\n\r\n", "403", []string{"port 22 is not allowed"}},
		{"connect no port", "CONNECT allowed.test HTTP/1.1\r\n\r\n", "400", []string{"has no port"}},
		{"connect port zero", "CONNECT allowed.test:0 HTTP/1.1\r\n\r\n", "400", []string{"invalid port"}},
		{"resolves to metadata", "CONNECT meta.allowed.test:443 HTTP/1.1\r\n\r\n", "403", []string{"169.254.169.254", "cloud metadata"}},
		{"resolves to 10.x", "GET http://ten.allowed.test:" + hp + "/ HTTP/1.1\r\nHost: ten.allowed.test:" + hp + "\r\n\r\n", "403", []string{"10.1.2.3", "RFC 1918"}},
		{"resolves to mapped loopback", "CONNECT mapped.allowed.test:443 HTTP/1.1\r\n\r\n", "403", []string{"IPv4-mapped"}},
		{"all answers refused", "CONNECT mixed.allowed.test:443 HTTP/1.1\r\n\r\n", "403", []string{"mixed.allowed.test resolves to a refused address"}},
		{"unresolvable", "CONNECT nx.allowed.test:443 HTTP/1.1\r\n\r\n", "502", []string{"could not resolve nx.allowed.test"}},
		{"pipelined after connect", "CONNECT allowed.test:" + tp + " HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n", "400", []string{"bytes sent after CONNECT"}},
		{"connect with body", "CONNECT allowed.test:" + tp + " HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc", "400", []string{"may not have a body"}},
		{"origin form without gateway", "GET /anthropic/v1/messages HTTP/1.1\r\nHost: x\r\n\r\n", "400", []string{"no gateway is configured"}},
		{"garbage", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", "400", []string{"malformed"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := rawExchange(t, px.addr, tc.raw)
			if !strings.HasPrefix(got, "HTTP/1.1 "+tc.status+" ") {
				t.Fatalf("status line %q, want %s", got, tc.status)
			}
			line := px.waitAudit(t, append([]string{`"allowed":false`, `"status":` + tc.status}, tc.audit...)...)
			if strings.Contains(line, "\x00") {
				t.Fatalf("raw NUL in audit line %q", line)
			}
		})
	}
	f, err := os.Open(px.auditPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := audit.Verify(f, ""); err != nil {
		t.Fatalf("audit chain: %v", err)
	}
}

func TestPerClientConnectionLimit(t *testing.T) {
	_, _, hp, tp := upstreams(t)
	px := startProxy(t, hp, tp, func(o *Options) { o.MaxConnsPerClient = 2 })
	var held []net.Conn
	for i := 0; i < 2; i++ {
		c, err := net.Dial("tcp", px.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	px.waitClientConns(t, 2)
	got := rawExchange(t, px.addr, "")
	if !strings.HasPrefix(got, "HTTP/1.1 429 ") {
		t.Fatalf("third connection got %q, want 429", got)
	}
	px.waitAudit(t, `"kind":"accept"`, "more than 2 concurrent connections")
	held[0].Close()
	px.waitClientConns(t, 1)
	got = rawExchange(t, px.addr, "GET http://allowed.test:"+hp+"/ HTTP/1.1\r\nHost: allowed.test:"+hp+"\r\n\r\n")
	if !strings.HasPrefix(got, "HTTP/1.1 200 ") {
		t.Fatalf("after release got %q, want 200", got)
	}
}

func TestIdleTunnelIsClosed(t *testing.T) {
	_, _, hp, tp := upstreams(t)
	px := startProxy(t, hp, tp, func(o *Options) { o.IdleTimeout = 200 * time.Millisecond })
	c, err := net.Dial("tcp", px.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, "CONNECT allowed.test:"+tp+" HTTP/1.1\r\n\r\n")
	br := bufio.NewReader(c)
	line, _ := br.ReadString('\n')
	if !strings.HasPrefix(line, "HTTP/1.1 200") {
		t.Fatalf("CONNECT answered %q", line)
	}
	br.ReadString('\n')
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("idle tunnel: read returned %v, want EOF after the idle timeout", err)
	}
	px.waitAudit(t, `"kind":"connect"`, `"allowed":true`)
}

func TestExpectContinueAndHTTP10(t *testing.T) {
	_, _, hp, tp := upstreams(t)
	px := startProxy(t, hp, tp, nil)
	a := "allowed.test:" + hp
	tests := []struct {
		name, head, body, want string
	}{
		{"expect 100-continue", "POST http://" + a + "/e HTTP/1.1\r\nHost: " + a + "\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n", "data", "body=data"},
		{"http/1.0 without host", "GET http://" + a + "/old HTTP/1.0\r\n\r\n", "", "hello GET " + a + " /old"},
		{"http/1.0 chunked upstream is not chunked", "GET http://" + a + "/chunked HTTP/1.0\r\n\r\n", "", "part1-part2"},
		{"chunked request body", "POST http://" + a + "/c HTTP/1.1\r\nHost: " + a + "\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\nabcd\r\n2\r\nef\r\n0\r\nX-Trailer: 1\r\n\r\n", "", "body=abcdef"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", px.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			io.WriteString(c, tc.head)
			br := bufio.NewReader(c)
			if tc.body != "" {
				line, _ := br.ReadString('\n')
				br.ReadString('\n')
				if !strings.HasPrefix(line, "HTTP/1.1 100 ") {
					t.Fatalf("before the body: %q, want 100 Continue", line)
				}
				io.WriteString(c, tc.body)
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(b), tc.want) {
				t.Fatalf("status %d body %q, want %q", resp.StatusCode, b, tc.want)
			}
			if len(resp.TransferEncoding) > 0 {
				t.Fatalf("transfer encoding %v sent", resp.TransferEncoding)
			}
		})
	}
}

func TestAuditFailureFailsClosed(t *testing.T) {
	_, _, hp, tp := upstreams(t)
	px := startProxy(t, hp, tp, nil)
	px.log.Close() // the next write fails, as on a full disk
	px.log.Write(&audit.Entry{Time: time.Now()})
	got := rawExchange(t, px.addr, "GET http://allowed.test:"+hp+"/ HTTP/1.1\r\nHost: allowed.test:"+hp+"\r\n\r\n")
	if !strings.HasPrefix(got, "HTTP/1.1 503 ") {
		t.Fatalf("with a failing audit log: %q, want 503", got)
	}
}

// TestPooledConnectionClosedByUpstream: an upstream that drops a kept-alive connection
// without saying so must not fail the next request (it is retried on a new connection).
func TestPooledConnectionClosedByUpstream(t *testing.T) {
	closed := make(chan struct{}, 4)
	_, port := serveTCP(t, func(c net.Conn) { // closed after one response, silently
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		c.Close()
		closed <- struct{}{}
	})
	px := startProxy(t, port, "1", nil)
	c, err := net.Dial("tcp", px.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(c)
	for i := 0; i < 3; i++ {
		io.WriteString(c, "GET http://allowed.test:"+port+"/ HTTP/1.1\r\nHost: allowed.test:"+port+"\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != "ok" {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, b)
		}
		// The next request goes out only once the upstream has dropped the connection
		// the proxy keeps in its pool.
		select {
		case <-closed:
		case <-time.After(5 * time.Second):
			t.Fatalf("request %d: the upstream never closed its connection", i)
		}
	}
}

// TestWhatUpstreamReceives: what a real upstream reads of a forwarded request. A target
// with an empty path (with or without a query) goes upstream in origin form with its "/"
// ("GET http://a.test?x" as "GET /?x"), and the head limit is the documented one: 62
// header lines reach the upstream, 63 are refused before anything is dialled.
func TestWhatUpstreamReceives(t *testing.T) {
	lines := make(chan string, 16)
	_, port := serveTCP(t, func(c net.Conn) {
		first, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			return
		}
		first = strings.TrimSuffix(first, "\r\n")
		lines <- first
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(first), first)
	})
	px := startProxy(t, port, "1", nil)
	a := "allowed.test:" + port
	headers := func(n int) string { // n header lines, Host among them
		return "Host: " + a + "\r\n" + strings.Repeat("X-A: 1\r\n", n-1)
	}
	tests := []struct {
		name, raw string
		status    int
		upstream  string // the request line the upstream read; "" when it must read none
	}{
		{"query without a path", "GET http://" + a + "?x=1 HTTP/1.1\r\n" + headers(1) + "\r\n", 200, "GET /?x=1 HTTP/1.1"},
		{"bare query mark", "GET http://" + a + "? HTTP/1.1\r\n" + headers(1) + "\r\n", 200, "GET /? HTTP/1.1"},
		{"no path", "GET http://" + a + " HTTP/1.1\r\n" + headers(1) + "\r\n", 200, "GET / HTTP/1.1"},
		{"path and query", "GET http://" + a + "/p?x HTTP/1.1\r\n" + headers(1) + "\r\n", 200, "GET /p?x HTTP/1.1"},
		{"62 header lines", "GET http://" + a + "/62 HTTP/1.1\r\n" + headers(62) + "\r\n", 200, "GET /62 HTTP/1.1"},
		{"63 header lines", "GET http://" + a + "/63 HTTP/1.1\r\n" + headers(63) + "\r\n", 400, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", px.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			io.WriteString(c, tc.raw)
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, b, tc.status)
			}
			if tc.upstream == "" {
				if !strings.Contains(string(b), "more than 62 header lines") {
					t.Fatalf("refusal %q does not give the limit", b)
				}
				select {
				case got := <-lines:
					t.Fatalf("the upstream read %q", got)
				case <-time.After(50 * time.Millisecond):
				}
				return
			}
			if got := <-lines; got != tc.upstream || string(b) != tc.upstream {
				t.Fatalf("upstream read %q (answered %q), want %q", got, b, tc.upstream)
			}
		})
	}
}
