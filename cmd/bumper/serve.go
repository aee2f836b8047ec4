package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/bumperdev/bumper/app"
	"github.com/bumperdev/bumper/app/workitem"
	"github.com/rs/zerolog"
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
	go reloadPause(ctx, *path, srv, nil)
	return srv.Run(ctx)
}

// pauser is what a reload sets: serve's kill switch (app.Server).
type pauser interface {
	SetPause(ctx context.Context, p workitem.PauseState) (int, error)
}

// reloadPause reads the configuration again on each SIGHUP and applies its kill switch
// (bumper.paused, bumper.pause); every other key needs a restart. A file that no longer
// loads changes nothing, and says so.
// ready, when not nil, is closed once SIGHUP is caught (tests).
func reloadPause(ctx context.Context, path string, srv pauser, ready chan<- struct{}) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	if ready != nil {
		close(ready)
	}
	log := zerolog.Ctx(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		cfg, err := app.LoadConfig(path)
		if err != nil {
			log.Error().Err(err).Msg("SIGHUP: the configuration does not load; the pause switch is unchanged")
			continue
		}
		if _, err := srv.SetPause(ctx, cfg.Bumper.PauseState()); err != nil {
			log.Error().Err(err).Msg("SIGHUP: resuming the paused work items failed; the next SIGHUP tries again")
		}
	}
}
