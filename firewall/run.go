package firewall

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/firewall/audit"
	"github.com/bumperdev/bumper/firewall/gateway"
	"github.com/bumperdev/bumper/firewall/meter"
	"github.com/bumperdev/bumper/firewall/policy"
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

// Flags are the command-line settings, layered over the config file.
type Flags struct {
	Listen  string
	Audit   string
	Allow   []string // added to the config's allowlist
	Resolve []string // HOST:IP, added to (and overriding) the config's resolve map
}

// Apply merges command-line flags into c.
func (c *Config) Apply(f Flags) error {
	if f.Listen != "" {
		c.Listen = f.Listen
	}
	if f.Audit != "" {
		c.Audit = f.Audit
	}
	c.Allow = append(c.Allow, f.Allow...)
	for _, r := range f.Resolve {
		host, a, err := ParseResolve(r)
		if err != nil {
			return err
		}
		if c.Resolve == nil {
			c.Resolve = map[string]string{}
		}
		c.Resolve[host] = a.String()
	}
	if c.Listen == "" {
		return errors.New("no listen address: pass --listen or set listen in the config")
	}
	if c.Audit == "" {
		return errors.New("no audit log: pass --audit FILE or set audit in the config")
	}
	return nil
}

// Run starts the firewall described by c, calls ready with the listening address, and
// serves until ctx is cancelled; then it closes every connection and flushes the audit
// log.
func Run(ctx context.Context, c *Config, ready func(addr string)) error {
	log := zerolog.Ctx(ctx)
	pol, err := policy.New(c.Allow, c.Deny)
	if err != nil {
		return err
	}
	own, err := ownAddresses()
	if err != nil {
		return err
	}
	overrides := map[string]netip.Addr{}
	for host, ip := range c.Resolve {
		name, err := policy.NormalizeName(host)
		if err != nil {
			return fmt.Errorf("failed to use resolve entry %q: %w", host, err)
		}
		a, err := netip.ParseAddr(ip)
		if err != nil {
			return fmt.Errorf("failed to use resolve entry %q: %q is not an IP address", host, ip)
		}
		overrides[name] = a.Unmap()
	}
	al, err := audit.Open(c.Audit)
	if err != nil {
		return err
	}
	defer al.Close()
	gw, m, err := buildGateway(c, al)
	if err != nil {
		return err
	}
	opts := Options{
		Policy: pol, Filter: policy.NewAddrFilter(own), Overrides: overrides, Audit: al,
		MaxHeaderBytes: c.Limits.MaxHeaderBytes, IdleTimeout: c.Limits.IdleTimeout, MaxConnDuration: c.Limits.MaxConnDuration,
		DialTimeout: c.Limits.DialTimeout, MaxConnsPerClient: c.Limits.MaxConnsPerClient, DNSCacheTTL: c.Limits.DNSCacheTTL,
	}
	if gw != nil {
		opts.Gateway = gw
		defer gw.Close()
	}
	srv, err := New(opts)
	if err != nil {
		return err
	}
	ln, err := Listen(ctx, c.Listen)
	if err != nil {
		return fmt.Errorf("failed to listen on %s: %w", c.Listen, err)
	}
	log.Info().Str(logKeyListen, ln.Addr().String()).Int(logKeyAllow, len(c.Allow)).Int(logKeyDeny, len(c.Deny)).
		Int(logKeyOwnAddr, len(own)).Msg("firewall listening")
	if ready != nil {
		ready(ln.Addr().String())
	}
	err = srv.Serve(ctx, ln)
	if m != nil {
		s := m.Summary()
		log.Info().Float64(logKeySpent, s.SpentUSD).Int(logKeyCalls, s.Calls).Float64(logKeyBudget, s.BudgetUSD).
			Str(logKeyPrices, s.PriceTable).Msg("model usage")
	}
	return err
}

// buildGateway returns nil when no gateway is configured.
func buildGateway(c *Config, al *audit.Log) (*gateway.Gateway, *meter.Meter, error) {
	g := c.Gateway
	if g.GitBase == "" && g.GitHubAPIBase == "" && g.AnthropicBase == "" && g.OpenAIBase == "" {
		return nil, nil, nil
	}
	token, err := readSecret(g.TokenFile, EnvGitHubToken)
	if err != nil {
		return nil, nil, err
	}
	akey, err := readSecret(g.AnthropicKeyFile, EnvAnthropicKey)
	if err != nil {
		return nil, nil, err
	}
	okey, err := readSecret(g.OpenAIKeyFile, EnvOpenAIKey)
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
		Token: token, AnthropicKey: akey, OpenAIKey: okey, APIAllow: g.APIAllow, PushRef: g.PushRef, CAFile: g.CAFile,
		Meter: m, Audit: al,
	})
	if err != nil {
		return nil, nil, err
	}
	return gw, m, nil
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

// Started is a firewall serving in the background (see Start).
type Started struct {
	// Addr is the address it listens on.
	Addr   string
	cancel context.CancelFunc
	done   chan error
}

// Stop closes the listener and every connection, flushes the audit log and returns
// Run's error, if any. It may be called once.
func (s *Started) Stop() error {
	s.cancel()
	return <-s.done
}

// Start runs the firewall described by c in the background and returns once it listens,
// for callers (such as the sandbox runner) that start one firewall per run.
func Start(ctx context.Context, c *Config) (*Started, error) {
	ctx, cancel := context.WithCancel(ctx)
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- Run(ctx, c, func(addr string) { ready <- addr }) }()
	select {
	case addr := <-ready:
		return &Started{Addr: addr, cancel: cancel, done: done}, nil
	case err := <-done:
		cancel()
		if err == nil {
			err = errors.New("firewall stopped before it was ready")
		}
		return nil, fmt.Errorf("failed to start firewall: %w", err)
	}
}
