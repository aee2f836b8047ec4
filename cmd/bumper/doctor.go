package main

import (
	"context"
	"fmt"
	"io"

	"github.com/bumperdev/bumper/action/harness"
	"github.com/bumperdev/bumper/action/hostdoctor"
	"github.com/bumperdev/bumper/action/preflight"
	"github.com/bumperdev/bumper/app"
	"github.com/bumperdev/bumper/app/appdoctor"
	"github.com/bumperdev/bumper/internal/doctorreport"
	"github.com/bumperdev/bumper/sandbox/image"
)

// runDoctor is `bumper doctor`: the runner host's checks, and with serve's
// configuration the App's and a repository's. Exit status 1 when something blocks a
// run (with --strict, also on warnings).
func runDoctor(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("doctor", "[--repo OWNER/REPO --config FILE] [--json] [--host=false]", stderr)
	repo := fs.String("repo", "", "check this repository's set-up (needs --config)")
	cfgPath := fs.String("config", "", "serve's configuration: the App's credentials and settings")
	asJSON := fs.Bool("json", false, "print the report as JSON (schema bumper-doctor/v1, docs/doctor.md)")
	strict := fs.Bool("strict", false, "exit 1 on warnings too")
	host := fs.Bool("host", true, "check this machine as a runner host (root, namespaces, nftables, QEMU, KVM canary or TCG, image, disk)")
	var po preflight.Options
	fs.StringVar(&po.Cache, "cache", image.DefaultCacheDir, "the runner's image cache (the action's cache input)")
	fs.StringVar(&po.Image, "image", "", "an image directory to load and verify instead of the cache's (the action's image input)")
	fs.StringVar(&po.QEMUUser, "qemu-user", "nobody", "the user QEMU drops to (the action's qemu-user input)")
	fs.StringVar(&po.Accel, "accel", "auto", "auto, kvm or tcg (the action's accel input)")
	fs.BoolVar(&po.AllowTCG, "allow-tcg", false, "runs may fall back to TCG (BUMPER_ALLOW_TCG)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: doctor takes no arguments", errUsage)
	}
	if *repo != "" && *cfgPath == "" {
		return fmt.Errorf("%w: --repo needs --config (serve's configuration, for the App's credentials)", errUsage)
	}
	if !*host && *cfgPath == "" {
		return fmt.Errorf("%w: nothing to check: --host=false without --config", errUsage)
	}
	var findings []doctorreport.Finding
	if *host {
		findings = append(findings, hostdoctor.Host(ctx, po)...)
	}
	if *cfgPath != "" {
		cfg, err := app.LoadConfig(*cfgPath)
		if err != nil {
			findings = append(findings, doctorreport.Finding{Check: "app.config", Status: doctorreport.Blocking,
				Detail: fmt.Sprintf("serve would not start with %s: %v", *cfgPath, err), Fix: "fix it as the error says (app/config.example.yml documents every key)"})
		} else {
			findings = append(findings, appdoctor.Check(ctx, cfg, *repo, appdoctor.Options{ClaudeCodeVersion: harness.DefaultClaudeCodeVersion})...)
		}
	}
	rep := doctorreport.NewReport(findings)
	if *asJSON {
		if err := rep.WriteJSON(stdout); err != nil {
			return err
		}
	} else {
		rep.WriteText(stdout)
	}
	if rep.Blocking > 0 || (*strict && rep.Warnings > 0) {
		return exitError{code: 1}
	}
	return nil
}
