// Package verify runs a repository's verification commands in the run's VM after the
// agent, reads what they report, and says what failed: as evidence (a TestRun and a
// Command per command) and as Markdown feedback for the agent's next round.
//
// Each command runs with `sh -c` in /workspace/repo through the runner's harness.Exec,
// one after the other, all of them whatever the earlier ones did (the agent gets to fix
// everything at once). Its output streams to the live log and is read as it comes,
// within bounds:
//
//   - `go test -json` output (test2json events on stdout, found by their shape
//     anywhere in the stream): counts per test, subtests included, and each failing
//     test's output; a package that fails without a failing test (a build failure, a
//     panic in TestMain, a stream cut short) is a failure of its own.
//   - A JUnit XML report printed on stdout (from its first "<testsuite"): every
//     <testcase>, failed by <failure> or <error>, skipped by <skipped>.
//   - Anything else: the exit status alone, the command counting as one check that
//     passed or failed, its failure's excerpt the end of its output.
//
// A command that exits non-zero with no failing test in its report fails all the
// same, with its output as the excerpt; a report with a failing test fails the command
// even when it exits 0.
//
// What a command prints comes from the agent's tree, so it is untrusted: every
// buffer is bounded (an excerpt keeps the beginning and the end of a text, a JUnit
// report at most Options.MaxOutputBytes, the test parser a fixed number of tests at
// once), names and excerpts are cut to the evidence bundle's bounds, and output that
// does not parse falls back to the exit status, never to an error.
package verify

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/harness"
	"github.com/bumperdev/bumper/internal/textcut"
)

// Formats of a TestRun: where its counts come from.
const (
	FormatGoTestJSON = "go-test-json"
	FormatJUnit      = "junit"
	FormatExitCode   = "exit-code"
)

// DefaultMaxOutputBytes is Options.MaxOutputBytes when it is zero.
const DefaultMaxOutputBytes = 8 << 20

// Options says how to run a round's commands.
type Options struct {
	// Env holds KEY=VALUE entries added to the commands' environment.
	Env []string
	// MaxOutputBytes bounds what is held in memory of one command's output for
	// parsing: a JUnit report longer than this is not read (the exit status counts),
	// and test2json output is kept for at most this much of tests at once (8 KiB
	// each). Zero means DefaultMaxOutputBytes.
	MaxOutputBytes int64
	// Stdout and Stderr, when set, get the commands' output as it comes (the live log),
	// each command after a line on Stderr saying which it is. They are written one at a
	// time, so they may be the same writer.
	Stdout, Stderr io.Writer
}

// Round is what one verification round found.
type Round struct {
	// Number is the verification round, from 1.
	Number int
	// Passed says every command exited 0 and no parsed test failed.
	Passed bool
	// Tests has one entry per command, in order.
	Tests []evidence.TestRun
	// Commands has one entry per command, in order, phase verification.
	Commands []evidence.Command
	// Feedback is Markdown for the agent's next round: the failures first (failing
	// tests with their output), then every command and how it ended; at most
	// MaxFeedbackBytes. Empty when the round passed.
	Feedback string
}

// Run runs a verification round: each command with `sh -c` in the repository, in
// order. A command that fails, or cannot start, is a failed command of the round;
// Run's error is for exec's (a VM or session that cannot run anything) or a context
// that ended, and for a command line that is empty (repoconfig refuses those).
func Run(ctx context.Context, exec harness.Exec, round int, commands []string, opts Options) (*Round, error) {
	if round < 1 {
		return nil, fmt.Errorf("verification round %d: rounds count from 1", round)
	}
	for i, c := range commands {
		if strings.TrimSpace(c) == "" {
			return nil, fmt.Errorf("verification command %d is empty", i+1)
		}
	}
	if opts.MaxOutputBytes <= 0 {
		opts.MaxOutputBytes = DefaultMaxOutputBytes
	}
	r := &Round{Number: round, Passed: true}
	results := make([]commandResult, 0, len(commands))
	for i, c := range commands {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("verification round %d stopped before command %d: %w", round, i+1, err)
		}
		if opts.Stderr != nil {
			fmt.Fprintf(opts.Stderr, "bumper: verification round %d, command %d of %d: %s\n", round, i+1, len(commands), oneLine(c, 200))
		}
		res, err := runCommand(ctx, exec, round, c, opts)
		if err != nil {
			return nil, fmt.Errorf("verification round %d, command %d: %w", round, i+1, err)
		}
		results = append(results, res)
		r.Tests = append(r.Tests, res.test)
		r.Commands = append(r.Commands, evidence.Command{
			Phase:      evidence.PhaseVerification,
			Command:    res.test.Command,
			ExitCode:   res.test.ExitCode,
			DurationMS: res.test.DurationMS,
		})
		if !res.passed() {
			r.Passed = false
		}
	}
	if !r.Passed {
		r.Feedback = feedback(round, results)
	}
	return r, nil
}

