package workitem_test

import (
	"slices"
	"testing"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
)

// TestObservedOutcomes: each way a work item ends is reported to serve's metrics once,
// by its final state, and the spend a run reports with its evidence once, whatever
// number of times the report comes.
func TestObservedOutcomes(t *testing.T) {
	evidence := func(e *env, it *item, micro int64) {
		e.must(e.svc.Evidence(e.ctx, it.claims, wire.Evidence{Digest: ledger.ContentRevision([]byte("evidence")), CostMicroUSD: micro}))
	}
	for _, tc := range []struct {
		name     string
		drive    func(e *env)
		outcomes []string
		spent    int64
	}{
		{"merged", func(e *env) {
			it := e.inReview()
			e.must(e.pullEvent(e.gh.MergePull(repoName, it.pr, maintainer)))
		}, []string{"done"}, 0},
		{"pull request closed unmerged", func(e *env) {
			it := e.inReview()
			e.must(e.pullEvent(e.gh.ClosePull(repoName, it.pr, writer)))
		}, []string{"stopped"}, 0},
		{"run failed", func(e *env) { e.failed() }, []string{"failed"}, 0},
		{"stopped", func(e *env) { e.stopped() }, []string{"stopped"}, 0},
		{"in review: no outcome yet", func(e *env) { e.inReview() }, nil, 0},
		{"spend reported twice, then raised", func(e *env) {
			it := e.granted()
			evidence(e, it, 1_500_000)
			evidence(e, it, 1_500_000)
			evidence(e, it, 1_750_000)
		}, nil, 1_750_000},
		{"spend, then the run fails", func(e *env) {
			it := e.granted()
			evidence(e, it, 420)
			e.must(e.runEvent(e.gh.CompleteRun(repoName, it.run.ID, "failure")))
			e.expect(it.n, ledger.Failed)
		}, []string{"failed"}, 420},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "")
			tc.drive(e)
			outcomes, spent := e.obs.ended()
			if !slices.Equal(outcomes, tc.outcomes) || spent != tc.spent {
				t.Errorf("observed outcomes %v and spend %d; want %v and %d", outcomes, spent, tc.outcomes, tc.spent)
			}
		})
	}
}
