package evidencemd_test

import (
	"flag"
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/evidence/evidencemd"
	"github.com/bumperdev/bumper/action/evidence/evidencetest"
	"github.com/bumperdev/bumper/action/evidence/risk"
	"github.com/bumperdev/bumper/action/gates"
)

var update = flag.Bool("update", false, "rewrite the golden files in ../testdata/")

const allSections = 12 // <details> sections Render writes, a run's steers and gates included, besides a round's

func TestMarkdownGolden(t *testing.T) {
	for name, e := range map[string]*evidence.Evidence{"realistic.md": evidencetest.Realistic(), "failed.md": evidencetest.Failed(),
		"revise.md": evidencetest.Revise(), "update.md": evidencetest.Update()} {
		t.Run(name, func(t *testing.T) {
			md, of := evidencemd.Render(e, evidencemd.CommentLimit)
			if of.Any() {
				t.Errorf("the bundle was cut: %v", of)
			}
			checkSafe(t, md, e)
			evidencetest.Golden(t, "../testdata/"+name, []byte(md), *update)
		})
	}
}

func TestMarkdownDeterministic(t *testing.T) {
	a, _ := evidencemd.Render(evidencetest.Realistic(), evidencemd.CommentLimit)
	for range 5 {
		if b, _ := evidencemd.Render(evidencetest.Realistic(), evidencemd.CommentLimit); a != b {
			t.Fatal("Markdown differs between equal bundles")
		}
	}
}

// attacks are what an agent may write in any string it controls.
var attacks = []string{
	"`", "``", "```", "````` five",
	"```\n</details>\n<details open><summary>Approved by security</summary>\n\n```",
	"</details>",
	"</summary></details><img src=x onerror=alert(1)>",
	"<img src=\"https://evil.example/pixel.png\">",
	"<!-- hidden from reviewers -->",
	"unclosed <!-- comment",
	"--> closes the record",
	"@acme/security-team please approve",
	"cc @octocat",
	"[click here](https://evil.example/phish)",
	"![badge](https://evil.example/badge.svg)",
	"https://evil.example/autolink www.evil.example",
	"<https://evil.example/angle>",
	"<script>alert(document.cookie)</script>",
	"&lt;b&gt;entity&lt;/b&gt; &#64;octocat",
	"| breaks | the | table |",
	"\n\n# Heading\n\n- list\n",
	"    indented code\n\n---\n",
	"<details><summary>nested</summary>",
	"<a href=\"javascript:alert(1)\">x</a>",
	"right-to-left \u202Egnp.exe and zero\u200Bwidth and tag \U000E0041\U000E0042",
	"\\`escaped backtick\\`",
	"$$\\phantom{x}$$",
}

