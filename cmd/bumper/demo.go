package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/bumperdev/bumper/cmd/bumper/internal/demo"
	"github.com/bumperdev/bumper/sandbox/image"
)

// runDemo is `bumper demo`: the whole arc on this machine (cmd/bumper/internal/demo).
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("demo", "[--out DIR] [--repo DIR --issue FILE] [--agent command|claude-code|codex] [--agent-cmd CMD] [--model-base-url URL] [--keep] [--listen ADDR] [--cache DIR]", stderr)
	var c demo.Config
	fs.StringVar(&c.Out, "out", "bumper-demo", "directory for the run's files (evidence.json, evidence.md, verdict.json, audit.jsonl, pr.diff) and the logs")
	fs.StringVar(&c.RepoDir, "repo", "", "run on this local git checkout (its committed history and .github/bumper.yml) instead of the sample repository")
	fs.StringVar(&c.IssueFile, "issue", "", "with --repo: the task, a Markdown file whose first line is the issue's title")
	fs.StringVar(&c.Agent, "agent", demo.AgentCommand, "the sample's agent: command (a scripted agent), claude-code or codex (the real CLI in the VM, against a scripted model unless --model-base-url)")
	fs.StringVar(&c.AgentCmd, "agent-cmd", "", "run this program as the agent, with the command harness, in the sample's checkout in the VM")
	fs.StringVar(&c.ModelBaseURL, "model-base-url", "", "a real model API for --agent claude-code or codex; the key is read from ANTHROPIC_API_KEY or OPENAI_API_KEY and only the firewall holds it")
	fs.BoolVar(&c.Keep, "keep", false, "keep the emulator and serve up after the arc, until Ctrl-C, to browse the web view")
	fs.StringVar(&c.Listen, "listen", "127.0.0.1:0", "the emulator's address; port 0 picks a free one")
	fs.StringVar(&c.Cache, "cache", image.DefaultCacheDir, "the runner's image cache (the first run builds the VM images there)")
	fs.DurationVar(&c.RunTimeout, "run-timeout", 15*time.Minute, "cap on each workflow run")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: demo takes no arguments, only flags", errUsage)
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("failed to find this bumper binary, which the runner runs: %w", err)
	}
	if c.Out, err = filepath.Abs(c.Out); err != nil {
		return fmt.Errorf("failed to resolve --out: %w", err)
	}
	c.Binary, c.Stdout, c.Getenv, c.EUID = self, stdout, os.Getenv, os.Geteuid()
	if f, ok := stdout.(*os.File); ok {
		c.TTY = isatty.IsTerminal(f.Fd())
	}
	if _, err := demo.Run(ctx, c); err != nil {
		if errors.Is(err, demo.ErrBadFlags) {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
		var se *demo.StepError
		if errors.As(err, &se) && se.Log != "" {
			fmt.Fprintf(stderr, "\n%s\n", se.Log)
		}
		return err
	}
	return nil
}
