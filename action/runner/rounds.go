package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/harness"
	"github.com/bumperdev/bumper/action/verify"
	"github.com/bumperdev/bumper/action/workspace"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/ghref"
	"github.com/bumperdev/bumper/internal/repoconfig"
	"github.com/bumperdev/bumper/sandbox"
)

// commitScript commits what the agent left uncommitted on the work branch, so that an
// agent that edits files without committing still hands its work back. The message
// comes through the environment, never through the shell's parser.
const commitScript = `set -e
cd ` + workspace.GuestRepo + `
git add -A
if ! git diff --cached --quiet; then
	echo "bumper: committing what the agent left uncommitted:"
	git status --short
	git commit -q --no-verify -m "$BUMPER_COMMIT_MESSAGE"
fi`

// conventions are appended to TASK.md: what the runner expects of the agent.
func conventions(stage string) []byte {
	if stage == wire.StageReview {
		return []byte(reviewConventions())
	}
	var b strings.Builder
	b.WriteString("\n---\n\n## How this run works\n\n")
	b.WriteString("- The repository is checked out at " + workspace.GuestRepo + " on the run's work branch. If it has an `AGENTS.md` or `CLAUDE.md`, follow it.\n")
	b.WriteString("- The network reaches only what the repository's allowlist names. There are no credentials in this machine.\n")
	if stage == wire.StagePlan {
		b.WriteString("- This is a plan run: do not change the code. Write the plan, in Markdown, to `/out/" + PlanFile + "`; a maintainer approves it before any change is made.\n")
		return []byte(b.String())
	}
	if stage == wire.StageFix {
		b.WriteString("- This is a fix round: the pull request's branch is checked out at its head. Make the failing checks above pass; the rest of the task is done.\n")
	}
	b.WriteString("- Commit your work on the current branch (uncommitted changes are committed for you at the end of your turn). Do not push: the runner pushes after verification.\n")
	b.WriteString("- Write your decision ledger to `" + evidence.DecisionsFile + "`: every judgment call you made where the issue was silent, with your confidence (schema: decisions-v1 in Bumper's repository). Reviewers read it first.\n")
	b.WriteString("- After your turn the repository's verification commands run; if they fail you get another turn with their output.\n")
	return []byte(b.String())
}

// maxToolNames bounds the tool names the evidence keeps (its schema allows 200);
// otherTools counts the calls of the others.
const (
	maxToolNames = 100
	otherTools   = "(other tools)"
)

// toolCounter counts one round's events into the evidence's harness section.
type toolCounter struct {
	h     *evidence.Harness
	named int // the round's tool calls counted by name
}

// event counts a tool call under its tool's name: a bounded number of names is kept,
// the calls of the rest are counted under otherTools.
func (c *toolCounter) event(e harness.Event) {
	if e.Kind != harness.EventToolCall || e.Tool == "" {
		return
	}
	name := e.Tool
	if _, seen := c.h.ToolCalls[name]; !seen && len(c.h.ToolCalls) >= maxToolNames-1 {
		name = otherTools
	}
	c.h.ToolCalls[name]++
	c.named++
}

// settle adds the round's totals. Events past harness.MaxEvents are counted but never
// delivered, and a call may name no tool: those calls are still calls, under the other
// tools, so a flood of events cannot hide them from the evidence.
func (c *toolCounter) settle(n harness.Counts) {
	c.h.Turns += n.Turns
	c.h.UnknownEvents += n.UnknownEvents
	if missed := n.ToolCalls - c.named; missed > 0 {
		c.h.ToolCalls[otherTools] += missed
	}
}

