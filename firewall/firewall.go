package firewall

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/firewall/audit"
	"github.com/bumperdev/bumper/firewall/credential"
	"github.com/bumperdev/bumper/firewall/gateway"
	"github.com/bumperdev/bumper/firewall/meter"
	"github.com/bumperdev/bumper/firewall/policy"
	"github.com/bumperdev/bumper/internal/cleanup"
)

const (
	logKeyAllow   = "allow_entries"
	logKeyDeny    = "deny_entries"
	logKeySpent   = "model_spent_usd"
	logKeyCalls   = "model_calls"
	logKeyPrices  = "price_table"
	logKeyBudget  = "model_budget_usd"
	logKeyOwnAddr = "own_addresses"
)

// Errors of New for a config that lacks what every firewall needs.
var (
	ErrNoListen = errors.New("no listen address: set listen in the config")
	ErrNoAudit  = errors.New("no audit log: set audit in the config")
)

// ErrStarted is returned by a second Start, or a Start after Stop.
var ErrStarted = errors.New("firewall already started (or stopped); a Firewall starts once")

// Firewall is one firewall run from a Config. New checks the config; Start opens the
// audit log, builds the gateways, listens and serves in the background, and returns once
// it listens; Stop (or the end of Start's context) closes the listener and every
// connection, flushes the audit log and undoes what Start made, in reverse order; Wait
// returns when that is done.
type Firewall struct {
	cfg       Config
	policy    *policy.Policy
	overrides map[string]netip.Addr

	mu        sync.Mutex
	started   bool
	stopAsked bool
	addr      string
	audit     *audit.Log
	meter     *meter.Meter
	gateway   *gateway.Gateway
	cancel    context.CancelFunc
	cleanups  cleanup.Stack
	done      chan struct{} // closed when the firewall has stopped and cleaned up
	err       error
}

// New checks c (a listen address, an audit log, the allow and deny lists, the resolve
// pins) and returns a firewall that has not started. It keeps a copy of c.
func New(c *Config) (*Firewall, error) {
	if c.Listen == "" {
		return nil, ErrNoListen
	}
	if c.Audit == "" {
		return nil, ErrNoAudit
	}
	pol, err := policy.New(c.Allow, c.Deny)
	if err != nil {
		return nil, err
	}
	overrides := map[string]netip.Addr{}
	for host, ip := range c.Resolve {
		name, err := policy.NormalizeName(host)
		if err != nil {
			return nil, fmt.Errorf("failed to use resolve entry %q: %w", host, err)
		}
		a, err := netip.ParseAddr(ip)
		if err != nil {
			return nil, fmt.Errorf("failed to use resolve entry %q: %q is not an IP address", host, ip)
		}
		overrides[name] = a.Unmap()
	}
	return &Firewall{cfg: *c, policy: pol, overrides: overrides, done: make(chan struct{})}, nil
}

// Start opens the audit log, builds the gateways and listens, then serves in the
// background until Stop is called or ctx ends; it returns once the firewall listens
// (see Addr). It may be called once; on failure everything it made is already undone.
// The firewall logs to ctx's zerolog logger.
func (f *Firewall) Start(ctx context.Context) error {
	f.mu.Lock()
	if f.started {
		f.mu.Unlock()
		return ErrStarted
	}
	f.started = true
	f.mu.Unlock()
	if err := f.start(ctx); err != nil {
		f.cleanups.Run(zerolog.Ctx(ctx)) //nolint:errcheck // logged; the first failure is what the caller needs
		f.finish(err)
		return err
	}
	return nil
}

