package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/bumperdev/bumper/firewall/audit"
)

func runAudit(_ context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "verify" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprintln(stderr, "Usage: bumper audit verify [--head HASH] FILE")
			return nil
		}
		return fmt.Errorf("%w: want 'bumper audit verify [--head HASH] FILE'", errUsage)
	}
	fs := newFlagSet("audit verify", "[--head HASH] FILE", stderr)
	head := fs.String("head", "", "expected hash of the last line (from the evidence bundle); detects edits to the end of the log")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: audit verify takes exactly one FILE", errUsage)
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		return fmt.Errorf("failed to open audit log: %w", err)
	}
	defer f.Close()
	h, err := audit.Verify(f, *head)
	if err != nil {
		fmt.Fprintf(stdout, "FAIL %s: %v\n", fs.Arg(0), err)
		return exitError{code: 1}
	}
	fmt.Fprintf(stdout, "ok %s: %d lines, head %s\n", fs.Arg(0), h.Lines, h.Hash)
	return nil
}
