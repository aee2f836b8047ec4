// Package evidencemd renders an evidence bundle (action/evidence) as Markdown, for the
// pull request comment and the check run summary, within GitHub's limits.
//
// Much of a bundle comes from inside the VM, which is hostile. Render quotes every
// string taken from it in code spans or fenced blocks whose fences are longer than any
// backtick run inside (internal/mdcode's Quoter), so HTML, links, images and @mentions
// in it are shown, not rendered; writes hidden characters (bidirectional controls,
// zero-width and tag characters) as [U+XXXX]; breaks up "<!--" and "-->" so no data can
// open or close an HTML comment; redacts secret-looking text (evidence.RedactText); and
// stays within a byte limit, cutting the longest parts first and saying what it cut and
// where the whole record is.
package evidencemd

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/evidence/risk"
)

// Limits of GitHub's Markdown fields, for Render's limit.
const (
	// CommentLimit is the most characters of an issue or pull request comment.
	CommentLimit = 65536
	// CheckRunSummaryLimit is the most characters of a check run's output summary.
	CheckRunSummaryLimit = 65535
)

// Overflow says what Render shortened or left out to stay within its limit (and its
// fixed bounds on each part, such as an excerpt's lines). The whole record is always in
// evidence.json.
type Overflow struct {
	// Cuts are in the order of the rendering, one per part that was cut.
	Cuts []Cut
}

// Cut is one part Render shortened: the section ("summary", "phases", "commands",
// "tests", "files", "egress", "decisions", "sandbox", "approvals", "audit",
// "revocation") and what was cut.
type Cut struct {
	Section string
	Detail  string
}

// Any reports whether anything was cut.
func (o Overflow) Any() bool { return len(o.Cuts) > 0 }

func (o Overflow) String() string {
	parts := make([]string, len(o.Cuts))
	for i, c := range o.Cuts {
		parts[i] = c.Section + ": " + c.Detail
	}
	return strings.Join(parts, "; ")
}

// Fixed bounds of the rendering, whatever the limit.
const (
	mdExcerptBytes = 2000 // of one failure's output
	mdExcerptLines = 40
	mdName         = 200 // characters of a test name, path, host or title
	mdText         = 300 // characters of a command, reason or decision text
	mdSummaryRisk  = 10  // risk flags listed in the summary
	mdSummaryRound = 10  // verification rounds listed in the summary
)

// Render renders the bundle for the pull request comment and the check run summary,
// in at most limit bytes (never fewer than characters, so CommentLimit and
// CheckRunSummaryLimit may be given as they are).
//
// The summary comes first: outcome, tests, verification rounds, diff stat, cost, risk
// flags, wall time, decisions, egress and the token's revocation. Then each part in a
// collapsed <details> section: phases, commands, tests with output excerpts, changed
// files, egress, decisions (least confident first), sandbox, approvals, audit log head
// and token revocation. Last, the digest of evidence.json.
//
// Every string taken from the bundle is quoted: in a code span, or a fenced block whose
// fence is longer than any backtick run inside, with hidden characters written as
// [U+XXXX], "<!--" and "-->" broken up with a space, and secret-looking text redacted.
// So no text from the run becomes HTML, a link, an image or an @mention, and none can
// open or close an HTML comment (the caller may append one holding a record).
//
// Each part has fixed bounds (an excerpt shows 40 lines or 2,000 bytes); when the whole
// is still too long, the longest sections are cut first (tests weigh more than the
// rest), item by item, with a line saying how many were left out and that the whole
// record is evidence.json in the run's artifact. Overflow lists every cut. A bundle need
// not be valid to be rendered safely.
func Render(e *evidence.Evidence, limit int) (string, Overflow) {
	if e == nil || limit <= 0 {
		return "", Overflow{}
	}
	return newRenderer(e, limit).render(limit)
}

