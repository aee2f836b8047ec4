package workitem

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/logkey"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/mdcode"
	"github.com/bumperdev/bumper/internal/repoconfig"
	"github.com/bumperdev/bumper/internal/verdict"
)

// The check runs Bumper posts on a pull request's head: the runner posts the evidence,
// the App the verdict.
const (
	CheckEvidence = "bumper/evidence"
	CheckVerdict  = "bumper/verdict"
	// CheckGates is the runner's output gates (docs/gates.md): it fails while a finding
	// needs a person, and a writer's approving review of its head clears it (gates.go).
	CheckGates = "bumper/gates"
)

// reviewPermissions are a review run's: it reads the code, the pull request and its
// checks, and writes nothing. What it concludes, the App posts.
var reviewPermissions = map[string]string{"contents": "read", "pull_requests": "read", "checks": "read"}

// verdictOutcome is what the App made of a review run's result.
type verdictOutcome struct {
	rec    ledger.Verdict
	parsed verdict.Verdict
	// verification is the review run's own run of the repository's verification.
	verification *wire.Verification
	threshold    float64
	// posted is the review the App posted of a valid verdict.
	posted Review
}

// judge reads a review run's result against the repository's threshold. Only a valid
// approve verdict at or above the threshold, on a head whose verification passed,
// passes: anything missing, late, invalid or doubtful fails.
func judge(att int, v wire.Verdict, threshold float64, verifies bool) verdictOutcome {
	o := verdictOutcome{rec: ledger.Verdict{Attempt: att, Head: v.HeadCommit}, verification: v.Verification, threshold: threshold}
	problem := strings.TrimSpace(v.Problem)
	if problem == "" {
		o.rec.Digest = verdict.Digest([]byte(v.Document))
		parsed, err := verdict.Parse([]byte(v.Document))
		if err != nil {
			problem = err.Error()
		} else {
			o.parsed = parsed
			o.rec.Verdict, o.rec.Confidence, o.rec.Findings = parsed.Verdict, parsed.Confidence, len(parsed.Findings)
		}
	}
	if problem == "" && verifies && v.Verification == nil {
		// The repository verifies its changes; a review run that says nothing of it did
		// not judge a verified head.
		problem = "the review run reported no verification of the head, which the repository's verification commands ask for"
	}
	o.rec.Problem = cutReason(problem)
	verified := v.Verification == nil || v.Verification.Passed
	o.rec.Passed = problem == "" && o.parsed.Passes(threshold) && verified
	return o
}

// conclusion is the bumper/verdict check's conclusion. Never neutral or skipped: GitHub
// counts those as passing a required check.
func (o verdictOutcome) conclusion() string {
	if o.rec.Passed {
		return "success"
	}
	return "failure"
}

// checkRun is the bumper/verdict check run: its title says the outcome in a line, its
// summary why.
func (o verdictOutcome) checkRun() CheckRun {
	var title string
	var b strings.Builder
	q := &mdcode.Quoter{}
	switch {
	case o.rec.Problem != "":
		title = "No valid verdict: failure"
		fmt.Fprintf(&b, "**Failure.** The review run produced no valid verdict, and a verdict that is not there is never a pass:\n\n%s\n", q.Block(o.rec.Problem))
	case o.rec.Passed:
		title = fmt.Sprintf("approve at %.2f (threshold %.2f): success", o.rec.Confidence, o.threshold)
		fmt.Fprintf(&b, "**Success.** The reviewer approves with confidence %.2f, at or above the repository's threshold %.2f (`reviewer.min_confidence`)", o.rec.Confidence, o.threshold)
		if o.verification != nil {
			b.WriteString(", and the repository's verification passed on this commit in the review run")
		}
		b.WriteString(". This is not an approval: Bumper never approves or merges; a person reviews and merges.\n")
	default:
		title = fmt.Sprintf("%s at %.2f: failure", o.rec.Verdict, o.rec.Confidence)
		fmt.Fprintf(&b, "**Failure.** The reviewer's verdict is `%s` with confidence %.2f. Only `approve` with confidence at or above %.2f (`reviewer.min_confidence`)", o.rec.Verdict, o.rec.Confidence, o.threshold)
		if o.verification != nil {
			b.WriteString(" on a commit whose verification passes")
		}
		b.WriteString(" makes this check succeed.\n")
		if o.verification != nil && !o.verification.Passed {
			b.WriteString("\nThe repository's verification failed on this commit in the review run.\n")
		}
	}
	if v := o.verification; v != nil {
		fmt.Fprintf(&b, "\nVerification in the review run: %s\n", q.Span(oneLine(v.Summary)))
	}
	if o.rec.Problem == "" {
		fmt.Fprintf(&b, "\n%s\n", q.Block(o.parsed.Summary))
		if len(o.parsed.Findings) > 0 {
			b.WriteString("\n| severity | where | finding |\n|---|---|---|\n")
			for _, f := range o.parsed.Findings {
				fmt.Fprintf(&b, "| %s | %s | %s |\n", f.Severity, cell(where(q, f)), cell(q.Span(oneLine(f.Message))))
			}
		}
	}
	fmt.Fprintf(&b, "\n<sub>Review run attempt %d on `%.12s`", o.rec.Attempt, o.rec.Head)
	if o.rec.Digest != "" {
		fmt.Fprintf(&b, "; verdict.json `%s`", o.rec.Digest)
	}
	b.WriteString("." + hiddenNote(q) + "</sub>\n")
	return CheckRun{Name: CheckVerdict, HeadSHA: o.rec.Head, Conclusion: o.conclusion(), Title: title, Summary: capText(b.String(), maxCheckSummary)}
}