// rounds runs the agent, then verification, and gives failures back to the agent for at
// most bounds.verification_rounds rounds; then bundles the work into /out.
func (r *run) rounds(ctx context.Context) error {
	h, err := harness.New(r.harnessPolicy())
	if err != nil {
		return failWith(evidence.OutcomeError, "failed to set up the harness: %w", err)
	}
	verifyCmds := r.policy.Verification
	maxRounds := max(r.policy.Bounds.VerificationRounds, 1)
	feedback := ""
	for round := 1; ; round++ {
		if err := r.phase(ctx, evidence.PhaseAgent, round, func(ctx context.Context) (string, error) {
			return r.agentRound(ctx, h, round, feedback)
		}); err != nil {
			return err
		}
		if r.cfg.Stage == wire.StagePlan || len(verifyCmds) == 0 || r.policy.Bounds.VerificationRounds == 0 {
			break
		}
		if round == 1 {
			if err := r.progress(ctx, "verifying", ""); err != nil {
				return err
			}
		}
		var vr *verify.Round
		err := r.phase(ctx, evidence.PhaseVerification, round, func(ctx context.Context) (string, error) {
			var err error
			vr, err = r.verifyRound(ctx, round, verifyCmds)
			if err != nil {
				return "", err
			}
			return summarizeRound(vr), nil
		})
		if err != nil {
			return err
		}
		if vr.Passed {
			break
		}
		if round >= maxRounds {
			return failWith(evidence.OutcomeFailure, "verification still fails after %d round(s): %s", round, summarizeRound(vr))
		}
		feedback = vr.Feedback
	}
	return nil
}

// agentRound runs the harness once and commits what it left.
func (r *run) agentRound(ctx context.Context, h harness.Harness, round int, feedback string) (string, error) {
	logf, err := r.outFile(fmt.Sprintf(TranscriptPattern, round))
	if err != nil {
		return "", err
	}
	defer logf.Close()
	w := r.logTo(logf, fmt.Sprintf(TranscriptPattern, round))
	defer w.Close()
	if r.ev.Harness == nil {
		r.ev.Harness = &evidence.Harness{Name: h.Name(), ToolCalls: map[string]int{}}
		if h.Name() != repoconfig.HarnessCommand {
			r.ev.Harness.Version = r.harnessPolicy().Version
		}
	}
	counter := &toolCounter{h: r.ev.Harness}
	res, err := h.Run(ctx, r.exec, harness.Request{Round: round, Feedback: feedback, Env: r.agentEnv(), Stdout: w, Stderr: w, OnEvent: counter.event})
	if err != nil {
		return "", fmt.Errorf("failed to run the %s harness: %w", h.Name(), err)
	}
	// What the VM said of the agent's command besides its exit: the processes it left,
	// whether /out can come back.
	agent := r.last
	left := r.leftover(agent)
	counter.settle(res.Counts)
	r.ev.Commands = append(r.ev.Commands, evidence.Command{Phase: evidence.PhaseAgent, Command: h.Name() + " harness, round " + fmt.Sprint(round), ExitCode: res.Exit.Code})
	if res.SelfReportedMicroUSD != nil {
		total := *res.SelfReportedMicroUSD
		if prev := r.ev.Cost.SelfReportedMicroUSD; prev != nil {
			total += *prev
		}
		r.ev.Cost.SelfReportedMicroUSD = &total
	}
	if err := r.overBudget(); err != nil {
		return "", err
	}
	if !res.OK {
		return "", failWith(evidence.OutcomeFailure, "the agent failed in round %d: %s%s", round, res.Reason, also(left))
	}
	if agent.KillError != "" {
		return "", failWith(evidence.OutcomeFailure, "in round %d %s: nothing more can run in its VM", round, left)
	}
	if agent.OutError != "" {
		return "", failWith(evidence.OutcomeFailure, "the agent's /out cannot come back from round %d: %s", round, cut(agent.OutError, 300))
	}
	if r.cfg.Stage != wire.StagePlan {
		msg := commitMessage(r.task.Title, r.issue)
		if r.cfg.Stage == wire.StageFix {
			msg = commitMessage("Fix failing checks", r.issue)
		}
		env := []string{"BUMPER_COMMIT_MESSAGE=" + msg}
		tail := &tailWriter{max: 2048}
		out := io.MultiWriter(w, tail)
		st, err := r.exec(ctx, []string{"sh", "-c", commitScript}, env, out, out)
		if err != nil {
			return "", err
		}
		if !st.OK() {
			// The commit's own words say why (git's error, a shell that cannot fork);
			// what the agent left running before it is the usual cause.
			return "", failWith(evidence.OutcomeFailure, "failed to commit the agent's changes in round %d: the commit %s (%s)%s; see %s",
				round, st, lastLines(tail.String(), 3, 300), also(left), fmt.Sprintf(TranscriptPattern, round))
		}
		if r.head, err = r.readHead(ctx); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("%d turns, %d tool calls, exit %d%s", res.Turns, res.ToolCalls, res.Exit.Code, also(left)), nil
}

// leftover says what the agent's command left running: how many processes, whether
// that is the VM's process limit (a fork bomb), and whether the VM could end them; ""
// when it left nothing.
func (r *run) leftover(agent sandbox.Result) string {
	if agent.Leftover == 0 && agent.KillError == "" {
		return ""
	}
	limit := int(r.cfg.VM.MaxProcs)
	if limit == 0 {
		limit = sandbox.DefaultMaxProcs
	}
	note := fmt.Sprintf("the agent left %d processes running", agent.Leftover)
	// A fork bomb fills the limit but for the few processes that were its own way there.
	if agent.Leftover*10 >= limit*9 {
		note += fmt.Sprintf(", at the VM's process limit of %d per command", limit)
	}
	if agent.KillError != "" {
		return note + fmt.Sprintf(", and the VM could not end them all (%s)", cut(agent.KillError, 200))
	}
	return note + "; the VM ended them"
}

// also is "; " and s, or "" for no s.
func also(s string) string {
	if s == "" {
		return ""
	}
	return "; " + s
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	buf []byte
	max int
	cut bool
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf, t.cut = t.buf[len(t.buf)-t.max:], true
	}
	return len(p), nil
}

