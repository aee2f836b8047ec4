package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/workspace"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/repoconfig"
	"github.com/bumperdev/bumper/internal/textcut"
)

// The environment of the command harness's program (docs/harnesses.md).
const (
	EnvTask         = "BUMPER_TASK"          // the task as Markdown (TASK.md)
	EnvTaskJSON     = "BUMPER_TASK_JSON"     // the task as JSON (task.json)
	EnvTaskDir      = "BUMPER_TASK_DIR"      // the directory of the task files
	EnvRepo         = "BUMPER_REPO"          // the repository's checkout, the working directory
	EnvOut          = "BUMPER_OUT"           // what comes back to the host at the end
	EnvRound        = "BUMPER_ROUND"         // the agent round, from 1
	EnvDecisions    = "BUMPER_DECISIONS"     // where the decision ledger goes
	EnvEvents       = "BUMPER_EVENTS"        // where events may be appended (EventsFile)
	EnvFeedbackFile = "BUMPER_FEEDBACK_FILE" // rounds ≥ 2: verification's feedback
	// envFeedback carries the feedback to the wrapper, which writes it to the file and
	// unsets it before the program starts.
	envFeedback = "BUMPER_FEEDBACK"
)

// MaxFeedbackBytes bounds the feedback file: an environment string can be at most
// 128 KiB on Linux, and the agent reads it whole.
const MaxFeedbackBytes = 64 << 10

// WrapperExitCode is the exit status of the command harness's wrapper when it could
// not write the feedback file; its message is on stderr.
const WrapperExitCode = 125

// wrapperName is $0 of the wrapper script, as error messages show it.
const wrapperName = "bumper-command-harness"

// wrapper is the script the command harness runs with `sh -c`: it writes the feedback
// from the environment to its file (rounds ≥ 2), removes it from the environment, and
// runs the program ($1) with `sh -c`. The feedback is only ever expanded inside double
// quotes as printf's argument, so nothing in it is run; the file is removed first and
// created anew (set -C), so a link the agent left in its place is not written through.
const wrapper = `if [ -n "${` + EnvFeedbackFile + `:-}" ]; then
	rm -f -- "$` + EnvFeedbackFile + `" &&
	(set -C && printf '%s' "$` + envFeedback + `" > "$` + EnvFeedbackFile + `") || {
		printf '%s: could not write the feedback file %s\n' "$0" "$` + EnvFeedbackFile + `" >&2
		exit 125
	}
fi
unset ` + envFeedback + `
exec sh -c "$1"
`

// Command is the command harness: a repository's own program (harness.command in
// .github/bumper.yml, a shell command line) run with `sh -c` in the repository. It
// reads the task from files named in its environment, may report events on stdout
// (EventPrefix) or in EventsFile, and succeeds when it exits with status 0. While it
// runs, each writer's steer is placed as a file in its steering directory
// ($BUMPER_STEER_DIR, see steerFile), which it reads if it wants.
type Command struct {
	command string
}

func newCommand(command string) (*Command, error) {
	if strings.TrimSpace(command) == "" {
		return nil, fmt.Errorf("the command harness needs a program: set harness.command in %s", repoconfig.Path)
	}
	if strings.ContainsRune(command, 0) {
		return nil, fmt.Errorf("harness.command holds a NUL byte, which no command line can carry")
	}
	return &Command{command: command}, nil
}

// Name is "command".
func (c *Command) Name() string { return repoconfig.HarnessCommand }

// argv is the command line the harness runs in the VM.
func (c *Command) argv() []string { return []string{"sh", "-c", wrapper, wrapperName, c.command} }

// env is the runner's environment for a round with the harness's variables after it.
func (c *Command) env(req Request) []string {
	env := append([]string(nil), req.Env...)
	env = append(env,
		EnvTask+"="+workspace.GuestTask+"/"+wire.TaskMarkdown,
		EnvTaskJSON+"="+workspace.GuestTask+"/"+wire.TaskJSON,
		EnvTaskDir+"="+workspace.GuestTask,
		EnvRepo+"="+workspace.GuestRepo,
		EnvOut+"="+workspace.GuestOut,
		EnvRound+"="+strconv.Itoa(req.Round),
		EnvDecisions+"="+evidence.DecisionsFile,
		EnvEvents+"="+EventsFile,
	)
	if req.Round >= 2 {
		env = append(env,
			EnvFeedbackFile+"="+feedbackFile(req.Round),
			envFeedback+"="+boundFeedback(req.Feedback),
		)
	} else {
		// Set to nothing, so a runner's variable of that name cannot make round 1's
		// wrapper write a file.
		env = append(env, EnvFeedbackFile+"=", envFeedback+"=")
	}
	return env
}

