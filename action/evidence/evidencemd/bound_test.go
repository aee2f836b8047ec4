package evidencemd_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/evidence/evidencemd"
	"github.com/bumperdev/bumper/action/evidence/evidencetest"
	"github.com/bumperdev/bumper/internal/testgate"
)

// grown are bundles past what a limit of 20,000 bytes shows, by name, built at a
// scale: twice the scale is twice the items of every list, or texts twice as long.
var grown = map[string]func(scale int) *evidence.Evidence{
	"failures": func(scale int) *evidence.Evidence {
		e := evidencetest.Realistic()
		var failures []evidence.Failure
		for i := range 2_000 * scale {
			failures = append(failures, evidence.Failure{Name: fmt.Sprintf("TestGenerated/case_%05d", i),
				Excerpt: strings.Repeat("    assertion output line\n", 20)})
		}
		e.Tests[0].Failures, e.Tests[0].Failed = failures, len(failures)
		return e
	},
	"long texts": func(scale int) *evidence.Evidence {
		e := evidencetest.Realistic()
		long := strings.Repeat("0123456789abcdef", scale<<14) // 256 KiB a scale
		e.WorkItem.Title, e.OutcomeReason, e.Ledger.Decisions[0].Question = long, long, long
		for i := range e.Commands {
			e.Commands[i].Command = long
		}
		e.Tests[0].Failures = []evidence.Failure{{Name: long, Excerpt: long}, {Name: "TestLines", Excerpt: strings.Repeat("a line\n", scale<<15)}}
		e.Tests[0].Failed = len(e.Tests[0].Failures)
		return e
	},
	"every list": func(scale int) *evidence.Evidence {
		e := evidencetest.Realistic()
		for i := range 2_000 * scale {
			e.Commands = append(e.Commands, evidence.Command{Phase: evidence.PhaseAgent, Command: fmt.Sprintf("step %d", i)})
			e.Phases = append(e.Phases, evidence.Phase{Name: evidence.PhaseAgent, Detail: fmt.Sprintf("detail %d", i)})
			e.Ledger.Decisions = append(e.Ledger.Decisions, evidence.Decision{Question: "q", Choice: "c", Rationale: "r", Confidence: 1})
			e.Diff.Files = append(e.Diff.Files, evidence.FileStat{Path: fmt.Sprintf("dir/file_%05d.go", i), Insertions: 1})
			e.Egress.Denied = append(e.Egress.Denied, evidence.EgressHost{Host: fmt.Sprintf("h%05d.example:443", i), Via: evidence.ViaConnect,
				Count: 1, Reasons: []string{"not in the allowlist"}})
			e.Tests = append(e.Tests, evidence.TestRun{Round: 3, Command: "go test ./...", Failed: 1,
				Failures: []evidence.Failure{{Name: "T", Excerpt: "x"}}})
		}
		return e
	},
}

// TestMarkdownWorkBounded: past what the limit can show, more items in a list or longer
// texts make Render read no more of the bundle to quote it: each text is cut to its
// bound before it is scanned for secrets and quoted, and no more items of a list are
// built than the limit could show. Were either bound lost, the work would grow with
// the bundle, with the product of the items and their length for many long items;
// BenchmarkMarkdown times it.
func TestMarkdownWorkBounded(t *testing.T) {
	testgate.Slow(t, "renders bundles grown tenfold in every list and text, seconds")
	for name, grow := range grown {
		for _, limit := range []int{20_000, 1_500} {
			t.Run(fmt.Sprintf("%s/%d", name, limit), func(t *testing.T) {
				once, twice := evidencemd.QuotedBytes(grow(1), limit), evidencemd.QuotedBytes(grow(2), limit)
				if once == 0 || twice != once {
					t.Errorf("Render read %d bytes of the bundle to quote it, and %d of the bundle twice as big", once, twice)
				}
			})
		}
	}
}

// BenchmarkMarkdown renders bundles far past any limit within GitHub's comment limit
// (TestMarkdownWithinLimits checks what comes out).
func BenchmarkMarkdown(b *testing.B) {
	for name, build := range huge {
		e := build()
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				evidencemd.Render(e, evidencemd.CommentLimit)
			}
		})
	}
}
