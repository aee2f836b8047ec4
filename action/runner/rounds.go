package runner

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/bumperdev/bumper/action/credentials"

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
// agent that edits files without committing still hands its work back; a merge it left
// in progress (an update run's) is committed even when it keeps the branch's tree. The
// message comes through the environment, never through the shell's parser.
const commitScript = `set -e
cd ` + workspace.GuestRepo + `
git add -A
if ! git diff --cached --quiet || git rev-parse -q --verify MERGE_HEAD >/dev/null; then
	echo "bumper: committing what the agent left uncommitted:"
	git status --short
	git commit -q --no-verify -m "$BUMPER_COMMIT_MESSAGE"
fi`

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
// most bounds.verification_rounds rounds. It returns the work branch's head as the last
// round left it: what verification judged, and the only commit the run may push ("" for
// a plan run, which commits nothing).
func (r *run) rounds(ctx context.Context, vm *guest) (string, error) {
	h, err := harness.New(r.harnessPolicy())
	if err != nil {
		return "", failWith(evidence.OutcomeError, "failed to set up the harness: %w", err)
	}
	policy := r.grant.policy
	verifyCmds := policy.Verification
	maxRounds := max(policy.Bounds.VerificationRounds, 1)
	feedback, head := "", ""
	// The steers serve kept for the run are in the task the first round reads.
	r.link.steers.fromTask(r.grant.task.Steers)
	for round := 1; ; round++ {
		if err := r.rec.phase(ctx, evidence.PhaseAgent, round, func(ctx context.Context) (detail string, err error) {
			detail, head, err = r.agentRound(ctx, vm, h, round, feedback)
			return detail, err
		}); err != nil {
			return "", err
		}
		if r.cfg.Stage == wire.StagePlan || len(verifyCmds) == 0 || policy.Bounds.VerificationRounds == 0 {
			break
		}
		if round == 1 {
			if err := r.link.progress(ctx, "verifying", "", 0, ""); err != nil {
				return "", err
			}
		}
		var vr *verify.Round
		err := r.rec.phase(ctx, evidence.PhaseVerification, round, func(ctx context.Context) (string, error) {
			var err error
			vr, err = r.verifyRound(ctx, vm, round, verifyCmds)
			if err != nil {
				return "", err
			}
			return summarizeRound(vr), nil
		})
		if err != nil {
			return "", err
		}
		if vr.Passed {
			break
		}
		if round >= maxRounds {
			return "", failWith(evidence.OutcomeFailure, "verification still fails after %d round(s): %s", round, summarizeRound(vr))
		}
		feedback = vr.Feedback
	}
	return head, nil
}

// agentRound runs the harness once and commits what it left; it returns the round's
// detail and the head it committed (none in a plan run).
func (r *run) agentRound(ctx context.Context, vm *guest, h harness.Harness, round int, feedback string) (detail, head string, err error) {
	logf, err := r.rec.outFile(fmt.Sprintf(TranscriptPattern, round))
	if err != nil {
		return "", "", err
	}
	defer logf.Close()
	w := r.rec.logTo(logf, fmt.Sprintf(TranscriptPattern, round))
	defer w.Close()
	ev := r.rec.ev
	if ev.Harness == nil {
		ev.Harness = &evidence.Harness{Name: h.Name(), ToolCalls: map[string]int{}}
		if h.Name() != repoconfig.HarnessCommand {
			ev.Harness.Version = r.harnessPolicy().Version
		}
	}
	counter := &toolCounter{h: ev.Harness}
	steers := r.link.steers.startRound(h.Name())
	res, err := h.Run(ctx, vm.exec, harness.Request{Round: round, Feedback: feedback, Env: r.agentEnv(), Stdout: w, Stderr: w, OnEvent: counter.event,
		Steers: steers, OnSteer: r.link.steers.report})
	r.link.steers.endRound()
	if err != nil {
		return "", "", fmt.Errorf("failed to run the %s harness: %w", h.Name(), err)
	}
	// What the VM said of the agent's command besides its exit: the processes it left,
	// whether /out can come back.
	agent := vm.last
	left := leftover(agent, r.cfg.VM.MaxProcs)
	counter.settle(res.Counts)
	ev.Commands = append(ev.Commands, evidence.Command{Phase: evidence.PhaseAgent, Command: h.Name() + " harness, round " + fmt.Sprint(round), ExitCode: res.Exit.Code})
	if res.SelfReportedMicroUSD != nil {
		total := *res.SelfReportedMicroUSD
		if prev := ev.Cost.SelfReportedMicroUSD; prev != nil {
			total += *prev
		}
		ev.Cost.SelfReportedMicroUSD = &total
	}
	if err := vm.s.overBudget(); err != nil {
		return "", "", err
	}
	if !res.OK {
		return "", "", failWith(evidence.OutcomeFailure, "the agent failed in round %d: %s%s", round, res.Reason, also(left))
	}
	if agent.KillError != "" {
		return "", "", failWith(evidence.OutcomeFailure, "in round %d %s: nothing more can run in its VM", round, left)
	}
	if agent.OutError != "" {
		return "", "", failWith(evidence.OutcomeFailure, "the agent's /out cannot come back from round %d: %s", round, cut(agent.OutError, 300))
	}
	if r.cfg.Stage != wire.StagePlan {
		if head, err = r.commit(ctx, vm, w, round, left); err != nil {
			return "", "", err
		}
	}
	return fmt.Sprintf("%d turns, %d tool calls, exit %d%s", res.Turns, res.ToolCalls, res.Exit.Code, also(left)), head, nil
}

