// Command bumper is the single Bumper binary: the GitHub App, the runner side, the
// firewall, the sandbox and the GitHub emulator. It only wires; every command's logic
// lives in the packages it calls.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"github.com/bumperdev/bumper/internal/buildinfo"
)

// command is one `bumper <name>` subcommand.
type command struct {
	summary string
	// doc is the page of docs/ that explains the command.
	doc string
	// run gets the arguments after the command name. It returns errUsage (wrapped or
	// not) when the arguments are wrong, so main can point at the command's help.
	run func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// errUsage marks an error caused by how the command was called.
var errUsage = errors.New("usage error")

func commands() map[string]command {
	return map[string]command{
		"version":     {summary: "print the version of this build", doc: "CONTRIBUTING.md", run: runVersion},
		"serve":       {summary: "run the GitHub App: webhooks, dispatch, token exchange (--config FILE)", doc: "docs/install.md", run: runServe},
		"emulator":    {summary: "run a GitHub emulator (REST API, git, webhooks, OIDC) on loopback", doc: "docs/emulator.md", run: runEmulator},
		"image":       {summary: "build a sandbox VM image (kernel, initramfs, rootfs), or prune the image cache", doc: "docs/images.md", run: runImage},
		"report":      {summary: "what Bumper shipped and what it cost: work items, pull requests merged (zero-touch), rounds, times, spend (--repo OWNER/NAME | --org ORG --config FILE [--since 7d] [--format table|json|csv] [--post])", doc: "docs/report.md", run: runReport},
		"doctor":      {summary: "check a runner host, the App and a repository's set-up; each finding with its fix (--repo OWNER/REPO --config FILE, --json)", doc: "docs/doctor.md", run: runDoctor},
		"demo":        {summary: "the whole arc on this machine: an issue to a reviewed pull request, with the emulator, serve, the firewall and a microVM", doc: "docs/demo.md", run: runDemo},
		"env":         {summary: "build (or find) a repository's environment image from a checkout: bumper env build DIR", doc: "docs/environments.md", run: runEnv},
		"firewall":    {summary: "run the default-deny egress proxy with gateways and audit log", doc: "docs/firewall.md", run: runFirewall},
		"audit":       {summary: "verify a firewall audit log: bumper audit verify FILE", doc: "docs/firewall.md", run: runAudit},
		"evidence":    {summary: "verify a run's signed statement offline: bumper evidence verify --key PEM|--url SERVE FILE; make serve's key: bumper evidence keygen", doc: "docs/attestation.md", run: runEvidence},
		"guest-agent": {summary: "internal: PID 1 inside a sandbox VM (refuses to run on a host)", doc: "docs/sandbox.md", run: runGuestAgent},
		"run":         {summary: "one dispatched run: token exchange, firewall, microVM, agent, verification, pull request (action.yml runs it)", doc: "docs/run.md", run: runRun},
		"setup":       {summary: "create the GitHub App from its manifest and write serve's configuration (--url PUBLIC_URL [--org ORG])", doc: "docs/install.md", run: runSetup},
		"sandbox":     {summary: "run a command in a microVM behind the firewall: bumper sandbox run -- CMD", doc: "docs/sandbox.md", run: runSandbox},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one command line and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmds := commands()
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) > 1 {
			if c, ok := cmds[args[1]]; ok {
				code := exitCode(c.run(ctx, []string{"-h"}, stdout, stderr), args[1], stderr)
				fmt.Fprintf(stderr, "\nDocumentation: %s (%s)\n", c.doc, docsURL+c.doc)
				return code
			}
			fmt.Fprintf(stderr, "bumper: unknown command %q; run 'bumper help' for the list\n", args[1])
			return 2
		}
		usage(stdout, cmds)
		return 0
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "bumper: unknown command %q; run 'bumper help' for the list\n", args[0])
		return 2
	}
	return exitCode(c.run(ctx, args[1:], stdout, stderr), args[0], stderr)
}

func exitCode(err error, name string, stderr io.Writer) int {
	var exit exitError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &exit):
		return exit.code
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "bumper %s: %v\nrun 'bumper help %s' for its flags\n", name, err, name)
		return 2
	default:
		fmt.Fprintf(stderr, "bumper %s: %v\n", name, err)
		return 1
	}
}

// exitError carries a specific exit status (for example a sandboxed command's own)
// without printing anything more.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func usage(w io.Writer, cmds map[string]command) {
	fmt.Fprintln(w, "bumper runs coding agents unattended on GitHub, safely.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: bumper <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	names := make([]string, 0, len(cmds))
	width := len("help")
	for n := range cmds {
		names = append(names, n)
		width = max(width, len(n))
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-*s  %s\n", width, n, cmds[n].summary)
	}
	fmt.Fprintf(w, "  %-*s  %s\n", width, "help", "print this list, or 'bumper help <command>' for one command's flags")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Documentation: README.md and docs/ in the source (%s)\n", docsURL+"docs/README.md")
}

// docsURL is where the documentation is read without a checkout.
const docsURL = "https://github.com/bumperdev/bumper/blob/main/"

// newFlagSet returns a flag set that reports errors instead of exiting, with a usage
// line naming the command.
func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("bumper "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: bumper %s %s\n\nFlags:\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args into fs and turns a parse failure into errUsage.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	return nil
}

func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("version", "", stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: version takes no arguments", errUsage)
	}
	fmt.Fprintln(stdout, buildinfo.String())
	return nil
}
