package ghaction

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/sethvargo/go-githubactions"

	"github.com/bumperdev/bumper/internal/textcut"
)

// MaxSummaryBytes is GitHub's limit on a step's summary: past it the summary is not
// shown at all, so AddSummary cuts what would not fit.
const MaxSummaryBytes = 1 << 20

// Env is one `bumper run`'s view of the Actions environment and the helpers it reports
// through. Safe for concurrent use.
type Env struct {
	a      *githubactions.Action
	w      io.Writer
	getenv func(string) string

	mu        sync.Mutex
	groupOpen bool
}

// New returns the Env that writes workflow commands (or, outside Actions, plain lines)
// to w and reads the environment through getenv. nil w is os.Stdout, nil getenv
// os.Getenv.
func New(w io.Writer, getenv func(string) string) *Env {
	if w == nil {
		w = os.Stdout
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	return &Env{a: githubactions.New(githubactions.WithWriter(w), githubactions.WithGetenv(getenv)), w: w, getenv: getenv}
}

// Action is the go-githubactions Action underneath (ReadInputs and ReadContext take it).
func (e *Env) Action() *githubactions.Action { return e.a }

// InActions reports whether the run is under GitHub Actions (GITHUB_ACTIONS=true): only
// then are workflow commands (groups, annotations, masks) written as such.
func (e *Env) InActions() bool { return inActions(e.a) }

// Inputs is ReadInputs of this environment.
func (e *Env) Inputs() (Inputs, error) { return ReadInputs(e.a) }

// Context is ReadContext of this environment.
func (e *Env) Context() (Context, error) { return ReadContext(e.a) }

// Group starts a collapsed section of the log named for a phase of the run; a group
// still open is ended first (Actions does not nest them). Outside Actions it prints
// "==> name".
func (e *Env) Group(name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.groupOpen {
		e.command(e.a.EndGroup)
	}
	if e.InActions() {
		e.command(func() { e.a.Group(name) })
	} else {
		e.printf("==> %s\n", oneLine(name))
	}
	e.groupOpen = true
}

// EndGroup ends the open group, if any.
func (e *Env) EndGroup() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.groupOpen && e.InActions() {
		e.command(e.a.EndGroup)
	}
	e.groupOpen = false
}

// Errorf writes an error annotation (shown on the run's summary page); outside Actions,
// a line "error: …".
func (e *Env) Errorf(format string, args ...any) {
	e.annotate("error", e.a.Errorf, format, args...)
}

// Warningf writes a warning annotation; outside Actions, a line "warning: …".
func (e *Env) Warningf(format string, args ...any) {
	e.annotate("warning", e.a.Warningf, format, args...)
}

// Noticef writes a notice annotation; outside Actions, a line "notice: …".
func (e *Env) Noticef(format string, args ...any) {
	e.annotate("notice", e.a.Noticef, format, args...)
}

func (e *Env) annotate(kind string, issue func(string, ...any), format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	msg := fmt.Sprintf(format, args...)
	if e.InActions() {
		// go-githubactions escapes newlines, so a multi-line message stays one annotation.
		e.command(func() { issue("%s", msg) })
		return
	}
	e.printf("%s: %s\n", kind, msg)
}

