package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gogithub "github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/harness"
	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/internal/scriptedmodel"
)

// keySearch is a shell command, run by the agent's Bash tool in the VM, that counts the
// places holding the real model key: every process's environment and every file of
// the workspace and the agent's home. The key is written in two pieces, so the command
// line never holds it whole and the model's reply carries no key into the VM.
func keySearch() string {
	half := len(modelKey) / 2
	return `k='` + modelKey[:half] + `''` + modelKey[half:] + `'; ` +
		`echo "real-key-hits: $( (cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n'; grep -r -h -F "$k" /workspace /home/agent 2>/dev/null) | grep -c -F "$k")"`
}

// agentPolicy is the seed repository's policy with a real agent CLI as its harness
// (claude-code or codex, at the release this build was checked with), and the run's
// model budget in dollars ("": none).
func agentPolicy(name, budget string) string {
	cli, _ := harness.DefaultCLI(name)
	p := "version: 1\n" +
		"harness:\n  name: " + name + "\n  version: " + cli.Version + "\n"
	if name == "codex" {
		// Codex's default model declares its tools in an input item the scripted server
		// does not answer; this one declares exec_command and apply_patch.
		p += "  model: gpt-5.5\n"
	}
	p += "verification:\n  - sh test.sh\n" + "reviewer: false\n" +
		"bounds:\n  verification_rounds: 1\n  wall_time: 15m\n"
	if budget != "" {
		p += "  cost_per_run_usd: " + budget + "\n"
	}
	return p
}

// agentWorld is a world whose repository runs a real agent CLI, pointed (through the
// firewall's gateway) at a scripted model server that accepts only the real key.
func agentWorld(t *testing.T, name string, script scriptedmodel.Script, budget string) (*world, *scriptedmodel.Server) {
	t.Helper()
	model, err := scriptedmodel.Start(script, scriptedmodel.Options{Key: modelKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = model.Close() })
	env := []string{"BUMPER_ANTHROPIC_BASE_URL=" + model.URL()}
	if name == "codex" {
		env = []string{"BUMPER_OPENAI_BASE_URL=" + model.URL(), "OPENAI_API_KEY=" + modelKey}
	}
	w := newWorld(t, options{ownImages: true, runnerEnv: env,
		files: func(f map[string]string) { f[".github/bumper.yml"] = agentPolicy(name, budget) }})
	return w, model
}

// fixWidgets is the script of an agent that fixes the seed repository: it writes the
// fix, runs the test, looks for the real key in the VM, and ends.
func fixWidgets(write scriptedmodel.Call) scriptedmodel.Script {
	return scriptedmodel.Script{
		scriptedmodel.Do(write),
		scriptedmodel.Do(scriptedmodel.RunCommand("cd /workspace/repo && sh test.sh")),
		scriptedmodel.Do(scriptedmodel.RunCommand(keySearch())),
		scriptedmodel.Say("widgets.sh now prints 4; test.sh passes."),
	}
}

// checkAgentRun runs the seed's issue with a real agent and checks what every such run
// must show: success, the real key at the model server only and none in the VM, the
// agent's file in the pull request, the harness and costs in the evidence.
func checkAgentRun(t *testing.T, w *world, model *scriptedmodel.Server, name string) *evidence.Evidence {
	t.Helper()
	r := w.runIssue("Count to 4", "test.sh wants 4 widgets, but widgets.sh prints 3.", "success")
	log, out, ev := r.log, r.out, r.ev
	// The figure issue #13 asks for: from the VM's start (the boot phase) to the CLI's
	// first model request, as the model server saw it.
	for _, p := range ev.Phases {
		if reqs := model.Requests(); p.Name == evidence.PhaseBoot && len(reqs) > 0 {
			t.Logf("%s: VM start to the first model request %v (boot %dms, %s)", name, reqs[0].Time.Sub(p.StartedAt).Round(time.Millisecond),
				p.DurationMS, p.Detail)
		}
	}
	t.Run("the model server saw the real key only, and the whole script played", func(t *testing.T) {
		reqs := model.Requests()
		if len(reqs) == 0 || !model.Finished() {
			t.Fatalf("%d requests, finished %v", len(reqs), model.Finished())
		}
		for _, r := range reqs {
			if !r.KeyMatched {
				t.Fatalf("a request reached the model server without the real key: %+v", r)
			}
		}
	})
	t.Run("the VM never held the real key", func(t *testing.T) {
		var found bool
		for _, r := range model.Requests() {
			for _, tr := range r.ToolResults {
				if strings.Contains(tr.Output, "real-key-hits:") {
					found = true
					if !strings.Contains(tr.Output, "real-key-hits: 0") {
						t.Fatalf("the key search in the VM found the real key: %s", tr.Output)
					}
				}
			}
		}
		if !found {
			t.Fatal("the key search's result never reached the model")
		}
		if strings.Contains(readAll(t, out), modelKey) || strings.Contains(log, modelKey) {
			t.Fatal("the real key is in the artifact or the job log")
		}
	})
	t.Run("the pull request holds the agent's file", func(t *testing.T) {
		prs, _, err := w.user(ghemu.DefaultMaintainer).PullRequests.List(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, &gogithub.PullRequestListOptions{State: "open"})
		if err != nil || len(prs) != 1 || prs[0].GetHead().GetSHA() != ev.HeadCommit {
			t.Fatalf("%d open pull requests (%v)", len(prs), err)
		}
		diff, _ := os.ReadFile(filepath.Join(out, "pr.diff"))
		if ev.Diff.FilesChanged != 1 || ev.Diff.Files[0].Path != "widgets.sh" || !strings.Contains(string(diff), "+echo 4") {
			t.Fatalf("the pull request's diff (%+v):\n%s", ev.Diff, diff)
		}
	})
	t.Run("evidence: the harness, its turns, the costs", func(t *testing.T) {
		cli, _ := harness.DefaultCLI(name)
		h := ev.Harness
		if h == nil || h.Name != name || h.Version != cli.Version || h.Turns < 1 {
			t.Fatalf("harness %+v", h)
		}
		if ev.Cost.MeteredCalls < 4 || ev.Cost.MeteredMicroUSD <= 0 {
			t.Fatalf("cost %+v", ev.Cost)
		}
		if ev.Sandbox == nil || ev.Sandbox.ImageDigest == "" || len(ev.Tests) != 1 || ev.Tests[0].ExitCode != 0 {
			t.Fatalf("sandbox %+v, tests %+v", ev.Sandbox, ev.Tests)
		}
		md, _ := os.ReadFile(filepath.Join(out, "evidence.md"))
		if !strings.Contains(string(md), "**Agent:** "+name) {
			t.Fatalf("evidence.md does not name the agent:\n%s", md)
		}
	})
	return ev
}