// String is what it kept, from the first whole line on.
func (t *tailWriter) String() string {
	s := string(t.buf)
	if _, rest, ok := strings.Cut(s, "\n"); ok && t.cut {
		return rest
	}
	return s
}

// lastLines is the last n non-empty lines of s on one line, valid UTF-8, within limit
// bytes; "no output" when there are none.
func lastLines(s string, n, limit int) string {
	var lines []string
	for _, l := range strings.Split(strings.ToValidUTF8(s, "\uFFFD"), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return "no output"
	}
	lines = lines[max(len(lines)-n, 0):]
	text := strings.Join(lines, " / ")
	if len(text) > limit {
		// The end holds the error: keep it, and say the start is gone.
		text = ellipsis + text[len(text)-limit+len(ellipsis):]
		for len(text) > len(ellipsis) && !utf8.RuneStart(text[len(ellipsis)]) {
			text = ellipsis + text[len(ellipsis)+1:]
		}
	}
	return text
}

// headScript prints where HEAD points and the commit it names. It runs as a command of
// its own, when no process of the agent is left (the guest kills them after each
// command), and git rev-parse and symbolic-ref run no hook, filter or monitor the
// repository's configuration could name: its output is the guest's truth.
//
// First it refuses a repository that hides files from git, so that the working tree
// verification runs on is the commit's: index entries marked assume-unchanged or
// skip-worktree (git add -A passes them by), excludes or attributes outside the
// committed tree, a worktree or excludes file set in the configuration, a .git that is
// not the repository's own directory.
const headScript = `set -e
if [ ! -d .git ] || [ -L .git ]; then echo "bumper-hidden: .git is not a directory"; exit 0; fi
xdg=${XDG_CONFIG_HOME:-$HOME/.config}
for f in .git/info/exclude .git/info/attributes "$xdg/git/ignore" "$xdg/git/attributes"; do
	if [ -s "$f" ]; then echo "bumper-hidden: $f"; exit 0; fi
done
for k in core.worktree core.excludesFile core.attributesFile; do
	if git config --get "$k" >/dev/null; then echo "bumper-hidden: $k is set"; exit 0; fi
done
hidden=$(git ls-files -v | grep -c '^[a-zS]' || true)
if [ "$hidden" != 0 ]; then echo "bumper-hidden: $hidden index entries marked assume-unchanged or skip-worktree"; exit 0; fi
git symbolic-ref -q HEAD || true
git rev-parse --verify -q HEAD`

