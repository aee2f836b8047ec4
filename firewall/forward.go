package firewall

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/bumperdev/bumper/firewall/audit"
	"github.com/bumperdev/bumper/firewall/policy"
)

// forward serves one absolute-URI request and reports whether the client connection may
// carry another.
func (s *Server) forward(ctx context.Context, cc *clientConn, start time.Time) bool {
	h := &cc.h
	target := h.first[1]
	const scheme = "http://"
	if len(target) < len(scheme) || !eqFold(target[:len(scheme)], scheme) {
		reason := "request target must be an absolute http:// URI, a gateway path, or a CONNECT authority"
		if len(target) > 8 && eqFold(target[:8], "https://") {
			reason = "https:// request targets are refused: use CONNECT for TLS"
		}
		s.deny(ctx, cc, start, "http", clipBytes(target), "", http.StatusBadRequest, reason)
		return false
	}
	rest := target[len(scheme):]
	authEnd := bytes.IndexAny(rest, "/?#")
	if authEnd < 0 {
		authEnd = len(rest)
	}
	authority, path := string(rest[:authEnd]), rest[authEnd:]
	if bytes.IndexByte(path, '#') >= 0 {
		s.deny(ctx, cc, start, "http", authority, "", http.StatusBadRequest, "a fragment in the request target is refused")
		return false
	}
	if bytes.IndexByte([]byte(authority), '@') >= 0 {
		s.deny(ctx, cc, start, "http", authority, "", http.StatusForbidden, "userinfo (user@host) in the request target is refused")
		return false
	}
	host, port, err := splitHostPort(authority, policy.DefaultPlainPort)
	if err != nil {
		s.deny(ctx, cc, start, "http", authority, "", http.StatusBadRequest, "bad request target: "+err.Error())
		return false
	}
	switch {
	case h.hostCount > 1:
		s.deny(ctx, cc, start, "http", authority, "", http.StatusBadRequest, "more than one Host header")
		return false
	case h.hostCount == 0 && !h.http10:
		s.deny(ctx, cc, start, "http", authority, "", http.StatusBadRequest, "HTTP/1.1 request without a Host header")
		return false
	case h.hostCount == 1 && !sameAuthority(string(h.host), host, port, policy.DefaultPlainPort):
		s.deny(ctx, cc, start, "http", authority, "", http.StatusBadRequest, "Host header disagrees with the request target")
		return false
	case h.upgrade:
		s.deny(ctx, cc, start, "http", authority, "", http.StatusBadRequest, "protocol upgrades through plain HTTP are refused")
		return false
	}
	t, d := s.opts.Policy.CheckHost(host, port, policy.Plain)
	if !d.Allowed {
		s.deny(ctx, cc, start, "http", authority, "", http.StatusForbidden, d.Reason)
		return false
	}
	addrs, ref := s.resolve(ctx, t)
	if ref != nil {
		s.deny(ctx, cc, start, "http", authority, ref.addr, ref.status, ref.reason)
		return false
	}
	if len(path) == 0 {
		path = []byte("/")
	}
	ex := exchange{cc: cc, path: path, authority: authority, resp: &cc.resp}
	ap, ref := s.roundTrip(ctx, &ex, addrs)
	if ref != nil {
		if ex.wroteResponse {
			// The response had started: the client sees a cut connection, which is all
			// that can honestly be said now.
			s.record(ctx, &audit.Entry{Time: start, Client: cc.client, Kind: "http", Method: string(h.first[0]), Target: authority,
				Addr: ap.String(), Allowed: true, Reason: d.Reason + "; " + ref.reason, Status: ex.status, BytesUp: ex.up, BytesDn: ex.down, Duration: time.Since(start)})
			return false
		}
		s.deny(ctx, cc, start, "http", authority, ref.addr, ref.status, ref.reason)
		return false
	}
	s.record(ctx, &audit.Entry{Time: start, Client: cc.client, Kind: "http", Method: string(h.first[0]), Target: authority,
		Addr: ap.String(), Allowed: true, Reason: d.Reason, Status: ex.status, BytesUp: ex.up, BytesDn: ex.down, Duration: time.Since(start)})
	return !ex.closeClient
}

// exchange is the state of one forwarded request.
type exchange struct {
	cc            *clientConn
	path          []byte
	authority     string
	resp          *head // the connection's, reused across requests
	status        int
	up, down      int64
	wroteResponse bool
	closeClient   bool
	sentContinue  bool
}

