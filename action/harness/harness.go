// Package harness runs the agent inside the run's VM: one adapter per agent CLI, all
// behind Harness, so the runner drives a round the same way whichever agent a
// repository chose.
//
// A round is one Run: the harness builds the command line and environment, runs it
// through the runner's Exec (the VM's sandbox session, in /workspace/repo, as the
// unprivileged user), streams its output to the transcript sinks, reads its events as
// they arrive (turns, tool calls, self-reported cost) and judges whether it succeeded.
// What a later round needs (the verification feedback) travels in that round's
// environment and argv or prompt. While a round runs, the host's only way in is the
// command's Input: its standard input and its steering directory, which carry the
// writers' /steer words (Request.Steers) to the agent as each harness can take them.
//
// Three adapters: command (a repository's own program; see Command), claude-code
// (Anthropic's Claude Code CLI, `claude -p --input-format stream-json --output-format
// stream-json`; see ClaudeCode) and codex (OpenAI's Codex CLI, `codex exec --json`; see
// Codex). The CLI
// adapters need their release pinned (.github/bumper.yml's harness.version); the
// releases they were checked against are in versions.go (DefaultCLIs).
//
// Everything a harness reads from the VM is untrusted: events are parsed within
// bounds, used for counting and display only, and an event that cannot be understood
// is counted, never fatal.
package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"time"

	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/repoconfig"
)

// Exec runs one command in the VM, in /workspace/repo, as the unprivileged user,
// writing its output to stdout and stderr as it comes (the writers may be called from
// another goroutine than the caller's, but one at a time each). env holds KEY=VALUE
// entries added to the user's base environment; a later entry wins over an earlier
// one with the same key. The runner adapts its sandbox session to it.
//
// A command that ran, failed, was killed or could not start is an ExitStatus, not an
// error: the error is for a VM or a session that could not run anything any more.
//
// in, at most one, asks for a way into the command while it runs (Input); without it
// the command reads nothing.
type Exec func(ctx context.Context, argv, env []string, stdout, stderr io.Writer, in ...Input) (ExitStatus, error)

// Input asks Exec for a way into the command while it runs: its standard input, its
// steering directory, or both.
type Input struct {
	// Stdin makes the command's standard input a pipe that the Feed writes to; without
	// it the command reads nothing.
	Stdin bool
	// Steering gives the command a steering directory, named by SteerDirEnv in its
	// environment, that the Feed places files in: readable by the command's user,
	// writable only by the VM's agent, made empty for each command and removed after.
	Steering bool
	// Ready is called once with the command's Feed, before the command starts (what is
	// fed before it runs waits for it, in order), from Exec's goroutine.
	Ready func(Feed)
	// Placed is told, once for each file the Feed accepted, when it is in the steering
	// directory (err nil), or why it is not (ErrCommandEnded: the command ended first;
	// else the VM refused it), before Exec returns. It must not block.
	Placed func(name string, at time.Time, err error)
}

// Feed is a running command's way in. Its methods may be called from any goroutine;
// once the command has ended they fail.
type Feed interface {
	// Write sends p to the command's standard input.
	Write(p []byte) (int, error)
	// CloseStdin closes it: the command reads end of file after what was written.
	CloseStdin() error
	// Place puts a file in the command's steering directory: a name of letters, digits,
	// '.', '_' and '-' that starts with a letter or digit, never one placed before; at
	// most 64 KiB, at most 256 files per command.
	Place(name string, data []byte) error
}

// ErrCommandEnded is Input.Placed's error for a file the command ended before the VM
// placed.
var ErrCommandEnded = errors.New("the command ended before the file was placed")

// SteerDirEnv names a command's steering directory in its environment (the VM's agent
// sets it; sandbox/agentproto.SteerDirEnv).
const SteerDirEnv = "BUMPER_STEER_DIR"

// ExitStatus is how a command ended, as the guest reported it.
type ExitStatus struct {
	// Code is the exit status, -1 when the command was killed or never started.
	Code int
	// Signal names the signal that killed the command ("killed", "terminated"), if one did.
	Signal string
	// Error says why the command could not be started, if it could not.
	Error string
	// TimedOut says the run's wall-time limit ended the command.
	TimedOut bool
}

// OK reports a command that exited with status 0 by itself.
func (s ExitStatus) OK() bool {
	return s.Code == 0 && s.Signal == "" && s.Error == "" && !s.TimedOut
}

