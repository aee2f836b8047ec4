package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/firewall"
)

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// firewallFlags are the firewall's command-line settings, layered over its config file.
type firewallFlags struct {
	Listen  string
	Audit   string
	Allow   []string // added to the config's allowlist
	Resolve []string // HOST:IP, added to (and overriding) the config's resolve pins
}

// apply merges the flags into c, the flags winning.
func (f firewallFlags) apply(c *firewall.Config) error {
	if f.Listen != "" {
		c.Listen = f.Listen
	}
	if f.Audit != "" {
		c.Audit = f.Audit
	}
	c.Allow = append(c.Allow, f.Allow...)
	pins, err := resolvePins(f.Resolve)
	if err != nil {
		return err
	}
	for host, a := range pins {
		if c.Resolve == nil {
			c.Resolve = map[string]string{}
		}
		c.Resolve[host] = a
	}
	return nil
}

// resolvePins parses HOST:IP pins (--resolve, BUMPER_FIREWALL_RESOLVE) into the
// firewall's Resolve map; nil when there are none.
func resolvePins(list []string) (map[string]string, error) {
	var pins map[string]string
	for _, r := range list {
		host, a, err := parseResolve(r)
		if err != nil {
			return nil, err
		}
		if pins == nil {
			pins = map[string]string{}
		}
		pins[host] = a.String()
	}
	return pins, nil
}

// newFirewall layers f over c and builds the firewall; errors say which flag fixes them.
func newFirewall(c *firewall.Config, f firewallFlags) (*firewall.Firewall, error) {
	if err := f.apply(c); err != nil {
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	fw, err := firewall.New(c)
	switch {
	case errors.Is(err, firewall.ErrNoListen):
		return nil, fmt.Errorf("%w: no listen address: pass --listen or set listen in the config", errUsage)
	case errors.Is(err, firewall.ErrNoAudit):
		return nil, fmt.Errorf("%w: no audit log: pass --audit FILE or set audit in the config", errUsage)
	}
	return fw, err
}

// parseResolve parses `HOST:IP` (IPv6 as `HOST:[IP]` or `HOST:IP`).
func parseResolve(s string) (string, netip.Addr, error) {
	host, ip, ok := strings.Cut(s, ":")
	if !ok || host == "" || ip == "" {
		return "", netip.Addr{}, fmt.Errorf("--resolve %q: want HOST:IP, for example allowed.test:127.0.0.2", s)
	}
	a, err := netip.ParseAddr(strings.Trim(ip, "[]"))
	if err != nil || a.Zone() != "" {
		return "", netip.Addr{}, fmt.Errorf("--resolve %q: %q is not an IP address", s, ip)
	}
	return host, a.Unmap(), nil
}

func runFirewall(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("firewall", "--listen ADDR [--config FILE] [--allow DOMAIN]... [--resolve HOST:IP]... --audit FILE", stderr)
	var flags firewallFlags
	var allow, resolve stringList
	configPath := fs.String("config", "", "YAML config file (policy, limits, gateways, budget); see docs/firewall.md and firewall/config.example.yml")
	fs.StringVar(&flags.Listen, "listen", "", "address to listen on, e.g. 127.0.0.1:3128 (overrides the config)")
	fs.StringVar(&flags.Audit, "audit", "", "hash-chained JSON-lines audit log to append to (overrides the config)")
	fs.Var(&allow, "allow", "allow a domain: name, *.suffix, or IP literal, optionally :port[,port] (repeatable)")
	fs.Var(&resolve, "resolve", "pin HOST to IP, trusting that address (repeatable; logged at start)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	flags.Allow, flags.Resolve = allow, resolve
	cfg := &firewall.Config{}
	if *configPath != "" {
		var err error
		if cfg, err = firewall.LoadConfig(*configPath); err != nil {
			return err
		}
	}
	fw, err := newFirewall(cfg, flags)
	if err != nil {
		return err
	}
	logger := zerolog.New(stderr).With().Timestamp().Logger()
	ctx = logger.WithContext(ctx)
	// It serves until ctx ends (an interrupt or SIGTERM), then closes everything.
	if err := fw.Start(ctx); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "bumper firewall listening on %s\n", fw.Addr())
	return fw.Wait(context.Background())
}