// feedbackFile is where round's feedback is written in the VM.
func feedbackFile(round int) string {
	return fmt.Sprintf("%s/feedback-%d.md", workspace.GuestTask, round)
}

// boundFeedback is feedback as the wrapper can carry it: valid UTF-8 without NUL
// bytes (which no environment string holds; shown as U+FFFD), at most
// MaxFeedbackBytes, cut on a character boundary with a note saying so.
func boundFeedback(feedback string) string {
	s := strings.ToValidUTF8(feedback, "\uFFFD")
	s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	if len(s) <= MaxFeedbackBytes {
		return s
	}
	note := fmt.Sprintf("\n\n[Bumper cut this feedback: it was %d bytes; the first %d are above.]\n", len(s), MaxFeedbackBytes)
	kept := textcut.Bytes(s, MaxFeedbackBytes-len(note))
	note = fmt.Sprintf("\n\n[Bumper cut this feedback: it was %d bytes; the first %d are above.]\n", len(s), len(kept))
	return kept + note
}

// Run runs the program for one round.
func (c *Command) Run(ctx context.Context, exec Exec, req Request) (*Result, error) {
	if req.Round < 1 {
		return nil, fmt.Errorf("round %d: rounds count from 1", req.Round)
	}
	stdout, stderr := orDiscard(req.Stdout), orDiscard(req.Stderr)
	sink := &eventSink{round: req.Round, onEvent: req.OnEvent}
	events := newStdoutEvents(stdout, sink)
	steering := &steeringFiles{steers: req.Steers, reports: &steerReports{fn: req.OnSteer}, files: map[string]wire.Steer{}}
	st, err := exec(ctx, c.argv(), c.env(req), events, stderr, Input{Steering: true, Ready: steering.ready, Placed: steering.placed})
	steering.finish()
	if err != nil {
		return nil, fmt.Errorf("failed to run the command harness (round %d): %w", req.Round, err)
	}
	events.flush()
	res := &Result{Command: c.command, Exit: st, OK: st.OK(), Counts: sink.counts}
	switch {
	case res.OK:
	case req.Round >= 2 && st.Code == WrapperExitCode && st.Signal == "" && !st.TimedOut && st.Error == "":
		res.Reason = fmt.Sprintf("the program exited with status %d (also the status of the harness's wrapper when it cannot write %s; see the transcript)", st.Code, feedbackFile(req.Round))
	default:
		res.Reason = "the program " + st.String()
	}
	return res, nil
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// steeringFiles places each steer of a round in the program's steering directory.
type steeringFiles struct {
	steers  <-chan wire.Steer
	reports *steerReports

	mu    sync.Mutex
	feed  Feed
	loop  *steerLoop
	seq   int
	ended bool
	// files are the steers placed and not yet answered for, by file name.
	files map[string]wire.Steer
}

// ready starts taking steers; Exec calls it before the program runs.
func (f *steeringFiles) ready(feed Feed) {
	f.mu.Lock()
	f.feed = feed
	f.mu.Unlock()
	f.loop = startSteers(f.steers, f.give)
}

func (f *steeringFiles) give(s wire.Steer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended {
		f.reports.notDelivered(s, NoteFinished)
		return
	}
	f.seq++
	name, data := steerFile(f.seq, s)
	f.files[name] = s
	if err := f.feed.Place(name, data); err != nil {
		delete(f.files, name)
		f.reports.notDelivered(s, "failed to place it in the steering directory: "+err.Error())
	}
}

// placed is the VM's word on a file: in the directory (the program may read it from
// now on), or not.
func (f *steeringFiles) placed(name string, at time.Time, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.files[name]
	if !ok {
		return
	}
	delete(f.files, name)
	switch {
	case err == nil:
		f.reports.delivered(s, at)
	case errors.Is(err, ErrCommandEnded):
		f.reports.notDelivered(s, NoteFinished)
	default:
		f.reports.notDelivered(s, "the VM did not place it: "+err.Error())
	}
}

// finish stops taking steers once the program has ended; Exec told placed about every
// file it accepted.
func (f *steeringFiles) finish() {
	f.loop.stop()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ended = true
	for _, name := range slices.Sorted(maps.Keys(f.files)) {
		f.reports.notDelivered(f.files[name], NoteFinished)
	}
	f.files = nil
}
