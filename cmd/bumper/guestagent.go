package main

import (
	"context"
	"fmt"
	"io"

	"github.com/bumperdev/bumper/sandbox/guest"
)

// runGuestAgent is the hidden `guest-agent` command: PID 1 inside a sandbox VM.
func runGuestAgent(ctx context.Context, args []string, _, stderr io.Writer) error {
	fs := newFlagSet("guest-agent", "(runs only as PID 1 inside a Bumper VM)", stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: guest-agent takes no arguments", errUsage)
	}
	return guest.Main(ctx)
}
