// Package verdictpost is the reviewer's verdict as Bumper posts it on a pull request:
// what the App makes of a review run's result (Judge), the bumper/verdict check run,
// and the review whose inline comments sit on lines of the diff. Everything the
// reviewer wrote is quoted as text (internal/mdcode), never rendered.
package verdictpost

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/mdcode"
	"github.com/bumperdev/bumper/internal/textcut"
	"github.com/bumperdev/bumper/internal/verdict"
)

// Name is the check run's name.
const Name = "bumper/verdict"

// Outcome is what the App made of a review run's result.
type Outcome struct {
	// Rec is what the work item's record keeps of it.
	Rec ledger.Verdict
	// Parsed is the valid verdict; zero when there is none (Rec.Problem says why).
	Parsed verdict.Verdict
	// Verification is the review run's own run of the repository's verification.
	Verification *wire.Verification
	// Threshold is the repository's reviewer.min_confidence.
	Threshold float64
}

// Check is the bumper/verdict check run as the App posts it, completed.
type Check struct {
	Head, Conclusion, Title, Summary string
}

// File is a file of the pull request's diff, with its patch as GitHub gives it (empty
// for a binary file or a diff too large to show).
type File struct{ Path, Patch string }

// Review is a pull request review as the App posts it; Comments are on lines of the
// diff. Event is COMMENT or REQUEST_CHANGES: the App never approves, and a verdict's
// review is always COMMENT.
type Review struct {
	CommitID, Event, Body string
	Comments              []Comment
}

// Comment is an inline comment of a Review.
type Comment struct {
	Path string
	Line int
	Side string // LEFT or RIGHT
	Body string
}

// Judge reads a review run's result against the repository's threshold. Only a valid
// approve verdict at or above the threshold, on a head whose verification passed,
// passes: anything missing, late, invalid or doubtful fails.
func Judge(att int, v wire.Verdict, threshold float64, verifies bool) Outcome {
	o := Outcome{Rec: ledger.Verdict{Attempt: att, Head: v.HeadCommit}, Verification: v.Verification, Threshold: threshold}
	problem := strings.TrimSpace(v.Problem)
	if problem == "" {
		o.Rec.Digest = verdict.Digest([]byte(v.Document))
		parsed, err := verdict.Parse([]byte(v.Document))
		if err != nil {
			problem = err.Error()
		} else {
			o.Parsed = parsed
			o.Rec.Verdict, o.Rec.Confidence, o.Rec.Findings = parsed.Verdict, parsed.Confidence, len(parsed.Findings)
		}
	}
	if problem == "" && verifies && v.Verification == nil {
		// The repository verifies its changes; a review run that says nothing of it did
		// not judge a verified head.
		problem = "the review run reported no verification of the head, which the repository's verification commands ask for"
	}
	o.Rec.Problem = ledger.Cut(problem, ledger.MaxDetail)
	verified := v.Verification == nil || v.Verification.Passed
	o.Rec.Passed = problem == "" && o.Parsed.Passes(threshold) && verified
	return o
}

// Conclusion is the bumper/verdict check's conclusion. Never neutral or skipped: GitHub
// counts those as passing a required check.
func (o Outcome) Conclusion() string {
	if o.Rec.Passed {
		return "success"
	}
	return "failure"
}

