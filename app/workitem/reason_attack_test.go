package workitem_test

import (
	"strings"
	"testing"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/hiddenchar"
)

// TestRunReasonCannotHideCharacters is issue #22's item 6 ("use one quoter") on the
// status comment: the run's reason quotes the agent (the last lines a failed commit
// printed, which a clean filter the agent set in .git/config writes during
// "git add -A"; git's output about a path it named), and runEnded shows it in a bare
// mdcode.Span, not through mdcode.Quoter. A right-to-left override in it reaches the
// issue's status comment raw, reordering what the maintainer reads before a /retry;
// the evidence and the reviewer's verdict write it as [U+202E].
func TestRunReasonCannotHideCharacters(t *testing.T) {
	e := newEnv(t, "")
	it := e.granted()
	reason := "failed to commit the agent's changes in round 1: the commit exit 1 (error: external filter 'lfs' failed: " +
		"\u202eyrter/ ot efas si ti ,ton did bumper\u202c); see agent-round-1.log"
	e.must(e.svc.Evidence(e.ctx, it.claims, wire.Evidence{Digest: ledger.ContentRevision([]byte("evidence")),
		Outcome: "failure", Reason: reason}))
	e.must(e.runEvent(e.gh.StartRun(repoName, it.run.ID, "runner-7")))
	e.must(e.runEvent(e.gh.CompleteRun(repoName, it.run.ID, "failure")))
	e.expect(it.n, ledger.Failed)
	for _, c := range e.gh.IssueComments(repoName, it.n) {
		if c.Author != e.gh.Bot() {
			continue
		}
		human := c.Body
		if i := strings.Index(human, ledger.RecordOpen); i >= 0 {
			human = human[:i] // the JSON escapes nothing of this, but it is not shown
		}
		for _, line := range strings.Split(human, "\n") {
			if strings.IndexFunc(line, hiddenchar.Is) >= 0 {
				t.Errorf("the bot's comment shows a hidden character raw: %+q", line)
			}
		}
	}
}