// readHead pins the commit verification is about to judge: the work branch's head,
// with HEAD on the work branch (so the working tree verification runs on is that
// commit's). The push later must be exactly this commit.
func (r *run) readHead(ctx context.Context) (string, error) {
	var out, errOut strings.Builder
	st, err := r.exec(ctx, []string{"sh", "-c", headScript}, nil, &out, &errOut)
	if err != nil {
		return "", err
	}
	if st.Error != "" || st.Signal != "" {
		return "", failWith(evidence.OutcomeFailure, "failed to read the work branch's head: the command %s", st)
	}
	if hidden, ok := strings.CutPrefix(strings.TrimSpace(out.String()), "bumper-hidden: "); ok {
		return "", failWith(evidence.OutcomeFailure, "the agent hid files from git (%s): verification would not run on the commit that is pushed", cut(hidden, 200))
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	branch := "refs/heads/" + r.ws.Branch
	if st.Code != 0 || len(lines) != 2 || lines[0] != branch || !workspace.IsCommitID(lines[1]) {
		return "", failWith(evidence.OutcomeFailure, "the agent left the work branch: HEAD must be on %s with a commit (found %q, exit %d)", branch, cut(out.String(), 200), st.Code)
	}
	return lines[1], nil
}

// verifyRound runs the repository's verification commands once.
func (r *run) verifyRound(ctx context.Context, round int, cmds []string) (*verify.Round, error) {
	logf, err := r.outFile(fmt.Sprintf(VerificationPattern, round))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	w := r.logTo(logf, fmt.Sprintf(VerificationPattern, round))
	defer w.Close()
	vr, err := verify.Run(ctx, r.exec, round, cmds, verify.Options{Stdout: w, Stderr: w})
	if err != nil {
		return nil, err
	}
	r.ev.Tests = append(r.ev.Tests, vr.Tests...)
	r.ev.Commands = append(r.ev.Commands, vr.Commands...)
	return vr, nil
}

// summarizeRound is one line about a verification round.
func summarizeRound(vr *verify.Round) string {
	var passed, failed, cmdsFailed int
	for _, t := range vr.Tests {
		passed += t.Passed
		failed += t.Failed
		if t.ExitCode != 0 {
			cmdsFailed++
		}
	}
	return fmt.Sprintf("%d of %d commands failed; %d tests passed, %d failed", cmdsFailed, len(vr.Tests), passed, failed)
}

// collectOut copies the guest's /out to the workspace's out directory, and what the
// artifact keeps of it to Out.
func (r *run) collectOut(ctx context.Context) error {
	if r.last.OutError != "" {
		// The guest wrote an empty archive instead: reading it would find no bundle, no
		// plan and no ledger, and say the agent did nothing.
		return failWith(evidence.OutcomeFailure, "the VM's /out did not come back: %s", cut(r.last.OutError, 300))
	}
	rep, err := r.vm.CollectOut(r.ws.OutDir)
	if err != nil {
		return fmt.Errorf("failed to read the VM's /out: %w", err)
	}
	r.collected = true
	if len(rep.Skipped) > 0 {
		zerolog.Ctx(ctx).Warn().Strs(logKeyReason, rep.Skipped).Msg("entries of the VM's /out refused")
	}
	data, err := readSmall(filepath.Join(r.ws.OutDir, filepath.Base(evidence.DecisionsFile)), 1<<20)
	present := err == nil
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		r.ev.Ledger = evidence.Ledger{Status: evidence.LedgerInvalid, Error: err.Error()}
		return nil
	}
	r.ev.Ledger = evidence.NewLedger(data, present)
	if present {
		_ = os.WriteFile(filepath.Join(r.cfg.Out, DecisionsFile), data, 0o640)
	}
	return nil
}

// readSmall reads a regular file of at most limit bytes, never through a link: what the
// guest left is untrusted.
func readSmall(path string, limit int64) ([]byte, error) {
	info, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", filepath.Base(path))
	}
	if info.Size() > limit {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d allowed", filepath.Base(path), info.Size(), limit)
	}
	return os.ReadFile(path)
}

// outFile creates a file in Out.
func (r *run) outFile(name string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(r.cfg.Out, name), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o640)
	if err != nil {
		return nil, fmt.Errorf("failed to create %s: %w", name, err)
	}
	return f, nil
}

// limitWriter keeps the first left bytes and drops the rest, never failing the writer
// it is tied to (the live log goes on).
type limitWriter struct {
	w    io.Writer
	left int64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.left <= 0 {
		return len(p), nil
	}
	q := p
	if int64(len(q)) > l.left {
		q = q[:l.left]
	}
	n, err := l.w.Write(q)
	l.left -= int64(n)
	if err != nil {
		l.left = 0
	}
	return len(p), nil
}

// commitMessage is the message of the commit the runner makes for the agent: the
// issue's title on one line, neutralized (its author wrote it: "Fixes #7: crash" must
// not close #7 when the commit lands), and the issue by number, which names it without
// a reference. The host rewrites every commit's message again before the push.
func commitMessage(title string, issue int) string {
	title = ghref.Neutralize(strings.Join(strings.Fields(title), " "))
	return cut(fmt.Sprintf("%s (issue %d)", title, issue), 200)
}
