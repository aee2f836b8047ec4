// Package firewall is Bumper's egress proxy: a default-deny forward proxy (CONNECT and
// absolute-URI HTTP) that resolves names itself, refuses private and host addresses,
// dials exactly the address that passed, and records every decision in a hash-chained
// audit log. Origin-form requests on the same listener go to the credential-injecting
// gateways (package gateway).
package firewall

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/firewall/audit"
	"github.com/bumperdev/bumper/firewall/credential"
	"github.com/bumperdev/bumper/firewall/policy"
	"github.com/bumperdev/bumper/internal/denied"
)

// Log keys.
const (
	logKeyListen   = "listen"
	logKeyResolve  = "resolve"
	logKeyAddr     = "addr"
	logKeyAudit    = "audit_head"
	logKeyAuditLen = "audit_lines"
)

// Defaults for Options fields left zero.
const (
	DefaultMaxHeaderBytes    = 32 << 10
	DefaultIdleTimeout       = 60 * time.Second
	DefaultMaxConnDuration   = time.Hour
	DefaultDialTimeout       = 10 * time.Second
	DefaultMaxConnsPerClient = 256
	DefaultDNSCacheTTL       = 30 * time.Second
	auditFlushInterval       = time.Second
)

// Options configure a Server. Policy, Filter and Audit are required.
type Options struct {
	Policy   *policy.Policy
	Filter   *policy.AddrFilter
	Resolver Resolver // default: NetResolver()
	// Overrides pin names to addresses (Config.Resolve). These addresses are trusted as
	// given: they skip the address filter, which is the point of naming them.
	Overrides map[string]netip.Addr
	Audit     *audit.Log
	// Gateway serves origin-form requests (`GET /anthropic/...`). Nil: they are refused.
	Gateway http.Handler
	// Credentials are the runner host's credentials this run was granted: a plain-HTTP
	// request to one of their hosts goes upstream over TLS with the credential added
	// (credforward.go), and any request carrying one of their placeholders elsewhere is
	// refused. Nil: none.
	Credentials *credential.Set
	// UpstreamTLS verifies credential hosts (its RootCAs; nil: the system's).
	UpstreamTLS *tls.Config

	MaxHeaderBytes    int
	IdleTimeout       time.Duration // between requests, and without traffic in a tunnel
	MaxConnDuration   time.Duration // total lifetime of one client connection
	DialTimeout       time.Duration
	MaxConnsPerClient int // concurrent connections from one client address
	DNSCacheTTL       time.Duration
}

// Server is the firewall proxy on a listener the caller provides, with an explicit
// policy, filter, resolver and gateway: create it with NewServer and run it with Serve.
// Firewall (New) builds one from a Config and runs it.
type Server struct {
	opts     Options
	resolver Resolver
	pool     *pool

	mu        sync.Mutex
	perClient map[netip.Addr]int
	conns     map[net.Conn]struct{}
	wg        sync.WaitGroup

	gwLn  *chanListener
	gwSrv *http.Server
	// credTransport carries credential requests (Options.Credentials).
	credTransport *http.Transport

	ccPool  sync.Pool // *clientConn
	bufPool sync.Pool // *[]byte, tunnel warm-up buffers
	upPool  sync.Pool // *upConn whose connection was closed, for their buffers
}