// render is Render's work, on a renderer made for the same limit.
func (r *renderer) render(limit int) (string, Overflow) {
	head := r.head(false)
	secs := r.sections()
	footMax := r.footer(append([]string{"summary"}, sectionNames(secs)...), true, true)

	var of Overflow
	avail := limit - len(head) - len(footMax)
	if avail < 0 {
		head = r.head(true)
		of.Cuts = append(of.Cuts, Cut{Section: "summary", Detail: "shortened to outcome, tests and cost"})
		avail = limit - len(head) - len(footMax)
	}
	if avail < 0 {
		return r.minimal(limit, secs)
	}
	texts, cuts := fit(secs, avail)
	var body strings.Builder
	var cutNames []string
	if of.Any() {
		cutNames = append(cutNames, "summary")
	}
	for i, s := range secs {
		body.WriteString(texts[i])
		if len(cuts[i]) > 0 {
			of.Cuts = append(of.Cuts, Cut{Section: s.name, Detail: strings.Join(cuts[i], "; ")})
			cutNames = append(cutNames, s.name)
		}
	}
	out := head + body.String() + r.footer(cutNames, of.Any(), false)
	if len(out) > limit { // cannot happen: every part stays within its share
		return r.minimal(limit, secs)
	}
	return out, of
}

// fit renders the sections within total bytes. When they do not all fit whole, room is
// shared out from the smallest section (relative to its weight) to the largest: each
// takes what it needs up to its weighted share of what is left, and what a section
// does not use goes to those after it.
func fit(secs []*section, total int) ([]string, [][]string) {
	texts := make([]string, len(secs))
	cuts := make([][]string, len(secs))
	sizes := make([]int, len(secs))
	sum := 0
	for i, s := range secs {
		sizes[i] = s.size()
		sum += sizes[i]
	}
	if sum <= total {
		for i, s := range secs {
			texts[i], cuts[i] = s.render(sizes[i])
		}
		return texts, cuts
	}
	order := make([]int, len(secs))
	wsum := 0
	for i, s := range secs {
		order[i] = i
		wsum += s.weight
	}
	sort.SliceStable(order, func(a, b int) bool {
		i, j := order[a], order[b]
		return sizes[i]*secs[j].weight < sizes[j]*secs[i].weight
	})
	left := total
	for _, i := range order {
		share := left * secs[i].weight / max(wsum, 1)
		texts[i], cuts[i] = secs[i].render(min(sizes[i], share))
		left -= len(texts[i])
		wsum -= secs[i].weight
	}
	return texts, cuts
}

// renderer holds what every part of the rendering shares.
type renderer struct {
	e        *evidence.Evidence
	maxItems int // items worth building per list: no more fit in the limit
	q        *quoter
	ref      string // where the whole record is, as Markdown
	digest   string
}

var (
	artifactName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)
	artifactURL  = regexp.MustCompile(`^https://[A-Za-z0-9.-]+(:[0-9]+)?/[A-Za-z0-9._~/%-]*$`)
)

func newRenderer(e *evidence.Evidence, limit int) *renderer {
	// Every item is longer than 12 bytes, so no more than limit/12 of a list can show.
	r := &renderer{e: e, maxItems: limit/12 + 1, q: &quoter{}, ref: "`" + evidence.FileName + "` in the run's artifacts"}
	if a := e.Artifact; a != nil && artifactName.MatchString(a.Name) {
		r.ref = "`" + evidence.FileName + "` in the run's artifact `" + a.Name + "`"
		if len(a.URL) <= 2048 && artifactURL.MatchString(a.URL) {
			r.ref += " ([download](" + a.URL + "))"
		}
	}
	if d, err := e.Digest(); err == nil {
		r.digest = d
	}
	return r
}