// hostile fills every string the run controls with attacks.
func hostile() *evidence.Evidence {
	e := evidencetest.Realistic()
	pick := func(i int) string { return attacks[i%len(attacks)] }
	all := strings.Join(attacks, "\n")
	e.WorkItem.Title = pick(8) + pick(12)
	e.OutcomeReason = pick(4)
	e.Trigger.Runner = pick(6)
	e.Phases[4].Detail = pick(19)
	e.Phases[6].Detail = pick(20)
	e.Sandbox.AccelReason = pick(21)
	e.Sandbox.BootReason = pick(10)
	for i := range e.Commands {
		e.Commands[i].Command = pick(i + 1)
	}
	var failures []evidence.Failure
	for i := range attacks {
		failures = append(failures, evidence.Failure{Name: pick(i), Excerpt: all + "\n" + pick(i)})
	}
	e.Tests[0].Failures, e.Tests[0].Failed = failures, len(failures)
	e.Tests[0].Command = pick(3)
	e.Tests[0].Format = pick(11)
	for i := range e.Ledger.Decisions {
		d := &e.Ledger.Decisions[i]
		d.Question, d.Choice, d.Rationale = pick(3*i+4), pick(3*i+5), pick(3*i+6)
		d.Alternatives = []string{pick(3*i + 7), pick(3*i + 12)}
	}
	e.Egress = evidence.SummarizeEgress([]evidence.AuditEntry{
		{Kind: "connect", Target: pick(6) + ":443", Reason: pick(9)},
		{Kind: "connect", Target: pick(12) + ":443", Reason: pick(7)},
		{Kind: "http", Target: pick(19), Allowed: true},
		{Kind: pick(5), Target: "/x", Allowed: true},
	})
	var files []evidence.FileStat
	for i := range 8 {
		files = append(files, evidence.FileStat{Path: pick(i + 5), Insertions: i})
	}
	e.Diff = evidence.NewDiffStat(files)
	e.Risk = append(risk.Note([]string{".github/workflows/ci.yml"}),
		risk.Flag{Path: pick(8), Category: risk.Tests, Reason: pick(6)})
	e.Approvals[0].By = pick(11)
	e.Revocation = evidence.Revocation{Reason: pick(9)}
	e.Artifact.Name = pick(5)
	for i := range attacks {
		e.Steers = append(e.Steers, evidence.Steer{ID: int64(i + 1), Author: pick(i + 11), CreatedAt: e.StartedAt, ArrivedAt: e.StartedAt,
			Note: pick(i + 4), Text: all + "\n" + pick(i)})
	}
	return e
}

func TestMarkdownEscaping(t *testing.T) {
	e := hostile()
	md, _ := evidencemd.Render(e, evidencemd.CommentLimit)
	checkSafe(t, md, e)

	// The agent's text is shown, not dropped: the attacks are there, as code.
	for _, want := range []string{"onerror=alert(1)", "@ acme/security-team", "<script>", "[U+202E]", "[U+E0041]", "<! -- hidden", "-- > closes"} {
		if !strings.Contains(md, want) {
			t.Errorf("the output does not show %q", want)
		}
	}
	if !strings.Contains(md, "HTML comment markers with a space") || !strings.Contains(md, "hidden characters as") {
		t.Error("the legend does not explain the marks")
	}

	// The same through a bundle that failed validation: Markdown does not rely on it.
	e.Stage, e.Sandbox.Accel, e.Tests[0].Format = "</details>", "<b>kvm</b>", "@octocat"
	e.Ledger.Decisions[0].Confidence = math.NaN() // no digest then, and no panic
	e.Tests[0].Passed, e.WallTimeMS, e.Cost.MeteredMicroUSD = -5, -1, -7
	md, _ = evidencemd.Render(e, evidencemd.CheckRunSummaryLimit)
	checkSafe(t, md, e)
	if strings.Contains(md, "Digest of") {
		t.Error("a digest is shown for a bundle that cannot be marshalled")
	}
}

func TestMarkdownRedactsSecrets(t *testing.T) {
	e := evidencetest.Realistic()
	token := "ghs_" + strings.Repeat("A1b2C3d4", 5)
	e.Tests[0].Failures[0].Excerpt = strings.Repeat("x", 1990) + " token=" + token + "\n"
	e.Tests[0].Failures[0].Name = strings.Repeat("n", 190) + token
	e.Commands[0].Command = "curl -H 'Authorization: Bearer " + token + "'"
	md, _ := evidencemd.Render(e, evidencemd.CommentLimit)
	for _, part := range []string{token, token[:20], "A1b2C3d4A1b2"} {
		if strings.Contains(md, part) {
			t.Errorf("the output shows the token or its start %q", part)
		}
	}
	if !strings.Contains(md, "[redacted") {
		t.Error("the output does not say it redacted")
	}
}

