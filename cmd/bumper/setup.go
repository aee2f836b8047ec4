package main

import (
	"context"
	"fmt"
	"io"

	"github.com/bumperdev/bumper/app/setup"
)

// runSetup is `bumper setup`: GitHub's App manifest flow, from a page on loopback to
// the App's credentials and serve's configuration on disk.
func runSetup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("setup", "--url PUBLIC_URL [--org ORG] [--dir DIR] [--github-url URL]", stderr)
	var o setup.Options
	fs.StringVar(&o.PublicURL, "url", "", "serve's public base URL (required): GitHub sends webhooks to URL/api/github/hook, runners use it as BUMPER_URL")
	fs.StringVar(&o.Org, "org", "", "create the App under this organisation (empty: under your own account)")
	fs.StringVar(&o.Dir, "dir", "bumper-app", "where the key, webhook secret, serve.yml and app.json go; it must not hold them already")
	fs.StringVar(&o.GitHubURL, "github-url", "https://github.com", "GitHub's web address: GitHub Enterprise Server's, or bumper emulator's")
	fs.StringVar(&o.APIURL, "api-url", "", "GitHub's REST API base URL (default: api.github.com for github.com; else found by asking GITHUB_URL/api/v3/meta, then GITHUB_URL/meta)")
	fs.StringVar(&o.Name, "name", "", "the App's name, unique on GitHub (default \"Bumper for ORG\"; GitHub's page lets you change it)")
	fs.StringVar(&o.Listen, "listen", "127.0.0.1:0", "loopback address of the local page")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: setup takes no arguments", errUsage)
	}
	if o.PublicURL == "" {
		return fmt.Errorf("%w: --url is required: serve's public https:// base URL, which GitHub sends webhooks to", errUsage)
	}
	setup.WriteRequirements(stdout)
	o.Ready = func(page string) {
		fmt.Fprintf(stdout, "\nOpen %s in a browser on this machine and press the button: GitHub shows the App, and sends the browser back here once it is created (the code it brings works for %s).\n", page, setup.CodeLifetime)
	}
	res, err := setup.Run(ctx, o)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout)
	res.WriteSummary(stdout)
	return nil
}