// head is the title and the summary; compact keeps outcome (without its reason), tests
// and cost only.
func (r *renderer) head(compact bool) string {
	e, q := r.e, r.q
	var b strings.Builder
	fmt.Fprintf(&b, "### Bumper evidence: %s\n\n", q.word(string(e.Outcome)))
	fmt.Fprintf(&b, "%s %s · stage %s · attempt %d\n\n",
		q.inline(fmt.Sprintf("%s#%d", e.WorkItem.Repository, e.WorkItem.Issue), mdName),
		q.inline(e.WorkItem.Title, mdName), q.word(string(e.Stage)), e.Attempt)

	b.WriteString("- **Outcome:** " + q.word(string(e.Outcome)))
	if e.OutcomeReason != "" && !compact {
		b.WriteString(": " + q.inline(e.OutcomeReason, mdText))
	}
	b.WriteString("\n- **Tests:** " + r.testsLine() + "\n")
	if !compact {
		b.WriteString("- **Verification rounds:** " + r.roundsLine() + "\n")
		b.WriteString("- **Diff:** " + r.diffLine() + "\n")
	}
	if r.e.Harness != nil {
		b.WriteString("- **Agent:** " + r.harnessLine() + "\n")
	}
	if r.e.Review != nil {
		b.WriteString("- **Review:** " + r.reviewLine() + "\n")
	}
	if r.e.Round != nil {
		b.WriteString("- **Round:** " + r.roundLine() + "\n")
	}
	b.WriteString("- **Cost:** " + r.costLine() + "\n")
	if compact {
		b.WriteString("\n")
		return b.String()
	}
	b.WriteString(r.riskLines())
	fmt.Fprintf(&b, "- **Wall time:** %s\n", duration(e.WallTimeMS))
	b.WriteString("- **Decisions:** " + r.decisionsLine() + "\n")
	b.WriteString("- **Egress:** " + r.egressLine() + "\n")
	if len(e.Dependencies) > 0 {
		// The repositories besides its own the run could read: what a reviewer weighs
		// when the change names or copies them.
		names := make([]string, len(e.Dependencies))
		for i, d := range e.Dependencies {
			names[i] = r.q.inline(d, 120)
		}
		b.WriteString("- **Dependencies:** fetched read-only: " + strings.Join(names, ", ") + "\n")
	}
	b.WriteString("- " + r.tokenLine() + "\n\n")
	return b.String()
}

// rounds sums the test runs of each verification round, in round order.
type roundSum struct {
	round                   int
	passed, failed, skipped int64
	ok                      bool
}

func (r *renderer) rounds() []roundSum {
	by := map[int]*roundSum{}
	for _, t := range r.e.Tests {
		s := by[t.Round]
		if s == nil {
			s = &roundSum{round: t.Round, ok: true}
			by[t.Round] = s
		}
		s.passed += int64(max(t.Passed, 0))
		s.failed += int64(max(t.Failed, 0))
		s.skipped += int64(max(t.Skipped, 0))
		if t.ExitCode != 0 || t.Failed > 0 {
			s.ok = false
		}
	}
	out := make([]roundSum, 0, len(by))
	for _, s := range by {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b roundSum) int { return a.round - b.round })
	return out
}

func (r *renderer) testsLine() string {
	rs := r.rounds()
	if len(rs) == 0 {
		return "no tests ran"
	}
	last := rs[len(rs)-1]
	verdict := "passed"
	if !last.ok {
		verdict = "**failed**"
	}
	return fmt.Sprintf("%s in the last round (%d): %s passed, %s failed, %s skipped", verdict, last.round,
		commas(last.passed), commas(last.failed), commas(last.skipped))
}

func (r *renderer) roundsLine() string {
	rs := r.rounds()
	if len(rs) == 0 {
		return "none"
	}
	parts := make([]string, 0, min(len(rs), mdSummaryRound)+1)
	for i, s := range rs {
		if i == mdSummaryRound {
			parts = append(parts, fmt.Sprintf("and %d more", len(rs)-mdSummaryRound))
			break
		}
		if s.ok {
			parts = append(parts, fmt.Sprintf("round %d passed", s.round))
		} else {
			parts = append(parts, fmt.Sprintf("round %d failed (%s failed)", s.round, commas(s.failed)))
		}
	}
	return fmt.Sprintf("%d: %s", len(rs), strings.Join(parts, ", "))
}