// roundTrip sends the request upstream on a pooled or new connection and relays the
// response. A pooled connection that turns out dead before any response byte is retried
// once on a new one when the request had no body.
func (s *Server) roundTrip(ctx context.Context, ex *exchange, addrs []netip.AddrPort) (netip.AddrPort, *refusal) {
	h := &ex.cc.h
	hasBody := h.chunked || h.contentLength > 0
	for attempt := 0; ; attempt++ {
		u := s.pool.get(addrs)
		pooled := u != nil
		if !pooled {
			c, ap, ref := s.dial(ctx, addrs)
			if ref != nil {
				return netip.AddrPort{}, ref
			}
			u = s.newUpConn(c, ap)
		}
		reuse, err := s.exchangeOn(ex, u)
		addr := u.addr
		if err == nil {
			if reuse {
				s.pool.put(u)
			} else {
				s.discardUpConn(u)
			}
			return addr, nil
		}
		s.discardUpConn(u)
		if pooled && !hasBody && !ex.wroteResponse && attempt == 0 && errors.Is(err, errUpstreamEarly) {
			ex.up = 0
			continue
		}
		return addr, &refusal{http.StatusBadGateway, "upstream failed: " + err.Error(), addr.String()}
	}
}

// errUpstreamEarly marks an upstream that closed before sending any response byte.
var errUpstreamEarly = errors.New("upstream closed the connection before responding")

// exchangeOn writes the request to u and relays the response. It reports whether u may
// be reused.
func (s *Server) exchangeOn(ex *exchange, u *upConn) (bool, error) {
	cc, h := ex.cc, &ex.cc.h
	u.c.SetDeadline(minTime(time.Now().Add(s.opts.IdleTimeout), cc.deadline))
	n := writeRequestHead(u.bw, h, ex.path)
	ex.up = int64(n)
	if h.expectContinue && (h.chunked || h.contentLength > 0) && !ex.sentContinue {
		// The proxy answers the expectation itself (and does not forward it), so the
		// client sends its body without waiting for a 100 the upstream never sends.
		ex.sentContinue = true
		ex.down += int64(mustWrite(cc.bw, "HTTP/1.1 100 Continue\r\n\r\n"))
		if err := cc.bw.Flush(); err != nil {
			ex.closeClient = true
			return false, fmt.Errorf("failed to answer 100-continue: %w", err)
		}
	}
	if h.chunked {
		m, err := copyChunked(u.bw, cc.br)
		ex.up += m
		if err != nil {
			ex.closeClient = true
			return false, fmt.Errorf("failed to forward request body: %w", err)
		}
	} else if h.contentLength > 0 {
		m, err := copyN(u.bw, cc.br, h.contentLength, &cc.lr)
		ex.up += m
		if err != nil {
			ex.closeClient = true
			return false, fmt.Errorf("failed to forward request body: %w", err)
		}
	}
	if err := u.bw.Flush(); err != nil {
		return false, errUpstreamEarly
	}
	head := eqFold(h.first[0], "head")
	for {
		if err := ex.resp.read(u.br, s.opts.MaxHeaderBytes, false); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || isReset(err) {
				return false, errUpstreamEarly
			}
			return false, fmt.Errorf("failed to read response head: %w", err)
		}
		ex.status = atoi3(ex.resp.first[1])
		if ex.status >= 100 && ex.status < 200 {
			if ex.status == http.StatusSwitchingProtocols {
				return false, errors.New("upstream switched protocols, which is refused")
			}
			ex.down += int64(writeResponseHead(cc.bw, ex.resp, false))
			ex.wroteResponse = true
			continue
		}
		break
	}
	resp := ex.resp
	noBody := head || ex.status == http.StatusNoContent || ex.status == http.StatusNotModified
	closeDelimited := !noBody && !resp.chunked && resp.contentLength < 0
	ex.closeClient = h.close || closeDelimited
	reuse := !resp.close && !closeDelimited
	ex.down += int64(writeResponseHead(cc.bw, resp, ex.closeClient))
	ex.wroteResponse = true
	cc.c.SetWriteDeadline(cc.deadline)
	u.c.SetReadDeadline(cc.deadline)
	var m int64
	var err error
	switch {
	case noBody:
	case resp.chunked:
		m, err = copyChunked(cc.bw, u.br)
	case resp.contentLength >= 0:
		m, err = copyN(cc.bw, u.br, resp.contentLength, &cc.lr)
	default:
		m, err = io.Copy(cc.bw, u.br)
	}
	ex.down += m
	if err != nil {
		ex.closeClient = true
		return false, fmt.Errorf("failed to relay response body: %w", err)
	}
	if cc.bw.Flush() != nil {
		// The upstream exchange completed, so its connection may still be reused.
		ex.closeClient = true
	}
	return reuse, nil
}