// Check is the bumper/verdict check run: its title says the outcome in a line, its
// summary why.
func (o Outcome) Check() Check {
	var title string
	var b strings.Builder
	q := &mdcode.Quoter{}
	switch {
	case o.Rec.Problem != "":
		title = "No valid verdict: failure"
		fmt.Fprintf(&b, "**Failure.** The review run produced no valid verdict, and a verdict that is not there is never a pass:\n\n%s\n", q.Block(o.Rec.Problem))
	case o.Rec.Passed:
		title = fmt.Sprintf("approve at %.2f (threshold %.2f): success", o.Rec.Confidence, o.Threshold)
		fmt.Fprintf(&b, "**Success.** The reviewer approves with confidence %.2f, at or above the repository's threshold %.2f (`reviewer.min_confidence`)", o.Rec.Confidence, o.Threshold)
		if o.Verification != nil {
			b.WriteString(", and the repository's verification passed on this commit in the review run")
		}
		b.WriteString(". This is not an approval: Bumper never approves or merges; a person reviews and merges.\n")
	default:
		title = fmt.Sprintf("%s at %.2f: failure", o.Rec.Verdict, o.Rec.Confidence)
		fmt.Fprintf(&b, "**Failure.** The reviewer's verdict is `%s` with confidence %.2f. Only `approve` with confidence at or above %.2f (`reviewer.min_confidence`)", o.Rec.Verdict, o.Rec.Confidence, o.Threshold)
		if o.Verification != nil {
			b.WriteString(" on a commit whose verification passes")
		}
		b.WriteString(" makes this check succeed.\n")
		if o.Verification != nil && !o.Verification.Passed {
			b.WriteString("\nThe repository's verification failed on this commit in the review run.\n")
		}
	}
	if v := o.Verification; v != nil {
		fmt.Fprintf(&b, "\nVerification in the review run: %s\n", q.Span(oneLine(v.Summary)))
	}
	if o.Rec.Problem == "" {
		fmt.Fprintf(&b, "\n%s\n", q.Block(o.Parsed.Summary))
		if len(o.Parsed.Findings) > 0 {
			b.WriteString("\n| severity | where | finding |\n|---|---|---|\n")
			for _, f := range o.Parsed.Findings {
				fmt.Fprintf(&b, "| %s | %s | %s |\n", f.Severity, cell(where(q, f)), cell(q.Span(oneLine(f.Message))))
			}
		}
	}
	fmt.Fprintf(&b, "\n<sub>Review run attempt %d on `%.12s`", o.Rec.Attempt, o.Rec.Head)
	if o.Rec.Digest != "" {
		fmt.Fprintf(&b, "; verdict.json `%s`", o.Rec.Digest)
	}
	b.WriteString("." + hiddenNote(q) + "</sub>\n")
	return Check{Head: o.Rec.Head, Conclusion: o.Conclusion(), Title: title, Summary: capText(b.String(), MaxCheckSummary)}
}

// Review is the pull request review of a valid verdict: findings on lines of the diff
// become inline comments, the rest go in the body. Its event is always COMMENT: Bumper
// opened the pull request, and GitHub lets no one approve or request changes on their
// own pull request; the bumper/verdict check is what branch protection requires.
//
// What the reviewer wrote (and what the code it read may have steered), here and in the
// check run, is quoted by mdcode.Quoter as text: in a fenced block or a code span nothing
// renders, so its images are not fetched (GitHub's image proxy would be a channel out of
// the review VM around the firewall), its links and HTML do nothing, its mentions notify
// no one, and its hidden characters show as [U+XXXX].
func (o Outcome) Review(files []File) Review {
	lines := commentable(files)
	var inline []Comment
	var outside []verdict.Finding
	for _, f := range o.Parsed.Findings {
		if f.File != "" && f.Line > 0 && lines[diffLine{path: f.File, side: f.Side, line: f.Line}] {
			cq := &mdcode.Quoter{}
			body := fmt.Sprintf("**%s** · Bumper's reviewer:\n\n%s", f.Severity, cq.Block(f.Message))
			if note := hiddenNote(cq); note != "" {
				body += "\n\n<sub>" + strings.TrimSpace(note) + "</sub>"
			}
			inline = append(inline, Comment{Path: f.File, Line: f.Line, Side: f.Side, Body: body})
			continue
		}
		outside = append(outside, f)
	}
	var b strings.Builder
	q := &mdcode.Quoter{}
	switch o.Parsed.Verdict {
	case verdict.Approve:
		fmt.Fprintf(&b, "**Bumper's reviewer approves** · confidence %.2f · `%s`: %s\n\n", o.Rec.Confidence, Name, o.Conclusion())
	case verdict.RequestChanges:
		fmt.Fprintf(&b, "**Bumper's reviewer requests changes** · confidence %.2f · `%s`: %s\n\n", o.Rec.Confidence, Name, o.Conclusion())
	default:
		fmt.Fprintf(&b, "**Bumper's reviewer comments** · confidence %.2f · `%s`: %s\n\n", o.Rec.Confidence, Name, o.Conclusion())
	}
	fmt.Fprintf(&b, "%s\n", q.Block(o.Parsed.Summary))
	if len(outside) > 0 {
		b.WriteString("\n**Findings outside the diff**\n\n")
		for _, f := range outside {
			fmt.Fprintf(&b, "- **%s** %s: %s\n", f.Severity, where(q, f), q.Span(oneLine(f.Message)))
		}
	}
	fmt.Fprintf(&b, "\n<sub>A reviewer run with a fresh context judged `%.12s`. This review is a comment, never an approval: Bumper opened this pull request, and a person reviews and merges it.", o.Rec.Head)
	if o.Parsed.Verdict == verdict.RequestChanges {
		fmt.Fprintf(&b, " GitHub does not let the author of a pull request request changes on it; the failing `%s` check blocks the merge where branch protection requires it.", Name)
	}
	b.WriteString(hiddenNote(q) + "</sub>\n")
	return Review{CommitID: o.Rec.Head, Event: "COMMENT", Body: capText(b.String(), MaxReviewBody), Comments: inline}
}

