package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/bumperdev/bumper/internal/ghretry"

	"github.com/palantir/go-githubapp/githubapp"

	"github.com/bumperdev/bumper/app"
	"github.com/bumperdev/bumper/app/ghclient"
	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/report"
)

// runReport is `bumper report`: what the work items of a repository or an
// organization came to, read through the App with serve's credentials, printed, and
// with --post kept in one `bumper:report` issue per repository.
func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("report", "(--repo OWNER/NAME | --org ORG) --config FILE [--since 7d] [--format table|json|csv] [--post]", stderr)
	repo := fs.String("repo", "", "report on this repository")
	org := fs.String("org", "", "report on every repository of the App's installation on this organization")
	cfgPath := fs.String("config", "", "serve's configuration: the App's credentials, and bumper.run_token_key to verify the status records")
	since := fs.String("since", "7d", "items whose issue was created or updated since: 7d, 2w, 36h, 2026-03-01, an RFC 3339 time, or all")
	format := fs.String("format", "table", "output: "+strings.Join(report.Formats, ", "))
	post := fs.Bool("post", false, "also keep one issue labeled "+report.Label+" in each repository up to date with its table")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("%w: report takes no arguments", errUsage)
	case (*repo == "") == (*org == ""):
		return fmt.Errorf("%w: give --repo OWNER/NAME or --org ORG", errUsage)
	case *cfgPath == "":
		return fmt.Errorf("%w: --config is required (serve's configuration, for the App's credentials)", errUsage)
	case !slices.Contains(report.Formats, *format):
		return fmt.Errorf("%w: --format %q: want one of %s", errUsage, *format, strings.Join(report.Formats, ", "))
	}
	from, err := report.ParseSince(*since, time.Now())
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	cfg, err := app.LoadConfigForReading(*cfgPath)
	if err != nil {
		return err
	}
	var sealer *ledger.Sealer
	if cfg.Bumper.RunTokenKey != "" {
		key, err := cfg.RunTokenKeyBytes()
		if err != nil {
			return err
		}
		previous, err := cfg.PreviousKeyBytes()
		if err != nil {
			return err
		}
		if sealer, err = ledger.NewSealer(key, previous...); err != nil {
			return err
		}
	}
	cc, err := githubapp.NewDefaultCachingClientCreator(cfg.GitHub, githubapp.WithTransport(ghretry.New(nil)))
	if err != nil {
		return fmt.Errorf("failed to create the GitHub client creator: %w", err)
	}
	scope, err := ghclient.ConnectReport(ctx, cc, *repo, *org)
	if err != nil {
		return err
	}
	items, err := report.Collect(ctx, scope.GitHub, report.Options{Repositories: scope.Repositories, Since: from, Bot: scope.Bot, Sealer: sealer})
	if err != nil {
		return err
	}
	rep := report.Build(items, scope.Repositories, from, sealer != nil)
	if err := report.Write(stdout, rep, *format); err != nil {
		return err
	}
	if !*post {
		return nil
	}
	for _, r := range scope.Repositories {
		n, wrote, err := report.Post(ctx, scope.GitHub, r, report.Markdown(report.ForRepository(rep, r)))
		if err != nil {
			return err
		}
		what := "unchanged"
		if wrote {
			what = "updated"
		}
		fmt.Fprintf(stderr, "%s#%d (%s): %s\n", r, n, report.Label, what)
	}
	return nil
}