// NewServer checks opts and returns a server.
func NewServer(opts Options) (*Server, error) {
	if opts.Policy == nil || opts.Filter == nil || opts.Audit == nil {
		return nil, errors.New("failed to create firewall: Policy, Filter and Audit are required")
	}
	if opts.Resolver == nil {
		opts.Resolver = NetResolver()
	}
	setDefault(&opts.MaxHeaderBytes, DefaultMaxHeaderBytes)
	setDefault(&opts.IdleTimeout, DefaultIdleTimeout)
	setDefault(&opts.MaxConnDuration, DefaultMaxConnDuration)
	setDefault(&opts.DialTimeout, DefaultDialTimeout)
	setDefault(&opts.MaxConnsPerClient, DefaultMaxConnsPerClient)
	setDefault(&opts.DNSCacheTTL, DefaultDNSCacheTTL)
	s := &Server{
		opts:      opts,
		resolver:  newCachingResolver(opts.Resolver, opts.DNSCacheTTL),
		pool:      newPool(opts.IdleTimeout),
		perClient: map[netip.Addr]int{},
		conns:     map[net.Conn]struct{}{},
	}
	s.bufPool.New = func() any {
		b := make([]byte, 32<<10)
		return &b
	}
	if opts.Credentials.Len() > 0 {
		tlsConf := &tls.Config{MinVersion: tls.VersionTLS12}
		if opts.UpstreamTLS != nil {
			tlsConf = opts.UpstreamTLS.Clone()
		}
		s.credTransport = s.newCredTransport(tlsConf)
	}
	if opts.Gateway != nil {
		s.gwLn = newChanListener()
		s.gwSrv = &http.Server{
			Handler:           originFormOnly(opts.Gateway),
			ReadHeaderTimeout: opts.IdleTimeout,
			IdleTimeout:       opts.IdleTimeout,
			MaxHeaderBytes:    opts.MaxHeaderBytes,
		}
	}
	return s, nil
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// Serve accepts connections on ln until ctx is canceled, then closes every connection,
// waits for their handlers and flushes the audit log. It closes ln.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	log := zerolog.Ctx(ctx)
	for name, a := range s.opts.Overrides {
		log.Warn().Str(logKeyResolve, name).Str(logKeyAddr, a.String()).Msg("name pinned by a resolve entry; its address skips the address filter")
	}
	if s.gwSrv != nil {
		go s.gwSrv.Serve(s.gwLn) //nolint:errcheck // returns when gwLn closes
	}
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(auditFlushInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				ln.Close()
				return
			case <-stop:
				return
			case <-t.C:
				if err := s.opts.Audit.Flush(); err != nil {
					log.Error().Err(err).Msg("audit flush failed")
				}
			}
		}
	}()
	var err error
	for {
		c, aerr := ln.Accept()
		if aerr != nil {
			if ctx.Err() == nil {
				err = fmt.Errorf("failed to accept: %w", aerr)
			}
			break
		}
		s.accept(ctx, c)
	}
	close(stop)
	ln.Close()
	s.shutdown()
	if ferr := s.opts.Audit.Flush(); ferr != nil && err == nil {
		err = ferr
	}
	h := s.opts.Audit.Head()
	log.Info().Str(logKeyAudit, h.Hash).Uint64(logKeyAuditLen, h.Lines).Msg("firewall stopped")
	return err
}

func (s *Server) shutdown() {
	if s.gwSrv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s.gwSrv.Shutdown(ctx) //nolint:errcheck // connections are closed below regardless
		cancel()
		s.gwLn.Close()
	}
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	s.pool.closeAll()
}

func clientAddr(c net.Conn) netip.Addr {
	if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}

func (s *Server) accept(ctx context.Context, c net.Conn) {
	ip := clientAddr(c)
	s.mu.Lock()
	if s.perClient[ip] >= s.opts.MaxConnsPerClient {
		s.wg.Add(1)
		s.mu.Unlock()
		go func() { // a client that does not read must not stall the accept loop
			defer s.wg.Done()
			s.refuseBusy(ctx, c)
		}()
		return
	}
	s.perClient[ip]++
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		handedOff := s.serveConn(ctx, c)
		if !handedOff {
			c.Close()
			s.release(c, ip)
		}
		s.wg.Done()
	}()
}

func (s *Server) release(c net.Conn, ip netip.Addr) {
	s.mu.Lock()
	delete(s.conns, c)
	if s.perClient[ip]--; s.perClient[ip] <= 0 {
		delete(s.perClient, ip)
	}
	s.mu.Unlock()
}

func (s *Server) refuseBusy(ctx context.Context, c net.Conn) {
	reason := fmt.Sprintf("more than %d concurrent connections from this client", s.opts.MaxConnsPerClient)
	c.SetWriteDeadline(time.Now().Add(time.Second))
	bw := bufio.NewWriterSize(c, 512)
	writeError(bw, &refusal{status: http.StatusTooManyRequests, reason: reason, kind: denied.Busy})
	bw.Flush()
	c.Close()
	s.record(ctx, &audit.Entry{Time: time.Now(), Client: c.RemoteAddr().String(), Kind: "accept", Reason: reason,
		Status: http.StatusTooManyRequests, Denied: string(denied.Busy)})
}

// record writes an audit entry. A failing audit log cannot be reported to the client
// usefully, so it goes to the operator's log.
func (s *Server) record(ctx context.Context, e *audit.Entry) {
	if err := s.opts.Audit.Write(e); err != nil {
		zerolog.Ctx(ctx).Error().Err(err).Msg("audit write failed")
	}
}
