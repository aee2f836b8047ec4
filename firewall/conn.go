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
	"strconv"
	"sync"
	"time"

	"github.com/bumperdev/bumper/firewall/audit"
	"github.com/bumperdev/bumper/firewall/internal/http1"
	"github.com/bumperdev/bumper/internal/denied"
)

// clientConn is the state of one client connection while the proxy owns it.
type clientConn struct {
	c        net.Conn
	br       *bufio.Reader
	bw       *bufio.Writer
	client   string
	deadline time.Time // end of the connection's allowed lifetime
	h        http1.Head
	resp     http1.Head       // upstream response head, reused
	lr       io.LimitedReader // body copies, reused
}

const ioBufSize = 16 << 10

// getClientConn takes connection state from the pool: new connections come at a high
// rate, and fresh 16 KiB buffers for each would be most of what a CONNECT allocates.
func (s *Server) getClientConn(c net.Conn) *clientConn {
	cc, _ := s.ccPool.Get().(*clientConn)
	if cc == nil {
		cc = &clientConn{br: bufio.NewReaderSize(c, ioBufSize), bw: bufio.NewWriterSize(c, ioBufSize)}
	} else {
		cc.br.Reset(c)
		cc.bw.Reset(c)
	}
	cc.c = c
	cc.client = c.RemoteAddr().String()
	cc.deadline = time.Now().Add(s.opts.MaxConnDuration)
	return cc
}

func (s *Server) putClientConn(cc *clientConn) {
	cc.br.Reset(nil)
	cc.bw.Reset(nil)
	cc.c = nil
	s.ccPool.Put(cc)
}

// serveConn runs requests on c until it closes. It reports whether c was handed to the
// gateway server, which then owns (and closes) it.
func (s *Server) serveConn(ctx context.Context, c net.Conn) (handedOff bool) {
	cc := s.getClientConn(c)
	defer s.putClientConn(cc)
	for {
		c.SetReadDeadline(minTime(time.Now().Add(s.opts.IdleTimeout), cc.deadline))
		err := cc.h.ReadRequest(cc.br, s.opts.MaxHeaderBytes)
		start := time.Now()
		if err != nil {
			var bad *http1.HeadError
			if errors.As(err, &bad) {
				s.deny(ctx, cc, start, "", "", badRequest(bad.Error()))
			}
			return false
		}
		if aerr := s.opts.Audit.Err(); aerr != nil {
			// Fail closed: a decision that cannot be recorded is not made.
			cc.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
			writeError(cc.bw, &refusal{status: http.StatusServiceUnavailable, reason: "the firewall's audit log is failing; nothing is forwarded", kind: denied.Unavailable})
			cc.bw.Flush()
			return false
		}
		method, target := cc.h.Method(), cc.h.Target()
		if name := s.carriesPlaceholder(cc); name != "" {
			s.deny(ctx, cc, start, credentialKind, http1.Clip(target), &refusal{status: http.StatusForbidden, kind: denied.Credential,
				reason: fmt.Sprintf("the request carries the placeholder of credential %s, which goes only to its own hosts as http://HOST/ through this firewall; point the tool at that URL instead", name)})
			return false
		}
		switch {
		case http1.EqFold(method, "connect"):
			s.connect(ctx, cc, start)
			return false
		case len(target) > 0 && target[0] == '/':
			return s.handOff(ctx, cc, start)
		default:
			if !s.forward(ctx, cc, start) {
				return false
			}
		}
	}
}

// deny answers with an error status, records the decision and leaves the connection to
// be closed: after a refusal nothing more on it is trusted.
func (s *Server) deny(ctx context.Context, cc *clientConn, start time.Time, kind, target string, ref *refusal) {
	cc.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	n := writeError(cc.bw, ref)
	cc.bw.Flush()
	method := ""
	if kind != "" {
		method = string(cc.h.Method())
	}
	s.record(ctx, &audit.Entry{Time: start, Client: cc.client, Kind: kindOr(kind, "request"), Method: method,
		Target: target, Addr: ref.addr, Reason: ref.reason, Status: ref.status, Denied: string(ref.kind), BytesUp: int64(len(cc.h.Raw)),
		BytesDn: int64(n), Duration: time.Since(start)})
}

func kindOr(k, def string) string {
	if k == "" {
		return def
	}
	return k
}

