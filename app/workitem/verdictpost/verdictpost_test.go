package verdictpost

import (
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	gmtext "github.com/yuin/goldmark/text"

	"github.com/bumperdev/bumper/app/wire"
)

const approve = `{"schema_version": 1, "verdict": "approve", "confidence": 0.9, "summary": "Fine.", "findings": []}`

// TestJudge: only a valid approve at or above the threshold, on a head whose verification
// passed, passes; anything missing, invalid, doubtful or unverified fails.
func TestJudge(t *testing.T) {
	passed := &wire.Verification{Passed: true, Summary: "ok"}
	for _, tt := range []struct {
		name     string
		v        wire.Verdict
		verifies bool
		pass     bool
		problem  string
	}{
		{"approve above the threshold", wire.Verdict{Document: approve, HeadCommit: "h", Verification: passed}, true, true, ""},
		{"below the threshold", wire.Verdict{Document: strings.Replace(approve, "0.9", "0.5", 1), Verification: passed}, true, false, ""},
		{"verification failed", wire.Verdict{Document: approve, Verification: &wire.Verification{Passed: false}}, true, false, ""},
		{"no verification where the repository verifies", wire.Verdict{Document: approve}, true, false, "no verification of the head"},
		{"no verification asked", wire.Verdict{Document: approve}, false, true, ""},
		{"not a verdict", wire.Verdict{Document: `{"verdict": "yes"}`}, false, false, "schema"},
		{"the run's problem", wire.Verdict{Problem: "the reviewer wrote no verdict.json"}, false, false, "no verdict.json"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := Judge(2, tt.v, 0.8, tt.verifies)
			if o.Rec.Passed != tt.pass || (o.Conclusion() == "success") != tt.pass {
				t.Errorf("passed %v (%s), want %v: %s", o.Rec.Passed, o.Conclusion(), tt.pass, o.Rec.Problem)
			}
			if tt.problem == "" && o.Rec.Problem != "" || tt.problem != "" && !strings.Contains(o.Rec.Problem, tt.problem) {
				t.Errorf("problem %q, want %q", o.Rec.Problem, tt.problem)
			}
			if c := o.Check(); c.Conclusion != o.Conclusion() || c.Title == "" || len(c.Summary) > MaxCheckSummary {
				t.Errorf("check %+v", c)
			}
		})
	}
}

// TestReviewPlacesAndQuotes: a finding on a line of the diff is an inline comment there,
// one elsewhere goes in the body; the reviewer's words are quoted as text whatever they
// hold, and the review is a comment, never an approval.
func TestReviewPlacesAndQuotes(t *testing.T) {
	doc := `{"schema_version": 1, "verdict": "request_changes", "confidence": 0.85, "summary": "![x](https://outside.example/?d=1) @maintainer",
 "findings": [
  {"file": "w.sh", "line": 3, "side": "RIGHT", "severity": "major", "message": "Compute it. <img src=x>"},
  {"file": "other.go", "line": 9, "severity": "minor", "message": "Not in the diff."}]}`
	o := Judge(1, wire.Verdict{Document: doc, HeadCommit: strings.Repeat("a", 40)}, 0.8, false)
	r := o.Review([]File{{Path: "w.sh", Patch: "@@ -1,3 +1,3 @@\n a\n b\n-echo 3\n+echo 4"}})
	if r.Event != "COMMENT" || len(r.Comments) != 1 || r.Comments[0].Path != "w.sh" || r.Comments[0].Line != 3 {
		t.Fatalf("review %+v", r)
	}
	if !strings.Contains(r.Body, "**Findings outside the diff**") || !strings.Contains(r.Body, "`other.go:9`") {
		t.Errorf("the body lacks the finding outside the diff:\n%s", r.Body)
	}
	// Parsed as GitHub's Markdown, nothing the reviewer wrote is an image, a link or HTML.
	for _, text := range []string{r.Body, r.Comments[0].Body, o.Check().Summary} {
		src := []byte(text)
		doc := goldmark.New(goldmark.WithExtensions(extension.GFM)).Parser().Parse(gmtext.NewReader(src))
		_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
			if h, ok := n.(*ast.RawHTML); ok && h.Segments.Len() == 1 {
				seg := h.Segments.At(0)
				if tag := string(seg.Value(src)); tag == "<sub>" || tag == "</sub>" {
					return ast.WalkContinue, nil // Bumper's own small print
				}
			}
			switch n.Kind() {
			case ast.KindImage, ast.KindLink, ast.KindAutoLink, ast.KindRawHTML, ast.KindHTMLBlock:
				if entering {
					t.Errorf("a live %s in:\n%s", n.Kind(), text)
				}
			}
			return ast.WalkContinue, nil
		})
	}
}