// where shows a finding's place: `file:line (side)`, or "the change" for one about the
// whole. The path is the reviewer's: quoted by q on one line.
func where(q *mdcode.Quoter, f verdict.Finding) string {
	file := oneLine(f.File)
	switch {
	case file == "":
		return "the change"
	case f.Line == 0:
		return q.Span(file)
	case f.Side == verdict.SideLeft:
		return q.Span(file+":"+strconv.Itoa(f.Line)) + " (base)"
	default:
		return q.Span(file + ":" + strconv.Itoa(f.Line))
	}
}

// hiddenNote is the sentence that says how q showed hidden characters, if it met any.
func hiddenNote(q *mdcode.Quoter) string {
	if !q.Hidden {
		return ""
	}
	return " Hidden characters in the reviewer's text (zero-width, bidirectional, tag characters) are shown as `[U+XXXX]`."
}

// GitHub's limits on a check run's summary and a review's body; what goes past them is
// cut, with a note, rather than losing the verdict.
const (
	MaxCheckSummary = 65535
	MaxReviewBody   = 65536
)

// capText keeps s within max bytes, on a line boundary where it can, saying it was cut.
func capText(s string, max int) string {
	const note = "\n\n…(cut at GitHub's size limit; the review run's artifact holds verdict.json whole)\n"
	if len(s) <= max {
		return s
	}
	cut := textcut.Clip(strings.ToValidUTF8(s, "\uFFFD"), max-len(note)-8, textcut.Ellipsis)
	if i := strings.LastIndexByte(cut, '\n'); i > len(cut)/2 {
		cut = cut[:i]
	}
	// A cut inside a fence would leave it open: close any fence the text opened.
	if strings.Count(cut, "\n```")%2 == 1 {
		cut += "\n```"
	}
	return cut + note
}

// cell keeps text inside one cell of a Markdown table.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// oneLine joins text onto one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// diffLine is a line a review comment can be put on.
type diffLine struct {
	path, side string
	line       int
}

var hunkHeader = regexp.MustCompile(`^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@`)

// commentable lists the lines of the diff GitHub accepts review comments on: every line
// of a hunk, on its side (context lines on both).
func commentable(files []File) map[diffLine]bool {
	out := map[diffLine]bool{}
	for _, f := range files {
		left, right := 0, 0
		for _, l := range strings.Split(f.Patch, "\n") {
			if m := hunkHeader.FindStringSubmatch(l); m != nil {
				left, _ = strconv.Atoi(m[1])
				right, _ = strconv.Atoi(m[2])
				continue
			}
			if left == 0 && right == 0 || l == "" {
				continue
			}
			switch l[0] {
			case ' ':
				out[diffLine{f.Path, verdict.SideLeft, left}] = true
				out[diffLine{f.Path, verdict.SideRight, right}] = true
				left++
				right++
			case '-':
				out[diffLine{f.Path, verdict.SideLeft, left}] = true
				left++
			case '+':
				out[diffLine{f.Path, verdict.SideRight, right}] = true
				right++
			}
		}
	}
	return out
}
