package firewall

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bumperdev/bumper/firewall/audit"
	"github.com/bumperdev/bumper/firewall/credential"
	"github.com/bumperdev/bumper/firewall/policy"
	"github.com/bumperdev/bumper/internal/denied"
)

// credentialKind names credential requests in the audit log.
const credentialKind = "credential"

// credResponseHeaderTimeout bounds the wait for a credential host's response head; the
// body streams under the connection's own limits.
const credResponseHeaderTimeout = 2 * time.Minute

// hopByHop are the headers one connection's worth of HTTP owns; they never cross.
var hopByHop = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// credMethods are the methods a credential request may use. Anything else is refused:
// TRACE and TRACK make many servers (Apache by default) echo the request, the added
// Authorization included, back to the client; an unknown method is a guess at what the
// host does with it.
var credMethods = map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true, "OPTIONS": true}

// overrideHeaders name, on some servers (IIS URL Rewrite, Symfony, method-override
// middleware), another path or method than the request line's: the firewall checked the
// request line, so they never go to a credential host.
var overrideHeaders = []string{"X-Original-Url", "X-Original-Uri", "X-Rewrite-Url", "X-Override-Url", "X-Http-Method-Override", "X-Http-Method", "X-Method-Override"}

// carriesPlaceholder names the credential whose placeholder the request's head holds,
// unless the request goes to that credential's own host (where the placeholder is
// replaced): a CONNECT, a gateway request, a plain request anywhere else. Inside a TLS
// tunnel the firewall sees nothing; there the placeholder is worth nothing either.
func (s *Server) carriesPlaceholder(cc *clientConn) string {
	if s.opts.Credentials.Len() == 0 {
		return ""
	}
	name := s.opts.Credentials.Carries(cc.h.Raw)
	if name == "" {
		return ""
	}
	if ft, ref := checkForward(&cc.h); ref == nil {
		if c, _, _ := s.opts.Credentials.Match(ft.host, string(ft.path)); c != nil && c.Name == name {
			return ""
		}
	}
	return name
}

// checkCredentialRequest decides what a plain-HTTP request to a host some credential is
// declared for may do. The VM reaches such a host as http://name/ (port 80); the
// firewall speaks TLS to the declared port. A path outside every declared prefix, a
// path that could climb out of one once the host normalises it, or another port is
// refused: the credential would be sent where nobody declared it.
func checkCredentialRequest(creds *credential.Set, method []byte, ft forwardTarget) (*credential.Credential, credential.Host, *refusal) {
	path := string(ft.path)
	c, h, _ := creds.Match(ft.host, path)
	if m := string(method); !credMethods[m] {
		return nil, h, &refusal{status: http.StatusForbidden, kind: denied.Credential, reason: fmt.Sprintf("method %s is refused toward %s, which has a credential (GET, HEAD, POST, PUT, PATCH, DELETE and OPTIONS only)", clip(sanitizeLine(m), 40), ft.host)}
	}
	if ft.port != policy.DefaultPlainPort {
		return nil, h, &refusal{status: http.StatusForbidden, kind: denied.Credential, reason: fmt.Sprintf("%s has a credential: reach it as http://%s/ (port 80) and the firewall speaks TLS upstream; port %d is refused", ft.host, ft.host, ft.port)}
	}
	if escapesPrefix(path) {
		return nil, h, &refusal{status: http.StatusForbidden, kind: denied.Credential, reason: fmt.Sprintf("a path with dot segments, encoded dots or slashes, or backslashes is refused toward %s, which has a credential", ft.host)}
	}
	if c == nil {
		return nil, h, &refusal{status: http.StatusForbidden, kind: denied.Credential, reason: fmt.Sprintf("%s is outside the paths this run's credentials go to (%s)", clip(path, 200), strings.Join(creds.Declared(ft.host), ", "))}
	}
	return c, h, nil
}

