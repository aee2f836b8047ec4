package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/evidence/evidencemd"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/revision"
)

// TestJobSummary checks the job summary (GITHUB_STEP_SUMMARY) shows what an admin
// watching runs needs without opening the artifact: the phase timings table and the
// metered cost against the budget.
func TestJobSummary(t *testing.T) {
	start := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	ev := &evidence.Evidence{
		Phases: []evidence.Phase{
			evidence.NewPhase(evidence.PhaseBoot, start, start.Add(1500*time.Millisecond), evidence.PhaseOK),
			evidence.NewPhase(evidence.PhaseAgent, start.Add(2*time.Second), start.Add(42*time.Second), evidence.PhaseOK),
		},
		Cost: evidence.Cost{MeteredMicroUSD: 1_230_000, MeteredCalls: 3, BudgetMicroUSD: 5_000_000},
	}
	res := &Result{Outcome: evidence.OutcomeSuccess, PullRequest: 7, Evidence: ev, CostMicroUSD: 1_230_000,
		Attestation: evidencemd.Attestation(revision.Of([]byte("statement")), "")}
	got := JobSummary(res, wire.WorkItem{Repository: "acme/widgets", Issue: 1}, 1, 1<<20)
	for _, want := range []string{
		"**Attested:** serve signed an in-toto statement", revision.Of([]byte("statement")),
		"## Bumper: acme/widgets#1 attempt 1 — success",
		"| phase | round | outcome | duration | started (UTC) | detail |",
		"boot", "agent",
		"$1.23 metered over 3 model calls",
		"budget $5.00",
	} {
		t.Run(want, func(t *testing.T) {
			if !strings.Contains(got, want) {
				t.Fatalf("the job summary lacks %q:\n%s", want, got)
			}
		})
	}
}