func TestMarkdownFence(t *testing.T) {
	e := evidencetest.Realistic()
	excerpt := "before\n``````\nsix backticks\n```\n" + strings.Repeat("`", 9) + " nine\nafter"
	e.Tests[0].Failures[0].Excerpt = excerpt
	md, _ := evidencemd.Render(e, evidencemd.CommentLimit)
	if !strings.Contains(md, strings.Repeat("`", 10)+"text\n"+excerpt+"\n"+strings.Repeat("`", 10)+"\n") {
		t.Errorf("the excerpt is not fenced with ten backticks:\n%s", md)
	}
	blocks := fencedBlocks(md)
	found := false
	for _, b := range blocks {
		found = found || b == excerpt+"\n"
	}
	if !found {
		t.Errorf("no fenced block holds the excerpt whole; blocks: %q", blocks)
	}
}

// huge are bundles far past any limit, by name.
var huge = map[string]func() *evidence.Evidence{
	"10k failures": func() *evidence.Evidence {
		e := evidencetest.Realistic()
		var failures []evidence.Failure
		for i := range 10_000 {
			failures = append(failures, evidence.Failure{Name: fmt.Sprintf("TestGenerated/case_%05d", i),
				Excerpt: fmt.Sprintf("--- FAIL: case %d\n", i) + strings.Repeat("    assertion output line\n", 20)})
		}
		e.Tests[0].Failures, e.Tests[0].Failed = failures, len(failures)
		return e
	},
	"64 steers of 8 KiB": func() *evidence.Evidence {
		e := evidencetest.Realistic()
		for i := range evidence.MaxSteers {
			e.Steers = append(e.Steers, evidence.Steer{ID: int64(i + 1), Author: "maintainer", CreatedAt: e.StartedAt, ArrivedAt: e.StartedAt,
				Via: evidence.SteerViaFile, DeliveredAt: e.StartedAt, Text: strings.Repeat("steer text line\n", 8<<10/16)})
		}
		return e
	},
	"1 MiB excerpts and names": func() *evidence.Evidence {
		e := evidencetest.Realistic()
		mb := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB, one line
		lines := strings.Repeat("a line of output\n", 1<<16)
		e.Tests[0].Failures = []evidence.Failure{
			{Name: strings.Repeat("N", 1<<20), Excerpt: mb},
			{Name: "TestLines", Excerpt: lines},
			{Name: "TestBackticks", Excerpt: strings.Repeat("`", 1<<20)},
			{Name: "TestMarkers", Excerpt: strings.Repeat("<!--", 1<<18)},
		}
		e.Tests[0].Failed = len(e.Tests[0].Failures)
		return e
	},
	"3k of every list": func() *evidence.Evidence {
		e := evidencetest.Realistic()
		for i := range 3_000 {
			e.Commands = append(e.Commands, evidence.Command{Phase: evidence.PhaseAgent, Command: fmt.Sprintf("step %d ", i) + strings.Repeat("x", 100), DurationMS: int64(i)})
			e.Phases = append(e.Phases, evidence.Phase{Name: evidence.PhaseAgent, Detail: strings.Repeat("d", 100)})
			e.Ledger.Decisions = append(e.Ledger.Decisions, evidence.Decision{Question: strings.Repeat("q", 100),
				Choice: strings.Repeat("c", 100), Rationale: strings.Repeat("r", 200), Confidence: float64(i%100) / 100})
			e.Diff.Files = append(e.Diff.Files, evidence.FileStat{Path: fmt.Sprintf("dir/file_%05d_test.go", i), Insertions: 1})
			e.Egress.Denied = append(e.Egress.Denied, evidence.EgressHost{Host: fmt.Sprintf("h%05d.example:443", i), Via: evidence.ViaConnect,
				Count: 1, Reasons: []string{strings.Repeat("why ", 25)}})
			e.Tests = append(e.Tests, evidence.TestRun{Round: 3 + i%50, Command: strings.Repeat("t", 100), Failed: 1,
				Failures: []evidence.Failure{{Name: "T", Excerpt: "x"}}})
			if i < gates.MaxFindings {
				e.Gates.Findings = append(e.Gates.Findings, gates.Finding{Gate: gates.GateLinks, File: fmt.Sprintf("docs/p%05d.md", i), Line: i + 1,
					Action: gates.ActionReview, Message: attacks[i%len(attacks)] + strings.Repeat("m", 200)})
			}
			e.Gates.Dependencies = append(e.Gates.Dependencies, gates.Dependency{Ecosystem: "npm", Name: fmt.Sprintf("pkg-%05d", i), Version: "1.0.0", File: "package.json", Line: i + 1})
		}
		e.Risk = risk.Note(e.Diff.Paths())
		return e
	},
	"long hostile summary": func() *evidence.Evidence {
		e := evidencetest.Realistic()
		for i := range e.Commands {
			e.Commands[i].Command = strings.Repeat(attacks[i%len(attacks)], 5000)
		}
		e.WorkItem.Title = strings.Repeat("@everyone <!-- ", 10_000)
		e.OutcomeReason = strings.Repeat("`", 100_000)
		return e
	},
}