// commit commits what the agent left uncommitted in round (its transcript w) and pins
// the work branch's head (readHead); left is what the agent left running.
func (r *run) commit(ctx context.Context, vm *guest, w io.Writer, round int, left string) (string, error) {
	issue := r.cfg.WorkItem.Issue
	msg := commitMessage(r.grant.task.Title, issue)
	switch r.cfg.Stage {
	case wire.StageFix:
		msg = commitMessage("Fix failing checks", issue)
	case wire.StageRevise:
		msg = commitMessage(fmt.Sprintf("Answer review round %d", r.grant.task.Round), issue)
	case wire.StageUpdate:
		// A merge the agent left in progress is committed with it.
		msg = commitMessage(fmt.Sprintf("Merge the base branch's head %.12s", r.grant.UpdateTo), issue)
	}
	env := []string{"BUMPER_COMMIT_MESSAGE=" + msg}
	tail := &tailWriter{max: 2048}
	out := io.MultiWriter(w, tail)
	st, err := vm.exec(ctx, []string{"sh", "-c", commitScript}, env, out, out)
	if err != nil {
		return "", err
	}
	if !st.OK() {
		// The commit's own words say why (git's error, a shell that cannot fork);
		// what the agent left running before it is the usual cause.
		return "", failWith(evidence.OutcomeFailure, "failed to commit the agent's changes in round %d: the commit %s (%s)%s; see %s",
			round, st, lastLines(tail.String(), 3, 300), also(left), fmt.Sprintf(TranscriptPattern, round))
	}
	return readHead(ctx, vm)
}

// leftover says what the agent's command left running: how many processes, whether
// that is the VM's process limit (a fork bomb), and whether the VM could end them; ""
// when it left nothing.
func leftover(agent sandbox.Result, maxProcs uint64) string {
	if agent.Leftover == 0 && agent.KillError == "" {
		return ""
	}
	limit := int(maxProcs)
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

// verifyRound runs the repository's verification commands once.
func (r *run) verifyRound(ctx context.Context, vm *guest, round int, cmds []string) (*verify.Round, error) {
	logf, err := r.rec.outFile(fmt.Sprintf(VerificationPattern, round))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	w := r.rec.logTo(logf, fmt.Sprintf(VerificationPattern, round))
	defer w.Close()
	vr, err := verify.Run(ctx, vm.exec, round, cmds, verify.Options{Stdout: w, Stderr: w,
		Env: append(credentials.GuestEnv(r.grant.creds), dependencyEnv(r.cfg.ServerURL, r.grant.Dependencies)...)})
	if err != nil {
		return nil, err
	}
	r.rec.ev.Tests = append(r.rec.ev.Tests, vr.Tests...)
	r.rec.ev.Commands = append(r.rec.ev.Commands, vr.Commands...)
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

// commitMessage is the message of the commit the runner makes for the agent: the
// issue's title on one line, neutralized (its author wrote it: "Fixes #7: crash" must
// not close #7 when the commit lands), and the issue by number, which names it without
// a reference. The host rewrites every commit's message again before the push.
func commitMessage(title string, issue int) string {
	title = ghref.Neutralize(strings.Join(strings.Fields(title), " "))
	return cut(fmt.Sprintf("%s (issue %d)", title, issue), 200)
}