func (f *Firewall) start(ctx context.Context) error {
	log := zerolog.Ctx(ctx)
	own, err := ownAddresses()
	if err != nil {
		return err
	}
	al, err := audit.Open(f.cfg.Audit)
	if err != nil {
		return err
	}
	f.cleanups.Push("audit log", al.Close)
	gw, m, err := buildGateway(&f.cfg, al)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.audit, f.meter, f.gateway = al, m, gw
	f.mu.Unlock()
	l := f.cfg.Limits
	opts := Options{
		Policy: f.policy, Filter: policy.NewAddrFilter(own), Overrides: f.overrides, Audit: al,
		MaxHeaderBytes: l.MaxHeaderBytes, IdleTimeout: l.IdleTimeout, MaxConnDuration: l.MaxConnDuration,
		DialTimeout: l.DialTimeout, MaxConnsPerClient: l.MaxConnsPerClient, DNSCacheTTL: l.DNSCacheTTL,
	}
	if len(f.cfg.Credentials) > 0 {
		if opts.Credentials, err = credential.NewSet(f.cfg.Credentials); err != nil {
			return err
		}
		if opts.UpstreamTLS, err = upstreamTLS(f.cfg.Gateway.CAFile); err != nil {
			return err
		}
	}
	if gw != nil {
		opts.Gateway = gw
		f.cleanups.Push("gateways", func() error { gw.Close(); return nil })
	}
	srv, err := NewServer(opts)
	if err != nil {
		return err
	}
	ln, err := Listen(ctx, f.cfg.Listen)
	if err != nil {
		return fmt.Errorf("failed to listen on %s: %w", f.cfg.Listen, err)
	}
	log.Info().Str(logKeyListen, ln.Addr().String()).Int(logKeyAllow, len(f.cfg.Allow)).Int(logKeyDeny, len(f.cfg.Deny)).
		Int(logKeyOwnAddr, len(own)).Msg("firewall listening")
	sctx, cancel := context.WithCancel(ctx)
	f.mu.Lock()
	f.addr, f.cancel = ln.Addr().String(), cancel
	if f.stopAsked {
		cancel()
	}
	f.mu.Unlock()
	go func() {
		err := srv.Serve(sctx, ln) // closes ln, every connection, and flushes the audit log
		cancel()
		if m != nil {
			s := m.Summary()
			log.Info().Float64(logKeySpent, s.SpentUSD).Int(logKeyCalls, s.Calls).Float64(logKeyBudget, s.BudgetUSD).
				Str(logKeyPrices, s.PriceTable).Msg("model usage")
		}
		if cerr := f.cleanups.Run(zerolog.Ctx(ctx)); err == nil {
			err = cerr
		}
		f.finish(err)
	}()
	return nil
}

// Addr is the address the firewall listens on once Start has returned, else "".
func (f *Firewall) Addr() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.addr
}

// SetPushOpen opens or closes pushes through the git gateway (GatewayConfig.PushClosed);
// it reports false when no gateway runs.
func (f *Firewall) SetPushOpen(open bool) bool {
	f.mu.Lock()
	gw := f.gateway
	f.mu.Unlock()
	if gw == nil {
		return false
	}
	gw.SetPushOpen(open)
	return true
}

// Usage is the model spending metered so far; ok is false when no model gateway runs.
// It stays readable after Stop, for the run's evidence.
func (f *Firewall) Usage() (s meter.Summary, ok bool) {
	f.mu.Lock()
	m := f.meter
	f.mu.Unlock()
	if m == nil {
		return meter.Summary{}, false
	}
	return m.Summary(), true
}

// AuditHead is the head of the audit log: its line count and the hash of the last line.
// After Stop it is the final head, which the run's evidence names; ok is false before
// Start opened the log.
func (f *Firewall) AuditHead() (h audit.Head, ok bool) {
	f.mu.Lock()
	al := f.audit
	f.mu.Unlock()
	if al == nil {
		return audit.Head{}, false
	}
	return al.Head(), true
}

// Stop closes the listener and every connection, flushes and closes the audit log, and
// returns what Wait returns. It is idempotent and safe from many goroutines; when ctx
// ends before the firewall has stopped, it returns ctx.Err() and the stop goes on. A
// firewall stopped before Start never starts.
func (f *Firewall) Stop(ctx context.Context) error {
	f.mu.Lock()
	f.stopAsked = true
	if !f.started {
		f.started = true
		f.mu.Unlock()
		f.finish(nil)
		return nil
	}
	cancel := f.cancel
	f.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	return f.Wait(ctx)
}