func atoi3(b []byte) int {
	if len(b) != 3 {
		return 0
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// writeRequestHead writes the origin-form request line and the end-to-end headers.
func writeRequestHead(w *bufio.Writer, h *head, path []byte) int {
	n, _ := w.Write(h.first[0])
	n += mustWrite(w, " ")
	m, _ := w.Write(path)
	// An HTTP/1.0 client is forwarded as HTTP/1.0 so the upstream does not answer with
	// chunked encoding the client cannot read.
	if h.http10 {
		n += m + mustWrite(w, " HTTP/1.0\r\n")
	} else {
		n += m + mustWrite(w, " HTTP/1.1\r\n")
	}
	conn, _ := h.get("connection")
	for _, hd := range h.headers {
		if isHopByHop(hd.name) || listedIn(conn, hd.name) || eqFold(hd.name, "expect") {
			continue
		}
		n += writeHeader(w, hd)
	}
	if h.hostCount == 0 {
		// HTTP/1.0 without Host: name the origin, which the policy already checked.
		host := h.first[1][len("http://"):]
		if i := bytes.IndexAny(host, "/?"); i >= 0 {
			host = host[:i]
		}
		n += writeHeader(w, header{[]byte("Host"), host})
	}
	return n + mustWrite(w, "\r\n")
}

// writeResponseHead relays a response head without hop-by-hop headers.
func writeResponseHead(w *bufio.Writer, r *head, closeConn bool) int {
	n, _ := w.WriteString("HTTP/1.1 ")
	m, _ := w.Write(r.first[1])
	n += m + mustWrite(w, " ")
	m, _ = w.Write(r.first[2])
	n += m + mustWrite(w, "\r\n")
	conn, _ := r.get("connection")
	for _, hd := range r.headers {
		if isHopByHop(hd.name) || listedIn(conn, hd.name) {
			continue
		}
		n += writeHeader(w, hd)
	}
	if closeConn {
		n += mustWrite(w, "Connection: close\r\n")
	}
	return n + mustWrite(w, "\r\n")
}

func writeHeader(w *bufio.Writer, hd header) int {
	n, _ := w.Write(hd.name)
	n += mustWrite(w, ": ")
	m, _ := w.Write(hd.value)
	return n + m + mustWrite(w, "\r\n")
}

// mustWrite writes to a bufio.Writer, whose error is sticky and surfaces at Flush.
func mustWrite(w *bufio.Writer, s string) int {
	n, _ := w.WriteString(s)
	return n
}

// listedIn reports whether a Connection header value names header name (those are
// hop-by-hop too, RFC 9110 7.6.1).
func listedIn(conn, name []byte) bool {
	for len(conn) > 0 {
		var part []byte
		if i := bytes.IndexByte(conn, ','); i >= 0 {
			part, conn = conn[:i], conn[i+1:]
		} else {
			part, conn = conn, nil
		}
		if bytes.EqualFold(bytes.Trim(part, " \t"), name) {
			return true
		}
	}
	return false
}

// copyN is io.CopyN with a caller-owned LimitedReader, to spare an allocation per body.
func copyN(dst io.Writer, src io.Reader, n int64, lr *io.LimitedReader) (int64, error) {
	lr.R, lr.N = src, n
	written, err := io.Copy(dst, lr)
	lr.R = nil
	if written == n {
		return n, nil
	}
	if err == nil {
		err = io.EOF
	}
	return written, err
}

// newUpConn wraps a new upstream connection, reusing buffers of closed ones: upstreams
// that close after each response would otherwise cost 32 KiB of garbage per request.
func (s *Server) newUpConn(c *net.TCPConn, ap netip.AddrPort) *upConn {
	u, _ := s.upPool.Get().(*upConn)
	if u == nil {
		return &upConn{c: c, br: bufio.NewReaderSize(c, ioBufSize), bw: bufio.NewWriterSize(c, ioBufSize), addr: ap}
	}
	u.c, u.addr = c, ap
	u.br.Reset(c)
	u.bw.Reset(c)
	return u
}

// discardUpConn closes u and keeps its buffers for the next new connection.
func (s *Server) discardUpConn(u *upConn) {
	u.c.Close()
	u.c = nil
	u.br.Reset(nil)
	u.bw.Reset(nil)
	s.upPool.Put(u)
}