// writeError writes a complete error response whose body says what was refused, why,
// and what a person changes so it would pass. The kind is in X-Bumper-Denied and, with
// the host, in the reason phrase, since many clients print only the status line of a
// failed CONNECT.
func writeError(bw *bufio.Writer, ref *refusal) int {
	status := strconv.Itoa(ref.status)
	body := "bumper firewall: " + status + " " + string(ref.kind) + ": " + sanitizeLine(ref.reason)
	if hint := denied.Hint(ref.kind, ref.host, ref.port); hint != "" {
		body += "; " + hint
	}
	body += "\n"
	n, _ := bw.WriteString("HTTP/1.1 " + status + " " + denied.ReasonPhrase(ref.kind, ref.host) +
		"\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " + strconv.Itoa(len(body)) +
		"\r\nConnection: close\r\nX-Bumper-Firewall: refused\r\n" + denied.Header + ": " + string(ref.kind) + "\r\n\r\n" + body)
	return n
}

// sanitizeLine keeps a reason on one printable line, whatever the client put in it.
func sanitizeLine(s string) string {
	if !containsCtl(s) {
		return s
	}
	b := []byte(s)
	for i, c := range b {
		if c < ' ' || c == 0x7f {
			b[i] = '?'
		}
	}
	return string(b)
}

func containsCtl(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] == 0x7f {
			return true
		}
	}
	return false
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// handOff gives the connection, with the head already read replayed in front of it, to
// the gateway's HTTP server.
func (s *Server) handOff(ctx context.Context, cc *clientConn, start time.Time) bool {
	if s.gwLn == nil {
		s.deny(ctx, cc, start, "gateway", string(cc.h.Target()),
			badRequest("origin-form request but no gateway is configured: use an absolute http:// URI or CONNECT"))
		return false
	}
	buffered, _ := cc.br.Peek(cc.br.Buffered())
	prefix := make([]byte, 0, len(cc.h.Raw)+len(buffered))
	prefix = append(append(prefix, cc.h.Raw...), buffered...)
	cc.c.SetReadDeadline(time.Time{})
	c := cc.c // cc goes back to the pool when this returns; the gateway keeps only c
	ip := clientAddr(c)
	pc := &prefixConn{Conn: c, prefix: bytes.NewReader(prefix), onClose: func() { s.release(c, ip) }}
	// The gateway's HTTP server manages read deadlines itself, so the connection's total
	// lifetime is enforced by closing the socket (the server then closes pc).
	pc.timer = time.AfterFunc(time.Until(cc.deadline), func() { c.Close() })
	if !s.gwLn.deliver(pc) {
		pc.timer.Stop()
		return false
	}
	return true
}

// prefixConn replays bytes already read before reading from the connection.
type prefixConn struct {
	net.Conn
	prefix  *bytes.Reader
	once    sync.Once
	onClose func()
	timer   *time.Timer
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if p.prefix.Len() > 0 {
		return p.prefix.Read(b)
	}
	return p.Conn.Read(b)
}

func (p *prefixConn) Close() error {
	err := p.Conn.Close()
	p.once.Do(func() {
		p.timer.Stop()
		p.onClose()
	})
	return err
}

// chanListener is a net.Listener fed by the proxy with connections for the gateways.
type chanListener struct {
	ch   chan net.Conn
	done chan struct{}
}

func newChanListener() *chanListener {
	return &chanListener{ch: make(chan net.Conn), done: make(chan struct{})}
}

func (l *chanListener) deliver(c net.Conn) bool {
	select {
	case l.ch <- c:
		return true
	case <-l.done:
		return false
	}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	select {
	case <-l.done:
	default:
		close(l.done)
	}
	return nil
}

func (l *chanListener) Addr() net.Addr { return &net.TCPAddr{} }

// originFormOnly refuses proxy-style requests that arrive on a connection already handed
// to the gateways: those must come on a fresh connection, where the policy sees them.
func originFormOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Host != "" || r.Method == http.MethodConnect {
			w.Header().Set("Connection", "close")
			w.Header().Set("X-Bumper-Firewall", "refused")
			w.Header().Set(denied.Header, string(denied.Malformed))
			http.Error(w, "bumper firewall: 400 malformed: a proxy request on a gateway connection is refused; open a new connection", http.StatusBadRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}