// commandResult is one command's outcome.
type commandResult struct {
	command string // as configured
	status  harness.ExitStatus
	test    evidence.TestRun
	// note says why a report was not used, when it was not.
	note string
}

func (c commandResult) passed() bool { return c.test.ExitCode == 0 && c.test.Failed == 0 }

// maxCommandBytes bounds a command line in the bundle (the schema's bound).
const maxCommandBytes = 4096

// commandFailureName bounds, in characters, the name of a failure that is a command's
// own: its command line on one line.
const commandFailureName = 200

// runCommand runs one command and reads its output.
func runCommand(ctx context.Context, exec harness.Exec, round int, command string, opts Options) (commandResult, error) {
	out := newCommandOutput(opts.MaxOutputBytes)
	stdout, stderr := out.streams(opts.Stdout, opts.Stderr)
	start := time.Now()
	st, err := exec(ctx, []string{"sh", "-c", command}, opts.Env, stdout, stderr)
	if err != nil {
		return commandResult{}, err
	}
	elapsed := time.Since(start)
	out.finish()

	res := commandResult{command: command, status: st}
	t := evidence.TestRun{
		Round:      round,
		Command:    textcut.Bytes(strings.ToValidUTF8(command, "\uFFFD"), maxCommandBytes),
		ExitCode:   st.ExitCode(),
		DurationMS: elapsed.Milliseconds(),
	}
	switch {
	case out.gotest.seen:
		p := out.gotest
		t.Format, t.Passed, t.Failed, t.Skipped, t.Failures = FormatGoTestJSON, p.passed, p.failed, p.skipped, p.failures
	case out.junit.over:
		res.note = fmt.Sprintf("its JUnit report was longer than %d bytes and was not read", opts.MaxOutputBytes)
	case out.junit.started:
		j, err := parseJUnit(out.junit.doc)
		if err != nil {
			res.note = err.Error()
			break
		}
		t.Format, t.Passed, t.Failed, t.Skipped, t.Failures = FormatJUnit, j.passed, j.failed, j.skipped, j.failures
	}
	if t.Format == "" {
		t.Format = FormatExitCode
		if t.ExitCode == 0 {
			t.Passed = 1
		}
	}
	if t.ExitCode != 0 && len(t.Failures) == 0 {
		// The command failed and its report (if any) names no failing test: the
		// command itself is the failure, its output the excerpt.
		t.Failed++
		text := out.combined.String()
		if res.note != "" {
			text += "\n[" + res.note + "]"
		}
		t.Failures = []evidence.Failure{newFailure(oneLine(command, commandFailureName), text+"\n[the command "+st.String()+"]")}
	}
	if t.Failures == nil {
		t.Failures = []evidence.Failure{}
	}
	res.test = t
	return res, nil
}

// newFailure is a failure as the bundle takes it: a non-empty name of at most maxName
// bytes and an excerpt of at most evidence.MaxExcerptBytes, both valid UTF-8.
func newFailure(name, excerpt string) evidence.Failure {
	name = cutName(strings.ToValidUTF8(name, "\uFFFD"))
	if strings.TrimSpace(name) == "" {
		name = "(unnamed)"
	}
	return evidence.Failure{Name: name, Excerpt: evidence.Excerpt(excerpt)}
}

// oneLine shows s on one line of at most n characters.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(strings.ToValidUTF8(s, "\uFFFD")), " ")
	return textcut.FitRunes(s, n, textcut.Ellipsis)
}