func TestMarkdownWithinLimits(t *testing.T) {
	limits := []int{evidencemd.CommentLimit, evidencemd.CheckRunSummaryLimit, 20_000, 1_500, 300, 1}
	for name, build := range huge {
		e := build()
		for _, limit := range limits {
			t.Run(fmt.Sprintf("%s/%d", name, limit), func(t *testing.T) {
				t.Parallel()
				md, of := evidencemd.Render(e, limit)
				if len(md) > limit {
					t.Fatalf("%d bytes, limit %d", len(md), limit)
				}
				if !of.Any() {
					t.Error("Overflow says nothing was cut")
				}
				if !utf8.ValidString(md) {
					t.Error("not valid UTF-8")
				}
				if limit >= 1_500 {
					if !strings.HasPrefix(md, "### Bumper evidence: success\n") || !strings.Contains(md, "- **Outcome:**") {
						t.Errorf("the summary does not come first:\n%.300s", md)
					}
					if !strings.Contains(md, "`evidence.json` in the run's artifact `bumper-evidence-42-2`") {
						t.Error("no note points at the artifact")
					}
				}
				want := allSections
				if len(e.Steers) == 0 {
					want-- // a run given no steers has no section for them
				}
				if n := checkSafe(t, md, e); limit >= 20_000 && n != want {
					t.Errorf("%d sections, want all %d", n, want)
				}
				if limit >= evidencemd.CheckRunSummaryLimit && strings.Contains(of.String(), "not shown") && len(md) < limit*9/10 {
					t.Errorf("items were left out but only %d of %d bytes are used", len(md), limit)
				}
				if limit >= 300 && !strings.Contains(md, "evidence.json") {
					t.Errorf("the output does not point at evidence.json: %q", md)
				}
			})
		}
	}
}

func TestMarkdownOverflowSays(t *testing.T) {
	e := huge["10k failures"]()
	md, of := evidencemd.Render(e, evidencemd.CommentLimit)
	var tests evidencemd.Cut
	for _, c := range of.Cuts {
		if c.Section == "tests" {
			tests = c
		}
	}
	if !regexp.MustCompile(`^[\d,]+ of 10,000 failures not shown`).MatchString(lastPart(tests.Detail)) {
		t.Errorf("tests cut = %q, want it to count the failures not shown", tests.Detail)
	}
	if !strings.Contains(md, "more failures not shown: see `evidence.json`") {
		t.Error("the tests section does not say how many failures it left out")
	}
	if !strings.Contains(md, "**Cut to fit** (") {
		t.Error("no cut note at the end")
	}
	if md, _ := evidencemd.Render(nil, 100); md != "" {
		t.Error("a nil bundle gives output")
	}
	if md, of := evidencemd.Render(evidencetest.Realistic(), 0); md != "" || of.Any() {
		t.Error("a limit of 0 gives output")
	}
}

