package runner

import (
	"strings"
	"testing"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/hiddenchar"
)

// TestJobSummaryQuotesHiddenCharacters is issue #22's item 6 ("use one quoter") where it was not
// applied: the job summary quotes the run's reason and a review run's problem with a
// bare mdcode.Span, not mdcode.Quoter, so a bidirectional override or zero-width
// character in them shows raw on the workflow run's page, reordering what the admin
// reads, while the evidence, the status comment and the review write [U+202E]. Both
// quote the agent: a commit that fails gives its last lines of output (which a clean
// filter the agent configured in .git/config prints during "git add -A"), a harness
// that fails gives the agent's last words (a review run's problem is that reason).
func TestJobSummaryQuotesHiddenCharacters(t *testing.T) {
	hidden := "approve\u202e\u200b)sdrawkcab("
	res := &Result{
		Outcome: evidence.OutcomeFailure,
		Reason:  "failed to commit the agent's changes in round 1: the commit exit 1 (error: external filter 'lfs' failed: " + hidden + "); see agent-round-1.log",
		Evidence: &evidence.Evidence{Stage: wire.StageReview,
			Review: &evidence.Review{HeadCommit: strings.Repeat("d", 40), Problem: "the agent failed in round 1: is_error: " + hidden}},
	}
	md := JobSummary(res, wire.WorkItem{Repository: "acme/widgets", Issue: 3}, 1, 1<<20)
	for _, line := range strings.Split(md, "\n") {
		if strings.IndexFunc(line, hiddenchar.Is) >= 0 {
			t.Errorf("the job summary shows a hidden character raw: %+q", line)
		}
	}
}