// Wait blocks until the firewall has stopped (Stop, the end of Start's context, or a
// failure to serve) and cleaned up, and returns why it failed, if it did: the same error
// to every caller. When ctx ends first it returns ctx.Err().
func (f *Firewall) Wait(ctx context.Context) error {
	f.mu.Lock()
	started := f.started
	f.mu.Unlock()
	if !started {
		return errors.New("firewall not started")
	}
	select {
	case <-f.done:
	default:
		select {
		case <-f.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

func (f *Firewall) finish(err error) {
	f.mu.Lock()
	f.err = err
	f.mu.Unlock()
	close(f.done)
}

// buildGateway returns nil when no gateway is configured.
func buildGateway(c *Config, al *audit.Log) (*gateway.Gateway, *meter.Meter, error) {
	g := c.Gateway
	if g.GitBase == "" && g.GitHubAPIBase == "" && g.AnthropicBase == "" && g.OpenAIBase == "" {
		return nil, nil, nil
	}
	token, akey, okey, err := secrets(c)
	if err != nil {
		return nil, nil, err
	}
	depToken, err := dependencyToken(c)
	if err != nil {
		return nil, nil, err
	}
	var m *meter.Meter
	if g.AnthropicBase != "" || g.OpenAIBase != "" {
		prices, err := loadPrices(c.Budget.PricesFile)
		if err != nil {
			return nil, nil, err
		}
		if m, err = meter.New(prices, c.Budget.USD); err != nil {
			return nil, nil, err
		}
	}
	gw, err := gateway.New(gateway.Config{
		GitBase: g.GitBase, GitHubAPIBase: g.GitHubAPIBase, AnthropicBase: g.AnthropicBase, OpenAIBase: g.OpenAIBase,
		Token: token, AnthropicKey: akey, OpenAIKey: okey, Repository: g.Repository, RepositoryID: g.RepositoryID,
		APIAllow: g.APIAllow, PushRef: g.PushRef, PushFrom: g.PushFrom, PushClosed: g.PushClosed, CAFile: g.CAFile,
		Dependencies: g.Dependencies, DependencyToken: depToken, Meter: m, Audit: al,
	})
	if err != nil {
		return nil, nil, err
	}
	return gw, m, nil
}

// secrets are Config.Secrets when the caller gave them, else what the config's files or
// the environment hold.
func secrets(c *Config) (token, anthropic, openai string, err error) {
	if s := c.Secrets; s != nil {
		return s.GitHubToken, s.AnthropicKey, s.OpenAIKey, nil
	}
	g := c.Gateway
	if token, err = readSecret(g.TokenFile, EnvGitHubToken); err != nil {
		return "", "", "", err
	}
	if anthropic, err = readSecret(g.AnthropicKeyFile, EnvAnthropicKey); err != nil {
		return "", "", "", err
	}
	if openai, err = readSecret(g.OpenAIKeyFile, EnvOpenAIKey); err != nil {
		return "", "", "", err
	}
	return token, anthropic, openai, nil
}

// dependencyToken is the dependency token, from Config.Secrets or else the file or the
// environment; none is read when no dependency is configured.
func dependencyToken(c *Config) (string, error) {
	if len(c.Gateway.Dependencies) == 0 {
		return "", nil
	}
	if s := c.Secrets; s != nil {
		return s.DependencyToken, nil
	}
	return readSecret(c.Gateway.DependencyTokenFile, EnvDependencyToken)
}

func loadPrices(path string) (*meter.Prices, error) {
	if path == "" {
		return meter.DefaultPrices()
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("failed to read price table: %w", err)
	}
	return meter.ParsePrices(data)
}

// ownAddresses lists this host's interface addresses, which the firewall never dials.
func ownAddresses() ([]netip.Addr, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("failed to list this host's addresses: %w", err)
	}
	var out []netip.Addr
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, p.Addr())
		}
	}
	return out, nil
}

// Listen opens the proxy's listener without TCP keep-alive on accepted connections (the
// proxy bounds idle time itself), which saves system calls on every new connection.
func Listen(ctx context.Context, addr string) (net.Listener, error) {
	lc := net.ListenConfig{KeepAlive: -1}
	return lc.Listen(ctx, "tcp", addr)
}

// upstreamTLS verifies credential hosts against caFile's certificates, or the system's
// roots when it is empty.
func upstreamTLS(caFile string) (*tls.Config, error) {
	conf := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile == "" {
		return conf, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("failed to read CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("failed to read CA file %s: no PEM certificate in it", caFile)
	}
	conf.RootCAs = pool
	return conf, nil
}
