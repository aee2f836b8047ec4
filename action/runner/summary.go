package runner

import (
	"fmt"
	"strings"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/evidence/evidencemd"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/mdcode"
)

// JobSummary is the run's Markdown for the workflow run's page (the job summary), within
// limit bytes: how the run of item's attempt ended, its pull request or verdict, why it
// failed, and the evidence. What the agent wrote is quoted as code.
func JobSummary(res *Result, item wire.WorkItem, attempt, limit int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Bumper: %s attempt %d — %s\n\n", item, attempt, res.Outcome)
	if res.PullRequest > 0 {
		fmt.Fprintf(&b, "Pull request: #%d %s\n\n", res.PullRequest, res.PullURL)
	}
	if ev := res.Evidence; ev != nil {
		switch {
		case ev.Review != nil && ev.Review.Verdict != "":
			fmt.Fprintf(&b, "Reviewed %s: verdict %s, %d finding(s); serve posts the review and the bumper/verdict check run.\n\n",
				mdcode.Span(ev.Review.HeadCommit), mdcode.Span(ev.Review.Verdict), ev.Review.Findings)
		case ev.Review != nil:
			fmt.Fprintf(&b, "Reviewed %s: no valid verdict (%s); the bumper/verdict check run fails.\n\n",
				mdcode.Span(ev.Review.HeadCommit), mdcode.Span(strings.Join(strings.Fields(ev.Review.Problem), " ")))
		case ev.Stage == wire.StageFix && ev.HeadCommit != "" && res.Outcome == evidence.OutcomeSuccess:
			fmt.Fprintf(&b, "Fix round pushed %s to %s; its evidence is commented on the pull request.\n\n", mdcode.Span(ev.HeadCommit), mdcode.Span(ev.Branch))
		case ev.Round != nil && ev.HeadCommit != "" && res.Outcome == evidence.OutcomeSuccess:
			fmt.Fprintf(&b, "The %s round %d pushed %s to %s; its evidence is commented on the pull request.\n\n", ev.Stage, ev.Round.Number,
				mdcode.Span(ev.HeadCommit), mdcode.Span(ev.Branch))
		}
	}
	if res.Reason != "" {
		// Shown as text: the reason may quote what the agent left (a ref name, say).
		fmt.Fprintf(&b, "Why: %s\n\n", mdcode.Span(strings.Join(strings.Fields(res.Reason), " ")))
	}
	// Before the evidence, which is cut to what is left: the line is short and bounded.
	if res.Attestation != "" {
		b.WriteString(res.Attestation + "\n")
	}
	if res.Evidence != nil {
		md, _ := evidencemd.Render(res.Evidence, limit-b.Len()-1024)
		b.WriteString(md)
	}
	return b.String()
}
