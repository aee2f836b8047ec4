package publish

import (
	"strings"
	"testing"

	"github.com/bumperdev/bumper/action/evidence/evidencetest"
)

// TestPullBodyAsACommitMessageClosesNothing is issue #22's item 1 where the fix stops at the
// pull request's Markdown: the body quotes the agent (its decision ledger, the test
// output it wrote) in code, where GitHub's closing keywords and mentions do nothing,
// but a repository whose squash (or merge) commit message is "Pull request title and
// description" (a setting GitHub offers, and many use) makes the body a commit message
// on the default branch, where code fences mean nothing. "Fixes #6" the agent wrote in
// its ledger then closes #6 when a person merges, and "#8" cross-references #8 from
// the default branch. Text Bumper did not write must be inert in the body as plain
// text too (ghref.Neutralize before quoting), so that only Bumper's "Fixes #N" acts.
func TestPullBodyAsACommitMessageClosesNothing(t *testing.T) {
	ev := evidencetest.Realistic()
	ev.Ledger.Decisions[0].Choice = "Fixes #6, closes acme/widgets#8 and GH-9; @maintainer agreed"
	ev.Tests[0].Failures[0].Excerpt = "--- FAIL: TestCount\n    resolves: #10 https://github.com/acme/widgets/issues/11\n"
	body, _ := pullBody(PullRequestOptions{Issue: 3, Summary: "Bumper's agent worked on #3.", Evidence: ev})
	// What the agent planted, as GitHub's grammar reads it in a commit message (no
	// Markdown): each must be gone or neutralized.
	planted := []string{"Fixes #6", "acme/widgets#8", "GH-9", "resolves: #10", "https://github.com/acme/widgets/issues/11"}
	for _, p := range planted {
		if strings.Contains(body, p) {
			t.Errorf("the pull request's body holds %q live: as a squash or merge commit's message on the default branch, GitHub acts on it", p)
		}
	}
}
