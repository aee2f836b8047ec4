package harness

import (
	"fmt"
	"strings"

	"github.com/bumperdev/bumper/action/workspace"
	"github.com/bumperdev/bumper/app/wire"
)

// The markers around verification's report in a later round's prompt.
const (
	feedbackStart = "--- verification report ---"
	feedbackEnd   = "--- end of verification report ---"
)

// agentPrompt is the prompt a CLI harness gives the agent for a round. The task stays
// in its file (the runner wrote it there with its conventions, and it may be long);
// the prompt names it. A later round's feedback goes in the prompt itself (claude-code
// takes it as its input's first message, codex as its last argument). The feedback is
// bounded as the command harness bounds it (valid UTF-8, no NUL, at most
// MaxFeedbackBytes), so the prompt stays far below Linux's 128 KiB for one argument.
func agentPrompt(req Request) string {
	var b strings.Builder
	fmt.Fprintf(&b, "You are working unattended, in a sandbox, on a task from a GitHub issue. "+
		"The task is in %s/%s (the same as JSON in %s/%s): read it first, then do it, following its section \"How this run works\". "+
		"The repository is checked out in %s, your working directory. "+
		"Nobody can answer questions during this run: where the task leaves something open, decide, record the decision in the decision ledger the task describes, and carry on.",
		workspace.GuestTask, wire.TaskMarkdown, workspace.GuestTask, wire.TaskJSON, workspace.GuestRepo)
	if req.Round < 2 {
		return b.String()
	}
	feedback := boundFeedback(req.Feedback)
	if strings.TrimSpace(feedback) == "" {
		feedback = "(verification gave no details)"
	}
	fmt.Fprintf(&b, "\n\nThis is round %d. Your work of the earlier rounds is committed on the current branch (see `git log`). "+
		"After the last round the repository's verification failed; its report is below, between the markers. "+
		"Fix what it reports and keep the rest of the task done.\n\n%s\n%s\n%s\n",
		req.Round, feedbackStart, feedback, feedbackEnd)
	return b.String()
}

// withSteers is a prompt with the writers' steers that came before the round started,
// each as steerMessage writes it, as far as they fit in maxPromptSteers bytes: it
// returns the prompt and the steers it holds.
func withSteers(prompt string, steers []wire.Steer) (string, []wire.Steer, []wire.Steer) {
	if len(steers) == 0 {
		return prompt, nil, nil
	}
	var b strings.Builder
	var in, out []wire.Steer
	for _, s := range steers {
		m := steerMessage(s)
		if b.Len()+len(m)+1 > maxPromptSteers {
			out = append(out, s)
			continue
		}
		b.WriteString("\n" + m)
		in = append(in, s)
	}
	if len(in) == 0 {
		return prompt, nil, out
	}
	return prompt + "\n\nWriters sent these steers for this round before it started, oldest first.\n" + b.String(), in, out
}

// promptSummary stands for the prompt in a displayed command line.
func promptSummary(req Request) string {
	return fmt.Sprintf("<prompt of round %d>", req.Round)
}

// envValue is the last value of key in env, as a program given env sees it.
func envValue(env []string, key string) string {
	v := ""
	for _, e := range env {
		if k, val, ok := strings.Cut(e, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// requireEnv checks that the runner gave the variables a CLI cannot work without (the
// model gateway and the sentinel key): without them the CLI would go for the public
// API, which the firewall refuses, and fail in a way that hides the cause.
func requireEnv(harness string, env []string, keys ...string) error {
	var missing []string
	for _, k := range keys {
		if strings.TrimSpace(envValue(env, k)) == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the %s harness needs %s from the runner (the firewall's model gateway and the sentinel key); the runner gave none",
			harness, strings.Join(missing, " and "))
	}
	return nil
}