func (r *renderer) diffLine() string {
	e, q := r.e, r.q
	d := e.Diff
	s := fmt.Sprintf("%s changed, +%s −%s; base %s", plural(int64(d.FilesChanged), "file"),
		commas(int64(d.Insertions)), commas(int64(d.Deletions)), q.inline(e.BaseCommit, 64))
	if e.HeadCommit != "" {
		s += ", head " + q.inline(e.HeadCommit, 64)
		if e.VerifiedCommit != "" && e.VerifiedCommit != e.HeadCommit {
			s += " (the agent's " + q.inline(e.VerifiedCommit, 64) + ", rewritten as the App's)"
		}
		switch e.PublishedVia {
		case "api":
			s += ", published through GitHub's API (signed, Verified)"
		case "git-push":
			s += ", pushed unsigned with git"
			if e.PublishedNote != "" {
				s += " (" + q.inline(e.PublishedNote, 300) + ")"
			}
		}
	}
	if e.Branch != "" {
		s += " on " + q.inline(e.Branch, 64)
	}
	if e.PullRequest > 0 {
		s += fmt.Sprintf(", pull request #%d", e.PullRequest)
	}
	return s
}

// reviewLine is a review run's verdict, or why there is none.
func (r *renderer) reviewLine() string {
	v := r.e.Review
	s := "head " + r.q.word(cutCommit(v.HeadCommit))
	if v.Verdict != "" {
		s += ": " + r.q.word(v.Verdict)
		if v.Confidence != nil {
			s += fmt.Sprintf(" (confidence %.2f)", *v.Confidence)
		}
		s += ", " + plural(int64(v.Findings), "finding")
	}
	if v.Problem != "" {
		s += "; no valid verdict: " + r.q.inline(v.Problem, mdText)
	}
	if v.VerdictDigest != "" {
		s += "; verdict.json " + r.q.inline(v.VerdictDigest, 80)
	}
	return s
}

// cutCommit is a commit's short form.
func cutCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

// maxToolNames is how many tools the agent line names; the rest are counted.
const maxToolNames = 8

