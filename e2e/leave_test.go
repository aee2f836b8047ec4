package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	gogithub "github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/ghemu"
)

// TestWhatTheAgentLeaves: an agent that makes the right change but leaves the runner
// what it can. One prints 10 MiB with workflow commands in it, writes a GitHub token in
// its decision ledger and leaves a fork bomb at the VM's process limit: its pull request
// opens with the token redacted everywhere the evidence goes (the pull request,
// evidence.json, evidence.md), the job log holds at most the run's share of its output
// and says where the rest is, its commands stay text, and the evidence says what it left
// running. Another leaves more in /out than the VM returns: the run fails saying so, not
// that the agent changed nothing.
func TestWhatTheAgentLeaves(t *testing.T) {
	w := newWorld(t)
	const token = "ghp_aB3dEaB3dEaB3dEaB3dEaB3dEaB3dEaB3dE"
	t.Run("output, a token and a fork bomb", func(t *testing.T) {
		r := w.runIssue("Count to 4", "scenario: leave", "success")
		data, err := os.ReadFile(filepath.Join(r.out, "evidence.md"))
		if err != nil {
			t.Fatal(err)
		}
		prs, _, err := w.user(ghemu.DefaultMaintainer).PullRequests.List(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, &gogithub.PullRequestListOptions{State: "all"})
		if err != nil || len(prs) != 1 {
			t.Fatalf("%d pull requests (%v)", len(prs), err)
		}
		raw, _ := os.ReadFile(filepath.Join(r.out, "evidence.json"))
		for name, text := range map[string]string{"evidence.json": string(raw), "evidence.md": string(data), "the pull request": prs[0].GetBody()} {
			if strings.Contains(text, token) {
				t.Errorf("%s holds the agent's token", name)
			}
		}
		if d := r.ev.Ledger.Decisions; len(d) != 1 || !strings.Contains(d[0].Choice, "[redacted GitHub token]") {
			t.Errorf("the ledger %+v does not show the token redacted", r.ev.Ledger)
		}
		var detail string
		for _, p := range r.ev.Phases {
			if p.Name == evidence.PhaseAgent {
				detail = p.Detail
			}
		}
		if !strings.Contains(detail, "at the VM's process limit of 512 per command; the VM ended them") {
			t.Errorf("the agent phase says %q, not what the agent left running", detail)
		}
		if len(r.log) > 9<<20 || !strings.Contains(r.log, "[bumper: the job log shows at most 8 MiB of what runs in the VM; the rest of this output is in agent-round-1.log") {
			t.Errorf("the job log is %d bytes and does not say where the rest of the agent's output is", len(r.log))
		}
		if info, err := os.Stat(filepath.Join(r.out, "agent-round-1.log")); err != nil || info.Size() < 10<<20 {
			t.Errorf("the transcript: %v, %v; want all of the agent's output", info, err)
		}
		if strings.Contains(r.log, "##[group]publish") || strings.Contains(r.log, "##[error]everything passed") || !strings.Contains(r.log, "::group::publish") {
			t.Error("the agent's workflow commands became the job's own in its log")
		}
	})
	t.Run("an /out over its cap", func(t *testing.T) {
		r := w.runIssue("Count to 4, with everything", "scenario: bigout", "failure")
		if r.ev.Outcome != evidence.OutcomeFailure || !strings.Contains(r.ev.OutcomeReason, "/out") ||
			!strings.Contains(r.ev.OutcomeReason, "more than the 256 MiB the VM may return") || strings.Contains(r.ev.OutcomeReason, "changed nothing") {
			t.Fatalf("outcome %s: %s", r.ev.Outcome, r.ev.OutcomeReason)
		}
	})
}