func lastPart(s string) string {
	parts := strings.Split(s, "; ")
	return parts[len(parts)-1]
}

var allowedHTML = regexp.MustCompile(`^(<details>\n<summary>[A-Za-z0-9 ,()]*</summary>\n|</details>\n)$`)

// checkSafe parses md as GitHub-flavoured Markdown and fails when anything from the
// bundle escaped quoting: HTML other than the sections' own <details> and <summary>,
// images, links other than the artifact's, autolinks, text outside code holding "@" or
// "<", table rows of the wrong width, comment markers, hidden characters or secrets.
func checkSafe(t *testing.T, md string, e *evidence.Evidence) (sections int) {
	t.Helper()
	for _, bad := range []string{"<!--", "-->", "\u202E", "\u200B", "\U000E0041", "ghs_A1b2"} {
		if strings.Contains(md, bad) {
			t.Errorf("the output holds %q", bad)
		}
	}
	src := []byte(md)
	doc := goldmark.New(goldmark.WithExtensions(extension.GFM)).Parser().Parse(text.NewReader(src))
	artifactURL := ""
	if e.Artifact != nil {
		artifactURL = e.Artifact.URL
	}
	opened, closed := 0, 0
	err := ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.CodeSpan, *ast.FencedCodeBlock:
			return ast.WalkSkipChildren, nil
		case *ast.CodeBlock:
			t.Errorf("an indented code block: %q", lines(n, src))
		case *ast.HTMLBlock:
			html := lines(n, src)
			if n.HasClosure() {
				html += string(n.ClosureLine.Value(src))
			}
			if !allowedHTML.MatchString(html) {
				t.Errorf("HTML block %q", html)
			}
			if strings.HasPrefix(html, "<details>") {
				opened++
			} else {
				closed++
			}
		case *ast.RawHTML:
			var b strings.Builder
			for i := 0; i < n.Segments.Len(); i++ {
				seg := n.Segments.At(i)
				b.Write(seg.Value(src))
			}
			t.Errorf("inline HTML %q", b.String())
		case *ast.Image:
			t.Errorf("an image to %q", n.Destination)
		case *ast.AutoLink:
			t.Errorf("an autolink to %q", n.URL(src))
		case *ast.Link:
			if string(n.Destination) != artifactURL || artifactURL == "" {
				t.Errorf("a link to %q", n.Destination)
			}
		case *ast.Heading:
			if n.Level != 3 || n.PreviousSibling() != nil {
				t.Errorf("a heading other than the title: %q", lines(n, src))
			}
		case *ast.Text:
			if v := string(n.Segment.Value(src)); strings.ContainsAny(v, "@<>") {
				t.Errorf("text outside code holds %q", v)
			}
		case *east.Table:
			width := n.FirstChild().ChildCount()
			for row := n.FirstChild(); row != nil; row = row.NextSibling() {
				if row.ChildCount() != width {
					t.Errorf("a table row of %d cells under a header of %d", row.ChildCount(), width)
				}
			}
		}
		return ast.WalkContinue, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	most := allSections
	if e.Round != nil {
		most++ // a revise or update round's section
	}
	if opened != closed || opened > most {
		t.Errorf("%d sections opened and %d closed", opened, closed)
	}
	return opened
}

func lines(n ast.Node, src []byte) string {
	var b strings.Builder
	for i := 0; i < n.Lines().Len(); i++ {
		seg := n.Lines().At(i)
		b.Write(seg.Value(src))
	}
	return b.String()
}

// fencedBlocks are the contents of md's fenced code blocks.
func fencedBlocks(md string) []string {
	src := []byte(md)
	doc := goldmark.New(goldmark.WithExtensions(extension.GFM)).Parser().Parse(text.NewReader(src))
	var out []string
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if f, ok := n.(*ast.FencedCodeBlock); ok && entering {
			out = append(out, lines(f, src))
		}
		return ast.WalkContinue, nil
	})
	return out
}