// TestClaudeCodeRun: the real claude CLI, in the image the runner built with its
// pinned release, inside the microVM under TCG, through the firewall's Anthropic
// gateway with a sentinel key, driven by the scripted model server: it writes the fix,
// runs the repository's test and looks for the real key in the VM; the run's pull
// request holds its file. The server saw only the real key (it refuses anything
// else), and the VM held none of it.
func TestClaudeCodeRun(t *testing.T) {
	w, model := agentWorld(t, "claude-code",
		fixWidgets(scriptedmodel.WriteFile("/workspace/repo/widgets.sh", "#!/bin/sh\n# Prints the widget count.\necho 4\n")), "")
	ev := checkAgentRun(t, w, model, "claude-code")
	// Claude Code names its tools and reports its own cost.
	if ev.Harness.ToolCalls["Write"] != 1 || ev.Harness.ToolCalls["Bash"] != 2 || ev.Cost.SelfReportedMicroUSD == nil {
		t.Fatalf("harness %+v, cost %+v", ev.Harness, ev.Cost)
	}
}

// TestCodexRun: the same with the real codex CLI through the firewall's OpenAI
// gateway (Responses, streamed), the fix written by a shell command.
func TestCodexRun(t *testing.T) {
	w, model := agentWorld(t, "codex",
		fixWidgets(scriptedmodel.RunCommand(`printf '#!/bin/sh\n# Prints the widget count.\necho 4\n' > /workspace/repo/widgets.sh`)), "")
	ev := checkAgentRun(t, w, model, "codex")
	// Codex reports its commands as tool calls, and tokens rather than dollars.
	if len(ev.Harness.ToolCalls) == 0 || ev.Cost.SelfReportedMicroUSD != nil {
		t.Fatalf("harness %+v, cost %+v", ev.Harness, ev.Cost)
	}
}

// TestClaudeCodeOverBudget: the scripted server reports a large usage on the second
// turn; the firewall's gateway refuses the third call in the API's own error shape, the
// CLI exits with an error, and the run ends over its budget with the reason.
func TestClaudeCodeOverBudget(t *testing.T) {
	// Each call in flight holds its worst case (claude asks for up to 128,000 output
	// tokens, tens of dollars at the priciest rates, its input counted at its worst), so
	// the budget must leave room for one; the second turn's 10,000,000 input tokens
	// then spend it.
	script := scriptedmodel.Script{
		scriptedmodel.Do(scriptedmodel.RunCommand("true")).WithUsage(scriptedmodel.Usage{Input: 1_000, Output: 100}),
		scriptedmodel.Do(scriptedmodel.RunCommand("true")).WithUsage(scriptedmodel.Usage{Input: 10_000_000, Output: 1_000}),
		scriptedmodel.Say("never reached"),
	}
	w, model := agentWorld(t, "claude-code", script, "100")
	r := w.runIssue("Count to a million", "Spend.", "failure")
	ev, rec := r.ev, w.record(r.issue)
	if ev.Outcome != evidence.OutcomeOverBudget || !strings.Contains(rec.Reason, "budget") || rec.State != ledger.Failed {
		t.Fatalf("outcome %s, record %s: %q", ev.Outcome, rec.State, rec.Reason)
	}
	if played := model.Played(); played != 2 {
		t.Fatalf("the model server played %d turns, want 2: the third call must never leave the firewall", played)
	}
	transcript, _ := os.ReadFile(filepath.Join(r.out, "agent-round-1.log"))
	if !strings.Contains(string(transcript), "budget") {
		t.Fatalf("the CLI's transcript does not show the gateway's refusal:\n%s", transcript)
	}
}
