package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cliCase is one command line and what it must do.
type cliCase struct {
	name       string
	args       []string
	wantCode   int
	wantStdout string
	wantStderr string
}

// runCLICases runs each case through run, as the binary would, and checks the exit
// code and that stdout and stderr contain what is wanted.
func runCLICases(t *testing.T, cases []cliCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, &stdout, &stderr)
			if code != tt.wantCode {
				t.Fatalf("exit code = %d, want %d; stderr: %s", code, tt.wantCode, stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.wantStdout) {
				t.Errorf("stdout = %q, want it to contain %q", stdout.String(), tt.wantStdout)
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), tt.wantStderr)
			}
		})
	}
}

func TestRun(t *testing.T) {
	runCLICases(t, []cliCase{
		{name: "no args prints help", args: nil, wantCode: 0, wantStdout: "Usage: bumper <command>"},
		{name: "help", args: []string{"help"}, wantCode: 0, wantStdout: "version"},
		{name: "version", args: []string{"version"}, wantCode: 0, wantStdout: "bumper dev"},
		{name: "version with extra args", args: []string{"version", "x"}, wantCode: 2, wantStderr: "takes no arguments"},
		{name: "unknown command", args: []string{"frobnicate"}, wantCode: 2, wantStderr: `unknown command "frobnicate"`},
		{name: "help for unknown command", args: []string{"help", "frobnicate"}, wantCode: 2, wantStderr: "unknown command"},
		{name: "bad flag", args: []string{"version", "--nope"}, wantCode: 2, wantStderr: "bumper help version"},
		{name: "help points at the docs", args: []string{"help"}, wantCode: 0, wantStdout: "docs/README.md"},
		{name: "a command's help points at its page", args: []string{"help", "firewall"}, wantCode: 0, wantStderr: "Documentation: docs/firewall.md"},
		{name: "demo with an unknown agent is a usage error", args: []string{"demo", "--agent", "gpt"}, wantCode: 2, wantStderr: "want command, claude-code or codex"},
		{name: "demo with --issue but no --repo is a usage error", args: []string{"demo", "--issue", "task.md"}, wantCode: 2, wantStderr: "--issue is the task for --repo"},
		{name: "demo takes no arguments", args: []string{"demo", "now"}, wantCode: 2, wantStderr: "only flags"},
	})
}

// TestCommandDocsExist: every page `bumper help` points at is there.
func TestCommandDocsExist(t *testing.T) {
	for name, c := range commands() {
		if c.doc == "" {
			t.Errorf("command %s names no documentation page", name)
			continue
		}
		if _, err := os.Stat(filepath.Join("..", "..", c.doc)); err != nil {
			t.Errorf("command %s points at %s: %v", name, c.doc, err)
		}
	}
	if _, err := os.Stat(filepath.Join("..", "..", "docs", "README.md")); err != nil {
		t.Error(err)
	}
}