// String says how the command ended, as a predicate: "exited with status 2", "was
// killed by signal killed", "timed out", "did not start: …".
func (s ExitStatus) String() string {
	switch {
	case s.TimedOut:
		return "timed out"
	case s.Error != "":
		return "did not start: " + s.Error
	case s.Signal != "":
		return "was killed by signal " + s.Signal
	default:
		return fmt.Sprintf("exited with status %d", s.Code)
	}
}

// ExitCode is the status as a shell reports it, 0 to 255, for the evidence bundle:
// the exit status when the command exited, 124 when it timed out (as timeout(1)),
// 128+N when signal N killed it, 127 when it never started (as a shell's "not found").
func (s ExitStatus) ExitCode() int {
	switch {
	case s.TimedOut:
		return 124
	case s.Error != "":
		return 127
	case s.Signal != "":
		for n := syscall.Signal(1); n < 65; n++ {
			if n.String() == s.Signal {
				return 128 + int(n)
			}
		}
		return 128 + int(syscall.SIGKILL)
	case s.Code < 0 || s.Code > 255:
		return 255
	default:
		return s.Code
	}
}

// Request is one agent round.
type Request struct {
	// Round is the 1-based agent round.
	Round int
	// Feedback is Markdown saying what verification found in the previous round (see
	// verify.Round.Feedback); "" in round 1.
	Feedback string
	// Env holds KEY=VALUE entries the runner adds (model gateway base URLs, sentinel
	// keys). The harness's own variables come after them and win.
	Env []string
	// Stdout and Stderr receive the agent's output as it comes: the transcript, which
	// the runner saves to the artifact. Exec may write both at once from two
	// goroutines, so two writers that share state must lock it. Nil discards.
	Stdout, Stderr io.Writer
	// OnEvent, when set, is called for each event as it arrives (up to MaxEvents), one
	// at a time, from the goroutine that writes the agent's output.
	OnEvent func(Event)
	// Steers are writers' words for the agent while the round runs (/steer), oldest
	// first: the harness takes each when it can give it to the agent (claude-code as a
	// user message on the CLI's input, command as a file in the steering directory,
	// codex only those waiting when the round starts, in its prompt). Those waiting when
	// the round starts are in the channel's buffer when Run is called. The runner never
	// closes it; a harness stops taking when the round ends. Nil: none.
	Steers <-chan wire.Steer
	// OnSteer is told, once for each steer the harness took, when it reached the agent
	// (DeliveredAt) or why it did not (Note), before Run returns; from any goroutine,
	// one call at a time.
	OnSteer func(wire.SteerDelivery)
}

// Result is how a round went.
type Result struct {
	// Command is the agent's command line as the repository wrote it, for the evidence
	// bundle's list of commands.
	Command string
	// Exit is how the agent's process ended.
	Exit ExitStatus
	// OK says the round succeeded. For the command harness: the program exited with
	// status 0 by itself, nothing else.
	OK bool
	// Reason says why not, in a line, when OK is false.
	Reason string
	// Counts sums the events the round reported.
	Counts
}

// Harness is one agent adapter.
type Harness interface {
	// Name is the harness's name in .github/bumper.yml.
	Name() string
	// Run runs one round. It returns an error only when the harness could not run at
	// all (a broken VM or session); an agent that failed is a Result that is not OK.
	Run(ctx context.Context, exec Exec, req Request) (*Result, error)
}

// New returns the harness a repository configured. A CLI harness needs an exact
// release in cfg.Version; the VM image carries that release.
func New(cfg repoconfig.Harness) (Harness, error) {
	switch cfg.Name {
	case repoconfig.HarnessCommand:
		c, err := newCommand(cfg.Command)
		if err != nil {
			return nil, err
		}
		return c, nil
	case repoconfig.HarnessClaudeCode, repoconfig.HarnessCodex:
		def, _ := DefaultCLI(cfg.Name)
		if err := checkPinned(cfg, def); err != nil {
			return nil, err
		}
		if cfg.Name == repoconfig.HarnessCodex {
			return &Codex{pinned{version: cfg.Version, model: cfg.Model}}, nil
		}
		return &ClaudeCode{pinned{version: cfg.Version, model: cfg.Model}}, nil
	case "":
		return nil, fmt.Errorf("%s names no harness: set harness.name (%s, %s or %s)",
			repoconfig.Path, repoconfig.HarnessCommand, repoconfig.HarnessClaudeCode, repoconfig.HarnessCodex)
	default:
		return nil, fmt.Errorf("harness %q is not one of %s, %s, %s",
			cfg.Name, repoconfig.HarnessCommand, repoconfig.HarnessClaudeCode, repoconfig.HarnessCodex)
	}
}
