package workitem_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/app/workitem"
)

// verdictDoc is a verdict.json of the reviewer.
func verdictDoc(verdict string, confidence float64, findings ...string) string {
	return fmt.Sprintf(`{"schema_version":1,"verdict":%q,"confidence":%v,"summary":"Checked the change.","findings":[%s]}`,
		verdict, confidence, strings.Join(findings, ","))
}

// TestVerdict checks what the App posts of a review run's result: the bumper/verdict
// check always (success only for a valid approve at the threshold on a verified head),
// and a review (always a comment, never an approval) when the verdict is valid, with
// findings on lines of the diff inline.
func TestVerdict(t *testing.T) {
	passed := &wire.Verification{Passed: true, Summary: "3 tests passed"}
	cases := []struct {
		name, policy string
		verdict      wire.Verdict
		conclusion   string
		review       bool
		inline       []workitem.ReviewComment
		says         string // words of the check's summary or the review's body
	}{
		{name: "approve at the threshold", verdict: wire.Verdict{Document: verdictDoc("approve", 0.8)}, conclusion: "success", review: true,
			says: "This is not an approval"},
		{name: "approve below the threshold", verdict: wire.Verdict{Document: verdictDoc("approve", 0.79)}, conclusion: "failure", review: true},
		{name: "approve below the repository's threshold", policy: "version: 1\nreviewer:\n  min_confidence: 0.99\n",
			verdict: wire.Verdict{Document: verdictDoc("approve", 0.95)}, conclusion: "failure", review: true, says: "0.99"},
		{name: "request changes", verdict: wire.Verdict{Document: verdictDoc("request_changes", 0.9,
			`{"file":"widgets.sh","line":1,"severity":"major","message":"prints 4 where 5 was asked"}`,
			`{"file":"widgets.sh","line":1,"side":"LEFT","severity":"nit","message":"the old line"}`,
			`{"file":"README.md","line":3,"severity":"minor","message":"not in the diff"}`,
			`{"severity":"minor","message":"about the whole change"}`)},
			conclusion: "failure", review: true,
			inline: []workitem.ReviewComment{{Path: "widgets.sh", Line: 1, Side: "RIGHT"}, {Path: "widgets.sh", Line: 1, Side: "LEFT"}},
			says:   "Findings outside the diff"},
		{name: "comment", verdict: wire.Verdict{Document: verdictDoc("comment", 1)}, conclusion: "failure", review: true},
		{name: "an invalid verdict", verdict: wire.Verdict{Document: `{"verdict":"lgtm"}`}, conclusion: "failure", says: "No valid verdict"},
		{name: "no verdict, and why", verdict: wire.Verdict{Problem: "the reviewer ran out of time"}, conclusion: "failure", says: "ran out of time"},
		{name: "approve on a head whose verification failed", policy: "version: 1\nverification: [\"make test\"]\n",
			verdict:    wire.Verdict{Document: verdictDoc("approve", 1), Verification: &wire.Verification{Summary: "1 test failed"}},
			conclusion: "failure", review: true, says: "verification failed"},
		{name: "approve without the verification the repository asks for", policy: "version: 1\nverification: [\"make test\"]\n",
			verdict: wire.Verdict{Document: verdictDoc("approve", 1)}, conclusion: "failure", says: "reported no verification"},
		{name: "approve on a verified head", policy: "version: 1\nverification: [\"make test\"]\n",
			verdict: wire.Verdict{Document: verdictDoc("approve", 1), Verification: passed}, conclusion: "success", review: true,
			says: "3 tests passed"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.policy)
			it := e.reviewing()
			it.claims = e.grant(it.run)
			tt.verdict.HeadCommit = it.head
			e.must(e.svc.Verdict(e.ctx, it.claims, tt.verdict))
			rec := e.expect(it.n, ledger.InReview)
			checks := e.gh.CheckRunsOn(repoName, it.head)
			if len(checks) != 1 || checks[0].Name != workitem.CheckVerdict || checks[0].Conclusion != tt.conclusion {
				t.Fatalf("check runs %+v; want one %s %s", checks, workitem.CheckVerdict, tt.conclusion)
			}
			reviews := e.gh.ReviewsOf(repoName, it.pr)
			if len(reviews) != map[bool]int{true: 1}[tt.review] {
				t.Fatalf("%d reviews; want a review: %v", len(reviews), tt.review)
			}
			text := checks[0].Title + "\n" + checks[0].Summary
			if tt.review {
				rv := reviews[0]
				if rv.State != "COMMENTED" || rv.CommitID != it.head || rec.Verdict.ReviewID != rv.ID {
					t.Fatalf("review %+v", rv)
				}
				var inline []workitem.ReviewComment
				for _, c := range rv.Comments {
					inline = append(inline, workitem.ReviewComment{Path: c.Path, Line: c.Line, Side: c.Side})
				}
				if !slices.Equal(inline, tt.inline) {
					t.Fatalf("inline comments %+v; want %+v", inline, tt.inline)
				}
				text += rv.Body
			}
			if !strings.Contains(text, tt.says) {
				t.Fatalf("neither the check nor the review says %q:\n%s", tt.says, text)
			}
			if rec.Verdict.Passed != (tt.conclusion == "success") || rec.Verdict.Head != it.head || rec.Verdict.CheckRunID != checks[0].ID {
				t.Fatalf("recorded verdict %+v", rec.Verdict)
			}
		})
	}
}

// TestProtectionNotice: when a work item starts, the status record says what the base
// branch's protection leaves open, or nothing when it holds merges to a person's review
// and the App's own verdict.
func TestProtectionNotice(t *testing.T) {
	pinned := []workitem.RequiredCheck{{Name: workitem.CheckVerdict, AppID: 4242}}
	cases := []struct {
		name, policy string
		protection   *workitem.Protection
		hidden       bool
		says         string // "" for no notice
	}{
		{name: "a review and the pinned verdict required", protection: &workitem.Protection{RequiredReviews: 1, RequiredChecks: pinned}},
		{name: "unprotected", says: "is not protected"},
		{name: "unreadable", hidden: true, says: "cannot read the protection"},
		{name: "no review required", protection: &workitem.Protection{RequiredChecks: pinned}, says: "does not require an approving review"},
		{name: "the App may bypass", protection: &workitem.Protection{RequiredReviews: 1, RequiredChecks: pinned, BypassApps: []string{"Bumper"}},
			says: "lets the bumper App bypass"},
		{name: "the verdict not required", protection: &workitem.Protection{RequiredReviews: 1}, says: "does not require the `bumper/verdict` check"},
		{name: "the verdict from any source", protection: &workitem.Protection{RequiredReviews: 1, RequiredChecks: []workitem.RequiredCheck{{Name: workitem.CheckVerdict}}},
			says: "from any source"},
		{name: "no verdict needed with the reviewer off", policy: reviewerOff, protection: &workitem.Protection{RequiredReviews: 1}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.policy)
			e.gh.Protect(repoName, "main", tt.protection)
			if tt.hidden {
				e.gh.HideProtection(repoName)
			}
			rec := e.record(e.awaiting().n)
			if (tt.says == "") != (rec.Protection == "") || !strings.Contains(rec.Protection, tt.says) {
				t.Fatalf("notice %q; want one saying %q", rec.Protection, tt.says)
			}
		})
	}
}
