package main

import (
	"context"
	"fmt"
	"io"

	"github.com/bumperdev/bumper/app"
)

// runServe is `bumper serve --config FILE`: the GitHub App.
func runServe(ctx context.Context, args []string, _, stderr io.Writer) error {
	fs := newFlagSet("serve", "--config FILE", stderr)
	path := fs.String("config", "", "the server configuration (YAML; see app/config.example.yml); BUMPER_* variables override it")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: serve takes no arguments, only --config FILE", errUsage)
	}
	if *path == "" {
		return fmt.Errorf("%w: --config FILE is required", errUsage)
	}
	cfg, err := app.LoadConfig(*path)
	if err != nil {
		return err
	}
	log := cfg.Logger(stderr)
	ctx = log.WithContext(ctx)
	srv, err := app.New(ctx, cfg, app.Options{})
	if err != nil {
		return err
	}
	return srv.Run(ctx)
}
