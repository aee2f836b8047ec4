package firewall

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"github.com/bumperdev/bumper/firewall/audit"
	"github.com/bumperdev/bumper/firewall/internal/http1"
	"github.com/bumperdev/bumper/firewall/policy"
	"github.com/bumperdev/bumper/internal/denied"
)

// forward serves one absolute-URI request and reports whether the client connection may
// carry another.
func (s *Server) forward(ctx context.Context, cc *clientConn, start time.Time) bool {
	h := &cc.h
	ft, ref := checkForward(h)
	if ref != nil {
		s.deny(ctx, cc, start, "http", ft.authority, ref)
		return false
	}
	authority := ft.authority
	if _, _, declared := s.opts.Credentials.Match(ft.host, "/"); declared {
		c, host, ref := checkCredentialRequest(s.opts.Credentials, h.Method(), ft)
		if ref != nil {
			s.deny(ctx, cc, start, credentialKind, authority, ref)
			return false
		}
		s.forwardCredential(ctx, cc, start, ft, c, host)
		return false
	}
	t, d := s.opts.Policy.CheckHost(ft.host, ft.port, policy.Plain)
	if !d.Allowed {
		s.deny(ctx, cc, start, "http", authority, policyRefusal(d, ft.port))
		return false
	}
	addrs, ref := s.resolve(ctx, t)
	if ref != nil {
		s.deny(ctx, cc, start, "http", authority, ref)
		return false
	}
	ex := exchange{cc: cc, path: ft.path, authority: authority, resp: &cc.resp}
	ap, ref := s.roundTrip(ctx, &ex, addrs)
	if ref != nil {
		if ex.wroteResponse {
			// The response had started: the client sees a cut connection, which is all
			// that can honestly be said now.
			s.record(ctx, &audit.Entry{Time: start, Client: cc.client, Kind: "http", Method: string(h.Method()), Target: authority,
				Addr: ap.String(), Allowed: true, Reason: d.Reason + "; " + ref.reason, Status: ex.status, BytesUp: ex.up, BytesDn: ex.down, Duration: time.Since(start)})
			return false
		}
		s.deny(ctx, cc, start, "http", authority, ref)
		return false
	}
	s.record(ctx, &audit.Entry{Time: start, Client: cc.client, Kind: "http", Method: string(h.Method()), Target: authority,
		Addr: ap.String(), Allowed: true, Reason: d.Reason, Status: ex.status, BytesUp: ex.up, BytesDn: ex.down, Duration: time.Since(start)})
	return !ex.closeClient
}

// exchange is the state of one forwarded request.
type exchange struct {
	cc            *clientConn
	path          []byte
	authority     string
	resp          *http1.Head // the connection's, reused across requests
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
	hasBody := ex.cc.h.HasBody()
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
		return addr, &refusal{status: http.StatusBadGateway, reason: "upstream failed: " + err.Error(), addr: addr.String(), kind: denied.Unreachable}
	}
}

// errUpstreamEarly marks an upstream that closed before sending any response byte.
var errUpstreamEarly = errors.New("upstream closed the connection before responding")

// exchangeOn writes the request to u and relays the response. It reports whether u may
// be reused.
func (s *Server) exchangeOn(ex *exchange, u *upConn) (bool, error) {
	cc, h := ex.cc, &ex.cc.h
	u.c.SetDeadline(minTime(time.Now().Add(s.opts.IdleTimeout), cc.deadline))
	n := http1.WriteRequestHead(u.bw, h, ex.path)
	ex.up = int64(n)
	if h.ExpectContinue && h.HasBody() && !ex.sentContinue {
		// The proxy answers the expectation itself (and does not forward it), so the
		// client sends its body without waiting for a 100 the upstream never sends.
		ex.sentContinue = true
		ex.down += int64(http1.WriteString(cc.bw, "HTTP/1.1 100 Continue\r\n\r\n"))
		if err := cc.bw.Flush(); err != nil {
			ex.closeClient = true
			return false, fmt.Errorf("failed to answer 100-continue: %w", err)
		}
	}
	if h.Chunked {
		m, err := http1.CopyChunked(u.bw, cc.br)
		ex.up += m
		if err != nil {
			ex.closeClient = true
			return false, fmt.Errorf("failed to forward request body: %w", err)
		}
	} else if h.ContentLength > 0 {
		m, err := http1.CopyN(u.bw, cc.br, h.ContentLength, &cc.lr)
		ex.up += m
		if err != nil {
			ex.closeClient = true
			return false, fmt.Errorf("failed to forward request body: %w", err)
		}
	}
	if err := u.bw.Flush(); err != nil {
		return false, errUpstreamEarly
	}
	head := http1.EqFold(h.Method(), "head")
	for {
		if err := ex.resp.ReadResponse(u.br, s.opts.MaxHeaderBytes); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || isReset(err) {
				return false, errUpstreamEarly
			}
			return false, fmt.Errorf("failed to read response head: %w", err)
		}
		ex.status = ex.resp.StatusCode()
		if ex.status >= 100 && ex.status < 200 {
			if ex.status == http.StatusSwitchingProtocols {
				return false, errors.New("upstream switched protocols, which is refused")
			}
			ex.down += int64(http1.WriteResponseHead(cc.bw, ex.resp, false))
			ex.wroteResponse = true
			continue
		}
		break
	}
	resp := ex.resp
	noBody := head || ex.status == http.StatusNoContent || ex.status == http.StatusNotModified
	closeDelimited := !noBody && !resp.Chunked && resp.ContentLength < 0
	ex.closeClient = h.Close || closeDelimited
	reuse := !resp.Close && !closeDelimited
	ex.down += int64(http1.WriteResponseHead(cc.bw, resp, ex.closeClient))
	ex.wroteResponse = true
	cc.c.SetWriteDeadline(cc.deadline)
	u.c.SetReadDeadline(cc.deadline)
	var m int64
	var err error
	switch {
	case noBody:
	case resp.Chunked:
		m, err = http1.CopyChunked(cc.bw, u.br)
	case resp.ContentLength >= 0:
		m, err = http1.CopyN(cc.bw, u.br, resp.ContentLength, &cc.lr)
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

// isReset reports an upstream that reset the connection (or whose end was closed while
// the proxy wrote to it).
func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
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
