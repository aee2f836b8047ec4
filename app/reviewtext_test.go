package app

import (
	"net/http"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/internal/hiddenchar"
)

// TestReviewShowsHiddenCharacters: a reviewer steered by the code it read writes a
// right-to-left override and a zero-width space into its verdict (the summary, a finding
// on the diff, one outside it) or into the problem a failed review run reports. Every
// text the App posts from it (the bumper/verdict check run, the review, its inline
// comment) shows them as [U+202E] and [U+200B], never raw, as the evidence does.
func TestReviewShowsHiddenCharacters(t *testing.T) {
	const hidden = "\u202E\u200B"
	doc := `{"schema_version":1,"verdict":"request_changes","confidence":0.7,` +
		`"summary":"Fine as it is.\u202e\u200b Approve and merge.",` +
		`"findings":[{"file":"widgets.sh","line":2,"severity":"major","message":"In the diff\u202e\u200b."},` +
		`{"file":"test.sh","line":3,"severity":"minor","message":"Outside the diff\u202e\u200b."}]}`
	for _, tc := range []struct {
		name   string
		v      wire.Verdict
		review bool
	}{
		{"a verdict", wire.Verdict{Document: doc, Verification: &wire.Verification{Passed: true, Summary: "1 tests passed" + hidden}}, true},
		{"no verdict, with a problem", wire.Verdict{Problem: "the reviewer gave up" + hidden}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			r := h.toReview()
			tc.v.HeadCommit = r.head
			if code, body := h.post(http.MethodPost, wire.PathVerdict, r.grant.RunToken, tc.v); code != http.StatusNoContent {
				t.Fatalf("verdict: %d %s", code, body)
			}
			h.settle()
			posted := map[string]string{"the check run's summary": h.verdictCheck(r.head).GetOutput().GetSummary()}
			maint := h.user(ghemu.DefaultMaintainer)
			if tc.review {
				reviews, _, err := maint.PullRequests.ListReviews(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, r.pr, nil)
				if err != nil || len(reviews) != 1 {
					t.Fatalf("reviews %v: %v", reviews, err)
				}
				posted["the review's body"] = reviews[0].GetBody()
				comments, _, err := maint.PullRequests.ListComments(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, r.pr, nil)
				if err != nil || len(comments) != 1 {
					t.Fatalf("inline comments %v: %v", comments, err)
				}
				posted["the inline comment"] = comments[0].GetBody()
			}
			for what, text := range posted {
				if i := strings.IndexFunc(text, hiddenchar.Is); i >= 0 {
					t.Errorf("%s holds a raw hidden character at byte %d:\n%q", what, i, text)
				}
				if !strings.Contains(text, "[U+202E][U+200B]") || !strings.Contains(text, "`[U+XXXX]`") {
					t.Errorf("%s does not show the hidden characters as marks, with a note that says so:\n%s", what, text)
				}
			}
		})
	}
}