// review is the pull request review of a valid verdict: findings on lines of the diff
// become inline comments, the rest go in the body. Its event is always COMMENT: Bumper
// opened the pull request, and GitHub lets no one approve or request changes on their
// own pull request; the bumper/verdict check is what branch protection requires.
//
// What the reviewer wrote (and what the code it read may have steered), here and in the
// check run, is quoted by mdcode.Quoter as text: in a fenced block or a code span nothing
// renders, so its images are not fetched (GitHub's image proxy would be a channel out of
// the review VM around the firewall), its links and HTML do nothing, its mentions notify
// no one, and its hidden characters show as [U+XXXX].
func (o verdictOutcome) review(files []PullFile) Review {
	lines := commentable(files)
	var inline []ReviewComment
	var outside []verdict.Finding
	for _, f := range o.parsed.Findings {
		if f.File != "" && f.Line > 0 && lines[diffLine{path: f.File, side: f.Side, line: f.Line}] {
			cq := &mdcode.Quoter{}
			body := fmt.Sprintf("**%s** · Bumper's reviewer:\n\n%s", f.Severity, cq.Block(f.Message))
			if note := hiddenNote(cq); note != "" {
				body += "\n\n<sub>" + strings.TrimSpace(note) + "</sub>"
			}
			inline = append(inline, ReviewComment{Path: f.File, Line: f.Line, Side: f.Side, Body: body})
			continue
		}
		outside = append(outside, f)
	}
	var b strings.Builder
	q := &mdcode.Quoter{}
	switch o.parsed.Verdict {
	case verdict.Approve:
		fmt.Fprintf(&b, "**Bumper's reviewer approves** · confidence %.2f · `%s`: %s\n\n", o.rec.Confidence, CheckVerdict, o.conclusion())
	case verdict.RequestChanges:
		fmt.Fprintf(&b, "**Bumper's reviewer requests changes** · confidence %.2f · `%s`: %s\n\n", o.rec.Confidence, CheckVerdict, o.conclusion())
	default:
		fmt.Fprintf(&b, "**Bumper's reviewer comments** · confidence %.2f · `%s`: %s\n\n", o.rec.Confidence, CheckVerdict, o.conclusion())
	}
	fmt.Fprintf(&b, "%s\n", q.Block(o.parsed.Summary))
	if len(outside) > 0 {
		b.WriteString("\n**Findings outside the diff**\n\n")
		for _, f := range outside {
			fmt.Fprintf(&b, "- **%s** %s: %s\n", f.Severity, where(q, f), q.Span(oneLine(f.Message)))
		}
	}
	fmt.Fprintf(&b, "\n<sub>A reviewer run with a fresh context judged `%.12s`. This review is a comment, never an approval: Bumper opened this pull request, and a person reviews and merges it.", o.rec.Head)
	if o.parsed.Verdict == verdict.RequestChanges {
		fmt.Fprintf(&b, " GitHub does not let the author of a pull request request changes on it; the failing `%s` check blocks the merge where branch protection requires it.", CheckVerdict)
	}
	b.WriteString(hiddenNote(q) + "</sub>\n")
	return Review{CommitID: o.rec.Head, Event: "COMMENT", Body: capText(b.String(), maxReviewBody), Comments: inline}
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
	maxCheckSummary = 65535
	maxReviewBody   = 65536
)

