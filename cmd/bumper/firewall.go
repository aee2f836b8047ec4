package main

import (
	"context"
	"fmt"
	"io"
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

func runFirewall(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("firewall", "--listen ADDR [--config FILE] [--allow DOMAIN]... [--resolve HOST:IP]... --audit FILE", stderr)
	var flags firewall.Flags
	var allow, resolve stringList
	configPath := fs.String("config", "", "YAML config file (policy, limits, gateways, budget); see the README, section Firewall")
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
	if err := cfg.Apply(flags); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	logger := zerolog.New(stderr).With().Timestamp().Logger()
	ctx = logger.WithContext(ctx)
	return firewall.Run(ctx, cfg, func(addr string) {
		fmt.Fprintf(stdout, "bumper firewall listening on %s\n", addr)
	})
}