// AddMask has the runner replace secret with *** in everything the job logs from now
// on: the installation token, the run token and the nonce, as soon as the run learns
// them. Each line of a multi-line secret is masked on its own, as GitHub needs. Outside
// Actions it does nothing, since writing the command would print the secret.
func (e *Env) AddMask(secret string) {
	if !e.InActions() {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, line := range strings.Split(strings.ReplaceAll(secret, "\r\n", "\n"), "\n") {
		if strings.TrimSpace(line) != "" {
			e.command(func() { e.a.AddMask(line) })
		}
	}
}

// StopCommands has the runner take no line of what follows for a workflow command until
// the returned resume is called: `::stop-commands::TOKEN`, then `::TOKEN::`, with a
// fresh random token the quoted text cannot guess, so it cannot resume the commands
// itself. For output Bumper quotes but did not write (the agent's, the repository's
// tests'); its commands meanwhile are not honoured either (a mask, a group). Outside
// Actions it writes nothing.
func (e *Env) StopCommands() (resume func()) {
	if !e.InActions() {
		return func() {}
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	token := "bumper-" + hex.EncodeToString(b)
	e.mu.Lock()
	defer e.mu.Unlock()
	_ = e.printf("::stop-commands::%s\n", token)
	return func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		_ = e.printf("\n::%s::\n", token)
	}
}

// Outputs are the action's outputs, set from `bumper run`'s step.
type Outputs struct {
	// PullRequest is the pull request's number, 0 when the run opened none.
	PullRequest int
	// EvidenceDigest is the evidence bundle's digest (sha256:…), "" when there is none.
	EvidenceDigest string
	// CostMicroUSD is the run's model cost as the firewall metered it.
	CostMicroUSD int64
	// Outcome is how the run ended (evidence.Outcome: success, failure, stopped, …).
	Outcome string
}

// SetOutputs sets all four outputs.
func (e *Env) SetOutputs(o Outputs) error {
	pr := ""
	if o.PullRequest > 0 {
		pr = fmt.Sprint(o.PullRequest)
	}
	return errors.Join(
		e.SetOutput(OutputPullRequest, pr),
		e.SetOutput(OutputEvidenceDigest, o.EvidenceDigest),
		e.SetOutput(OutputCostUSD, FormatUSD(o.CostMicroUSD)),
		e.SetOutput(OutputOutcome, o.Outcome),
	)
}

// SetOutput sets one step output through GITHUB_OUTPUT. Without GITHUB_OUTPUT it prints
// "name=value". Values are one line: a line break is refused, as it could end the file
// command's value early and set another output.
func (e *Env) SetOutput(name, value string) error {
	if name == "" || strings.ContainsAny(name, "=<\r\n") {
		return fmt.Errorf("output name %q is not a name", name)
	}
	if strings.ContainsAny(value, "\r\n") {
		return fmt.Errorf("output %s: the value has a line break; outputs are one line", name)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.getenv("GITHUB_OUTPUT") == "" {
		return e.printf("%s=%s\n", name, value)
	}
	return fileCommand(func() { e.a.SetOutput(name, value) })
}

// AddSummary appends Markdown to the job summary (GITHUB_STEP_SUMMARY). What would take
// the summary past MaxSummaryBytes is cut with a note, since GitHub shows none of a
// summary that is too large. Without GITHUB_STEP_SUMMARY it does nothing.
func (e *Env) AddSummary(markdown string) error {
	path := e.getenv("GITHUB_STEP_SUMMARY")
	if path == "" || markdown == "" {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var have int64
	if info, err := os.Stat(path); err == nil {
		have = info.Size()
	}
	const note = "\n\n*(summary cut here: GitHub shows at most 1 MiB of it)*\n"
	if room := MaxSummaryBytes - have - 1; int64(len(markdown)) > room {
		if room <= int64(len(note)) {
			return errors.New("the job summary is full (1 MiB); nothing more was added")
		}
		markdown = textcut.Bytes(markdown, int(room)-len(note)) + note
	}
	return fileCommand(func() { e.a.AddStepSummary(markdown) })
}

// FormatUSD writes micro-USD as dollars with at least two decimals: 1500000 → "1.50",
// 123456 → "0.123456".
func FormatUSD(micro int64) string {
	sign := ""
	if micro < 0 {
		sign, micro = "-", -micro
	}
	s := fmt.Sprintf("%d.%06d", micro/1e6, micro%1e6)
	for strings.HasSuffix(s, "0") && len(s)-strings.IndexByte(s, '.') > 3 {
		s = s[:len(s)-1]
	}
	return sign + s
}

// command issues a workflow command on stdout; go-githubactions panics when it cannot
// write, which a run must survive (a closed stdout is no reason to lose the run).
// Callers hold e.mu.
func (e *Env) command(f func()) {
	_ = fileCommand(f)
}

func (e *Env) printf(format string, args ...any) error {
	_, err := fmt.Fprintf(e.w, format, args...)
	return err
}

// fileCommand runs a go-githubactions call that panics on a write error and returns the
// error instead.
func fileCommand(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if rerr, ok := r.(error); ok {
				err = fmt.Errorf("failed to write a workflow command: %w", rerr)
			} else {
				err = fmt.Errorf("failed to write a workflow command: %v", r)
			}
		}
	}()
	f()
	return nil
}

func oneLine(s string) string { return strings.NewReplacer("\r", " ", "\n", " ").Replace(s) }