// capText keeps s within max bytes, on a line boundary where it can, saying it was cut.
func capText(s string, max int) string {
	const note = "\n\n…(cut at GitHub's size limit; the review run's artifact holds verdict.json whole)\n"
	if len(s) <= max {
		return s
	}
	cut := cutBytes(s, max-len(note)-8)
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
func commentable(files []PullFile) map[diffLine]bool {
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

// postVerdict posts what a review run concluded on the pull request: the bumper/verdict
// check run always, and the review when there is a valid verdict. It records both.
func (s *Service) postVerdict(ctx context.Context, gh GitHub, it *item, pol repoconfig.Config, v wire.Verdict) (verdictOutcome, error) {
	rec := it.rec
	o := judge(rec.CurrentAttempt().Number, v, pol.Reviewer.MinConfidence, len(pol.Verification) > 0)
	// The review first: a check that succeeded with no review beside it would be a pass
	// nobody can read.
	if o.rec.Problem == "" {
		files, err := gh.PullFiles(ctx, rec.Repository, rec.PullRequest)
		if err != nil {
			return o, fmt.Errorf("failed to list the files of pull request #%d: %w", rec.PullRequest, err)
		}
		o.posted = o.review(files)
		if o.rec.ReviewID, err = gh.CreateReview(ctx, rec.Repository, rec.PullRequest, o.posted); err != nil {
			return o, fmt.Errorf("failed to post the review of pull request #%d: %w", rec.PullRequest, err)
		}
	}
	id, err := gh.CreateCheckRun(ctx, rec.Repository, o.checkRun())
	if err != nil {
		return o, fmt.Errorf("failed to post %s on %.12s: %w", CheckVerdict, o.rec.Head, err)
	}
	o.rec.CheckRunID = id
	rec.Verdict = &o.rec
	zerolog.Ctx(ctx).Info().Str(logkey.WorkItem, rec.ID()).Int(logkey.Pull, rec.PullRequest).Str(logkey.Conclusion, o.conclusion()).
		Str(logkey.Reason, o.rec.Problem).Msg("posted the reviewer's verdict")
	return o, nil
}

// Verdict takes what a review run concluded, posts it and hands the pull request to
// humans.
func (s *Service) Verdict(ctx context.Context, c wire.RunClaims, v wire.Verdict) error {
	if c.Stage != StageReview {
		// Only a reviewer run, with its fresh context, judges a pull request: the run that
		// wrote the change may not grade it.
		return refuse(RefusalStage, "a %s run cannot post a verdict; only a review run can", c.Stage)
	}
	if len(v.Document) > wire.MaxVerdictDocument || len(v.Problem) > wire.MaxReason {
		return refuse(RefusalInvalidReport, "the verdict document is at most %d bytes and the problem at most %d", wire.MaxVerdictDocument, wire.MaxReason)
	}
	if strings.TrimSpace(v.Document) == "" && strings.TrimSpace(v.Problem) == "" {
		return refuse(RefusalInvalidReport, "a verdict call needs the document or the problem that left the run without one")
	}
	defer s.lock(c.WorkItem.String())()
	gh, it, err := s.current(ctx, c)
	if err != nil {
		return err
	}
	rec := it.rec
	if rec.State != ledger.Reviewing {
		return refuse(RefusalState, "%s is %s, not reviewing", c.WorkItem, rec.State)
	}
	if v.HeadCommit != rec.PullHead {
		return refuse(RefusalInvalidReport, "the review judged %.12s, but the pull request's head is %.12s", v.HeadCommit, rec.PullHead)
	}
	pol, err := s.policyAt(ctx, gh, rec.Repository, rec.BaseCommit)
	if isInvalidPolicy(err) {
		return refuse(RefusalPolicy, "%v", err)
	}
	if err != nil {
		return err // a failed read: serve's 5xx, which the runner repeats
	}
	o, err := s.postVerdict(ctx, gh, it, pol, v)
	if err != nil {
		return err
	}
	return s.reviewed(ctx, gh, it, pol, o)
}

// reviewed hands the pull request to humans after its review, then starts what waits:
// a revise round for the words collected meanwhile (and the findings, where the
// repository asks for that), else a fix round for a required check that already
// failed, else an update for a base that moved.
func (s *Service) reviewed(ctx context.Context, gh GitHub, it *item, pol repoconfig.Config, o verdictOutcome) error {
	reason := fmt.Sprintf("reviewer verdict: %s (confidence %.2f); %s %s", o.rec.Verdict, o.rec.Confidence, CheckVerdict, o.conclusion())
	if o.rec.Problem != "" {
		reason = fmt.Sprintf("the review run produced no valid verdict (%s); %s failure", (&mdcode.Quoter{}).Span(oneLine(o.rec.Problem)), CheckVerdict)
	}
	if err := s.move(ctx, it, ledger.InReview, reason); err != nil {
		return err
	}
	findingsInput(it.rec, pol, o)
	if err := s.next(ctx, gh, it, pol); err != nil {
		return err
	}
	return s.save(ctx, gh, it, "")
}

// reviewMissing ends a review that brought no verdict (its run ended without one, or
// could not be dispatched): the bumper/verdict check fails with the reason, and the pull
// request goes to humans.
func (s *Service) reviewMissing(ctx context.Context, gh GitHub, it *item, why string) error {
	rec := it.rec
	pol, err := s.policyAt(ctx, gh, rec.Repository, rec.BaseCommit)
	switch {
	case isInvalidPolicy(err):
		pol = repoconfig.Default()
	case err != nil:
		return err
	}
	o, err := s.postVerdict(ctx, gh, it, pol, wire.Verdict{Problem: why, HeadCommit: rec.PullHead})
	if err != nil {
		return err
	}
	return s.reviewed(ctx, gh, it, pol, o)
}