// escapesPrefix reports a path (query excluded) that a host might normalise out from
// under a declared prefix once it decodes it: "." or ".." segments, plain or encoded
// (%2e, %2f), also with path parameters ("..;x", which Tomcat reads as "..") or dots
// and spaces only ("...", ".. ", which Windows servers trim to ".."), backslashes, and
// control characters. An encoded slash alone passes: npm asks for /@scope%2fname.
func escapesPrefix(path string) bool {
	p, _, _ := strings.Cut(path, "?")
	if dec, err := url.PathUnescape(p); err == nil {
		p = dec
	} else {
		return true
	}
	if strings.Contains(p, "\\") || containsCtl(p) {
		return true
	}
	for _, seg := range strings.Split(p, "/") {
		seg, _, _ = strings.Cut(seg, ";")
		if strings.Contains(seg, ".") && strings.Trim(seg, ". ") == "" {
			return true
		}
	}
	return false
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// forwardCredential sends one plain-HTTP request to a credential's host over verified
// TLS with the credential in place of whatever the client sent, and relays the
// response. The client connection closes after it: the request was read through a
// reader of its own, which may hold bytes of a next one.
func (s *Server) forwardCredential(ctx context.Context, cc *clientConn, start time.Time, ft forwardTarget, c *credential.Credential, h credential.Host) {
	br := bufio.NewReader(io.MultiReader(bytes.NewReader(cc.h.Raw), cc.br))
	req, err := http.ReadRequest(br)
	if err != nil {
		s.deny(ctx, cc, start, credentialKind, ft.authority, badRequest("failed to read the request: "+err.Error()))
		return
	}
	upHost := h.Name
	if h.Port != credential.DefaultPort {
		upHost = net.JoinHostPort(h.Name, strconv.Itoa(int(h.Port)))
	}
	body := &clientBody{rc: req.Body}
	if req.Body != nil && req.Body != http.NoBody {
		// The transport may go on reading the body after RoundTrip returns (an upstream
		// that answers before reading it); cc's reader is reset and pooled once this
		// returns, so the body is cut off from it first.
		req.Body = body
		defer func() {
			cc.c.SetReadDeadline(time.Now())
			body.detach()
		}()
	}
	req.RequestURI = ""
	req.URL = &url.URL{Scheme: "https", Host: upHost, Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery}
	req.Host = upHost
	for _, k := range hopByHop {
		req.Header.Del(k)
	}
	for _, k := range overrideHeaders {
		req.Header.Del(k)
	}
	c.Apply(req.Header)
	var dialled string
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { dialled = i.Conn.RemoteAddr().String() }}
	req = req.WithContext(httptrace.WithClientTrace(ctx, trace))
	resp, err := s.credTransport.RoundTrip(req)
	if err != nil {
		reason := fmt.Sprintf("could not reach %s over TLS: %v", upHost, err)
		ref := &refusal{status: http.StatusBadGateway, reason: reason, kind: denied.Unreachable, addr: dialled}
		var dialRef *refusal
		if errors.As(err, &dialRef) {
			ref = dialRef
		}
		s.deny(ctx, cc, start, credentialKind, ft.authority, ref)
		return
	}
	defer resp.Body.Close()
	for _, k := range hopByHop {
		resp.Header.Del(k)
	}
	rewriteLocation(resp.Header, h, upHost)
	resp.Close = true
	resp.Header.Set("Connection", "close")
	cw := &countWriter{w: cc.bw}
	cc.c.SetWriteDeadline(cc.deadline)
	werr := resp.Write(cw)
	cc.bw.Flush()
	reason := fmt.Sprintf("credential %s (%s) added toward %s", c.Name, c.Auth, upHost)
	if werr != nil {
		reason += "; relaying the response failed: " + werr.Error()
	}
	s.record(ctx, &audit.Entry{Time: start, Client: cc.client, Kind: credentialKind, Method: req.Method, Target: h.Name + clip(req.URL.Path, 200),
		Addr: dialled, Allowed: true, Reason: reason, Status: resp.StatusCode, BytesUp: int64(len(cc.h.Raw)) + max(req.ContentLength, 0), BytesDn: cw.n,
		Duration: time.Since(start)})
}

