package firewall

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bumperdev/bumper/firewall/audit"
	"github.com/bumperdev/bumper/firewall/policy"
)

// spliceChunk is how much one ReadFrom may move before the idle deadline is renewed. It
// is large so the kernel splices in big steps; idle detection only needs coarse steps.
const spliceChunk = 8 << 20

const connectEstablished = "HTTP/1.1 200 Connection established\r\n\r\n"

// connect serves a CONNECT request: check, resolve, filter, dial, then splice bytes both
// ways until either side closes or a time limit passes.
func (s *Server) connect(ctx context.Context, cc *clientConn, start time.Time) {
	ct, ref := checkConnect(&cc.h)
	target := ct.target
	if ref != nil {
		s.deny(ctx, cc, start, "connect", target, ref)
		return
	}
	t, d := s.opts.Policy.CheckHost(ct.host, ct.port, policy.Connect)
	if !d.Allowed {
		s.deny(ctx, cc, start, "connect", target, policyRefusal(d, ct.port))
		return
	}
	if ref := checkTunnelStart(cc.br.Buffered()); ref != nil {
		s.deny(ctx, cc, start, "connect", target, ref)
		return
	}
	addrs, ref := s.resolve(ctx, t)
	if ref != nil {
		s.deny(ctx, cc, start, "connect", target, ref)
		return
	}
	up, ap, ref := s.dial(ctx, addrs)
	if ref != nil {
		s.deny(ctx, cc, start, "connect", target, ref)
		return
	}
	defer up.Close()
	cc.c.SetWriteDeadline(time.Now().Add(s.opts.IdleTimeout))
	if _, err := io.WriteString(cc.c, connectEstablished); err != nil {
		return
	}
	cc.c.SetWriteDeadline(time.Time{})
	upBytes, downBytes := s.splice(cc.c, up, cc.deadline)
	s.record(ctx, &audit.Entry{Time: start, Client: cc.client, Kind: "connect", Method: "CONNECT", Target: target,
		Addr: ap.String(), Allowed: true, Reason: d.Reason, Status: http.StatusOK,
		BytesUp: upBytes + int64(len(cc.h.Raw)), BytesDn: downBytes + int64(len(connectEstablished)),
		Duration: time.Since(start)})
}

// splice copies both directions with the kernel's splice (TCPConn.ReadFrom of a
// LimitedReader over a TCPConn) and returns the bytes moved each way.
func (s *Server) splice(client net.Conn, up *net.TCPConn, hardDeadline time.Time) (upBytes, downBytes int64) {
	var lastUp, lastDown atomic.Int64
	var aborted atomic.Bool
	now := time.Now().UnixNano()
	lastUp.Store(now)
	lastDown.Store(now)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		downBytes = s.pipe(client, up, &lastDown, &lastUp, &aborted, hardDeadline)
	}()
	upBytes = s.pipe(up, client, &lastUp, &lastDown, &aborted, hardDeadline)
	wg.Wait()
	return upBytes, downBytes
}

type closeWriter interface{ CloseWrite() error }

// warmBytes is how much a tunnel direction copies through a buffer before switching to
// splice. Short exchanges (a TLS handshake, an API call) cost fewer system calls that
// way than through splice's per-direction pipe; bulk transfers then get splice.
const warmBytes = 64 << 10

// pipe moves src to dst until EOF, an error, the hard deadline, or both directions idle
// for the idle timeout. A direction that is quiet while the other is busy stays open.
func (s *Server) pipe(dst, src net.Conn, mine, other *atomic.Int64, aborted *atomic.Bool, hard time.Time) int64 {
	t := &tunnelDir{s: s, dst: dst, src: src, mine: mine, other: other, aborted: aborted, hard: hard}
	if t.warm() {
		t.bulk()
	}
	if cw, ok := dst.(closeWriter); ok {
		cw.CloseWrite()
	} else {
		dst.Close()
	}
	return t.total
}

// tunnelDir is one direction of a tunnel.
type tunnelDir struct {
	s           *Server
	dst, src    net.Conn
	mine, other *atomic.Int64
	aborted     *atomic.Bool
	hard        time.Time
	total       int64
}

// warm copies the first warmBytes through a pooled buffer. It reports whether the
// direction is still open.
func (t *tunnelDir) warm() bool {
	bp := t.s.bufPool.Get().(*[]byte)
	defer t.s.bufPool.Put(bp)
	buf := *bp
	for t.total < warmBytes {
		t.src.SetReadDeadline(minTime(time.Now().Add(t.s.opts.IdleTimeout), t.hard))
		nr, err := t.src.Read(buf)
		if nr > 0 {
			nw, werr := t.dst.Write(buf[:nr])
			t.total += int64(nw)
			t.mine.Store(time.Now().UnixNano())
			if werr != nil {
				t.abort()
				return false
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return false
			}
			if !t.keepGoing(err) {
				return false
			}
		}
	}
	return true
}

// bulk moves the rest with the kernel's splice (TCPConn.ReadFrom of a LimitedReader
// over a TCPConn), renewing the idle deadline every spliceChunk bytes.
func (t *tunnelDir) bulk() {
	rf, _ := t.dst.(io.ReaderFrom)
	lr := &io.LimitedReader{R: t.src}
	for {
		t.src.SetReadDeadline(minTime(time.Now().Add(t.s.opts.IdleTimeout), t.hard))
		lr.N = spliceChunk
		var n int64
		var err error
		if rf != nil {
			n, err = rf.ReadFrom(lr)
		} else {
			n, err = io.Copy(t.dst, lr)
		}
		t.total += n
		if n > 0 {
			t.mine.Store(time.Now().UnixNano())
		}
		if err != nil {
			if !t.keepGoing(err) {
				return
			}
			continue
		}
		if lr.N > 0 { // less than a chunk without error: src reached EOF
			return
		}
	}
}

// keepGoing decides after a read error: a deadline while the other direction is still
// active (and the hard deadline not reached) continues; anything else ends the tunnel.
func (t *tunnelDir) keepGoing(err error) bool {
	now := time.Now()
	if errors.Is(err, os.ErrDeadlineExceeded) && !t.aborted.Load() && now.Before(t.hard) &&
		now.Sub(time.Unix(0, t.other.Load())) < t.s.opts.IdleTimeout {
		return true
	}
	t.abort()
	return false
}

// abort stops the other direction too: failure, idle or over time.
func (t *tunnelDir) abort() {
	t.aborted.Store(true)
	t.dst.SetReadDeadline(time.Now())
}
