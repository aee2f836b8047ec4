package app

import (
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/ghemu"
)

// TestPlanRun: with plan: true, labelling dispatches a read-only plan run; its plan
// becomes part of the revision /approve binds to. The repository uses the runner
// workflow template users copy (.github/workflows/bumper-run.yml).
func TestPlanRun(t *testing.T) {
	tmpl, err := os.ReadFile("../.github/workflows/bumper-run.yml")
	if err != nil {
		t.Fatal(err)
	}
	seed := ghemu.DefaultSeed()
	seed.Repositories[0].Files[".github/workflows/bumper-run.yml"] = string(tmpl)
	seed.Repositories[0].Files[".github/bumper.yml"] = "version: 1\nplan: true\n"
	h := newHarness(t, seed)
	n := h.openIssue("Make widgets 4", "The widget count should be 4.")
	h.label(ghemu.DefaultMaintainer, n, "agent:implement")
	h.expectState(n, ledger.Planning)
	runs := h.runs()
	if len(runs) != 1 || runs[0].Inputs["stage"] != "plan" {
		t.Fatalf("runs %+v, want one plan run", runs)
	}
	code, resp, body := h.exchange(exchangeRequest(h, runs[0], h.runnerToken(runs[0])))
	if code != http.StatusOK {
		t.Fatalf("exchange: %d %s", code, body)
	}
	if len(resp.Permissions) != 1 || resp.Permissions["contents"] != "read" {
		t.Fatalf("a plan run got %v; it must be read-only", resp.Permissions)
	}
	if code, body := h.post(http.MethodPost, wire.PathProgress, resp.RunToken, wire.Progress{State: "verifying"}); code != http.StatusForbidden {
		t.Fatalf("a plan run reported verifying: %d %s", code, body)
	}
	// A plan that could not be shown in one comment (the runner sends up to 64 KiB; shown
	// in a fence, a run of backticks counts twice) is refused to the run, saying why,
	// rather than by GitHub after the item stopped planning.
	long := strings.Repeat("`", 40<<10)
	if code, body := h.post(http.MethodPost, wire.PathProgress, resp.RunToken, wire.Progress{State: "awaiting-approval", Plan: long}); code != http.StatusForbidden ||
		!strings.Contains(string(body), "write a shorter plan") {
		t.Fatalf("a plan too long for a comment: %d %s", code, body)
	}
	h.expectState(n, ledger.Planning)
	plan := "1. Change widgets.sh to print 4.\n2. Update test.sh."
	if code, body := h.post(http.MethodPost, wire.PathProgress, resp.RunToken, wire.Progress{State: "awaiting-approval", Plan: plan}); code != http.StatusNoContent {
		t.Fatalf("plan: %d %s", code, body)
	}
	h.settle()
	r := h.expectState(n, ledger.AwaitingApproval)
	if r.PlanRevision == "" {
		t.Fatal("no plan revision recorded")
	}
	replies := h.botReplies(n)
	if len(replies) == 0 || !strings.Contains(replies[len(replies)-1], plan) {
		t.Fatalf("the plan was not posted: %q", replies)
	}
	if err := h.e.UpdateRun(ghemu.DefaultOrg, ghemu.DefaultRepo, runs[0].ID, ghemu.RunUpdate{Status: "completed", Conclusion: "success"}); err != nil {
		t.Fatal(err)
	}
	h.settle()
	h.expectState(n, ledger.AwaitingApproval)
	h.comment(ghemu.DefaultMaintainer, n, "/approve")
	r = h.expectState(n, ledger.Running)
	runs = h.runs()
	if len(runs) != 2 || runs[1].Inputs["stage"] != "implement" || runs[1].Inputs["attempt"] != "2" {
		t.Fatalf("runs %+v", runs)
	}
	if a := r.ActiveApproval(); a == nil || a.Revision != r.ApprovalRevision() || r.PlanRevision == "" {
		t.Fatalf("approval not bound to the plan: %+v", r)
	}
}