// rewriteLocation points a redirect to the credential's own host and prefix back
// through the firewall (http://name/…), so the credential goes on the next request too;
// a redirect anywhere else is left as it is, and the client follows it without the
// credential (the firewall adds it toward declared hosts only).
func rewriteLocation(hdr http.Header, h credential.Host, upHost string) {
	loc := hdr.Get("Location")
	if loc == "" {
		return
	}
	u, err := url.Parse(loc)
	if err != nil || u.Scheme != "https" || !strings.EqualFold(u.Host, upHost) || !strings.HasPrefix(u.Path, h.Prefix) || u.User != nil {
		return
	}
	u.Scheme, u.Host = "http", h.Name
	hdr.Set("Location", u.String())
}

// clientBody is a credential request's body, read from the client connection until it
// is detached; after that (and after the transport closes it) it reads nothing more.
// Close does not drain: the client connection is closed after the request anyway.
type clientBody struct {
	mu   sync.Mutex
	rc   io.ReadCloser
	done bool
}

var errBodyDetached = errors.New("the client's request is over")

func (b *clientBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return 0, errBodyDetached
	}
	return b.rc.Read(p)
}

func (b *clientBody) Close() error {
	b.detach()
	return nil
}

// detach waits for a read in progress (unblock it first with a read deadline) and makes
// every later read fail.
func (b *clientBody) detach() {
	b.mu.Lock()
	b.done = true
	b.mu.Unlock()
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// newCredTransport is the transport of credential requests: TLS verified against tls's
// roots, dialled only to declared hosts, at addresses the filter passes (or the pins),
// never through another proxy, bodies passed through as they are.
func (s *Server) newCredTransport(tlsConf *tls.Config) *http.Transport {
	return &http.Transport{
		Proxy: nil,
		DialTLSContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return s.credDialTLS(ctx, network, addr, tlsConf)
		},
		ForceAttemptHTTP2:     false,
		DisableCompression:    true,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       s.opts.IdleTimeout,
		TLSHandshakeTimeout:   s.opts.DialTimeout,
		ResponseHeaderTimeout: credResponseHeaderTimeout,
	}
}

// credDialTLS dials a credential host and verifies it: against the credential's own
// roots when it has them, else tlsConf's.
func (s *Server) credDialTLS(ctx context.Context, network, addr string, tlsConf *tls.Config) (net.Conn, error) {
	raw, err := s.credDial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	host, _, _ := net.SplitHostPort(addr)
	conf := tlsConf.Clone()
	conf.ServerName = host
	if roots := s.opts.Credentials.RootCAs(host); roots != nil {
		conf.RootCAs = roots
	}
	tc := tls.Client(raw, conf)
	if err := tc.HandshakeContext(ctx); err != nil {
		raw.Close()
		return nil, err
	}
	return tc, nil
}

// credDial dials a credential host: only a declared one, at an address resolve lets
// through, exactly that address.
func (s *Server) credDial(ctx context.Context, _, addr string) (net.Conn, error) {
	host, portS, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if _, _, declared := s.opts.Credentials.Match(host, "/"); !declared {
		return nil, &refusal{status: http.StatusForbidden, kind: denied.Credential, reason: fmt.Sprintf("%s is not a credential host", host)}
	}
	port, err := strconv.ParseUint(portS, 10, 16)
	if err != nil {
		return nil, err
	}
	addrs, ref := s.resolve(ctx, policy.Target{Name: host, Port: uint16(port)})
	if ref != nil {
		return nil, ref
	}
	c, _, ref := s.dial(ctx, addrs)
	if ref != nil {
		return nil, ref
	}
	return c, nil
}