// harnessLine names the agent and what it did: turns and tool calls, most used first.
func (r *renderer) harnessLine() string {
	h := r.e.Harness
	s := r.q.word(h.Name)
	if h.Version != "" {
		s += " " + r.q.word(h.Version)
	}
	names := make([]string, 0, len(h.ToolCalls))
	total := 0
	for name, n := range h.ToolCalls {
		names = append(names, name)
		total += n
	}
	sort.Slice(names, func(i, j int) bool {
		if h.ToolCalls[names[i]] != h.ToolCalls[names[j]] {
			return h.ToolCalls[names[i]] > h.ToolCalls[names[j]]
		}
		return names[i] < names[j]
	})
	s += ": " + plural(int64(h.Turns), "turn") + ", " + plural(int64(total), "tool call")
	if len(names) > 0 {
		parts := make([]string, 0, maxToolNames+1)
		for i, name := range names {
			if i == maxToolNames {
				parts = append(parts, fmt.Sprintf("%d more tools", len(names)-maxToolNames))
				break
			}
			parts = append(parts, fmt.Sprintf("%s %d", r.q.inline(name, 100), h.ToolCalls[name]))
		}
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	if h.UnknownEvents > 0 {
		s += "; " + plural(int64(h.UnknownEvents), "event") + " not understood"
	}
	return s
}

func (r *renderer) costLine() string {
	c := r.e.Cost
	s := fmt.Sprintf("%s metered over %s", usd(c.MeteredMicroUSD), plural(c.MeteredCalls, "model call"))
	if c.Estimated || c.EstimatedCalls > 0 {
		s += fmt.Sprintf(" (**estimated**: the worst case was charged for %s that reported no usage)", plural(c.EstimatedCalls, "call"))
	}
	if c.SelfReportedMicroUSD != nil {
		s += "; the harness reported " + usd(*c.SelfReportedMicroUSD)
		if c.SelfReportedDisagrees {
			s += " (**more than 20 % off** the metered cost, which stands)"
		}
	} else {
		s += "; the harness reported nothing"
	}
	if c.BudgetMicroUSD > 0 {
		s += "; budget " + usd(c.BudgetMicroUSD)
	}
	return s
}

func (r *renderer) riskLines() string {
	q := r.q
	flags := r.e.Risk
	if len(flags) == 0 {
		return "- **Risk:** no changed file governs the checks\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "- **Risk:** %s the checks:\n", plural(int64(len(flags)), "changed file governs", "changed files govern"))
	for i, f := range flags {
		if i == mdSummaryRisk {
			fmt.Fprintf(&b, "  - …and %s more: see %s\n", commas(int64(len(flags)-mdSummaryRisk)), r.ref)
			break
		}
		reason := q.inline(f.Reason, mdText)
		if risk.Known(f.Reason) { // risk.Note's own text; anything else is quoted
			reason = f.Reason
		}
		fmt.Fprintf(&b, "  - %s (%s): %s\n", q.inline(f.Path, mdName), q.word(string(f.Category)), reason)
	}
	return b.String()
}

func (r *renderer) decisionsLine() string {
	l, q := r.e.Ledger, r.q
	switch l.Status {
	case evidence.LedgerAbsent:
		return "the agent wrote no decision ledger"
	case evidence.LedgerInvalid:
		return "**the agent's decision ledger was invalid**: " + q.inline(l.Error, mdText)
	case evidence.LedgerOK:
	default:
		return "ledger status " + q.word(string(l.Status))
	}
	if len(l.Decisions) == 0 {
		return "none: the agent reports no judgment call the issue left open"
	}
	least := l.LeastConfidentFirst()[0]
	return fmt.Sprintf("%s where the issue was silent; least confident (%s): %s",
		plural(int64(len(l.Decisions)), "judgment call"), confidence(least.Confidence), q.inline(least.Question, mdText))
}

func (r *renderer) egressLine() string {
	g := r.e.Egress
	s := fmt.Sprintf("%s allowed to %s", plural(g.AllowedRequests, "request"),
		plural(int64(len(g.Allowed)+g.OmittedAllowedHosts), "destination"))
	if g.DeniedRequests > 0 {
		s += fmt.Sprintf("; **%s denied** to %s", commas(g.DeniedRequests),
			plural(int64(len(g.Denied)+g.OmittedDeniedHosts), "destination"))
	} else {
		s += "; none denied"
	}
	return s
}

func (r *renderer) tokenLine() string {
	v := r.e.Revocation
	if v.Revoked {
		return "**Token:** revoked at " + stamp(v.At)
	}
	s := "**Token: not revoked**"
	if v.Reason != "" {
		s += ": " + r.q.inline(v.Reason, mdText)
	}
	return s
}

// footer is the digest, the legend for what quoting did and, when something was cut,
// where the whole record is. worst assumes every legend entry, for reserving room.
func (r *renderer) footer(cutNames []string, cut, worst bool) string {
	var b strings.Builder
	if r.digest != "" {
		fmt.Fprintf(&b, "Digest of `%s`: `%s`.\n", evidence.FileName, r.digest)
	}
	q := r.q
	var legend []string
	if worst || q.Hidden {
		legend = append(legend, "hidden characters as `[U+XXXX]`")
	}
	if worst || q.Marked {
		legend = append(legend, "HTML comment markers with a space (`<! --`, `-- >`)")
	}
	if worst || q.redacted {
		legend = append(legend, "text that looks like a secret as `[redacted …]`")
	}
	if len(legend) > 0 {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString("Text from the run is quoted as code, with " + strings.Join(legend, ", ") + ".\n")
	}
	if cut {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString("**Cut to fit**")
		if len(cutNames) > 0 {
			b.WriteString(" (" + strings.Join(cutNames, ", ") + ")")
		}
		b.WriteString(": the whole record is " + r.ref + ".\n")
	}
	return b.String()
}

// minimal is what fits when not even the compact summary does.
func (r *renderer) minimal(limit int, secs []*section) (string, Overflow) {
	of := Overflow{Cuts: []Cut{{Section: "summary", Detail: "left out"}}}
	for _, s := range secs {
		of.Cuts = append(of.Cuts, Cut{Section: s.name, Detail: "left out"})
	}
	// The first that fits; none is cut, so none leaves markup half written.
	text := ""
	for _, t := range []string{
		"### Bumper evidence\n\nToo long to show here: the whole record is " + r.ref + ".\n",
		"Too long to show here: see `" + evidence.FileName + "`.\n",
		"See " + evidence.FileName + ".\n",
	} {
		if len(t) <= limit {
			text = t
			break
		}
	}
	return text, of
}
