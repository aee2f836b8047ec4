package evidencemd_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/evidence/evidencemd"
	"github.com/bumperdev/bumper/action/evidence/evidencetest"
	"github.com/bumperdev/bumper/app/reveal"
)

// TestHiddenCharactersAgreeWithReveal walks every code point: the evidence's Markdown
// marks a character as [U+XXXX] exactly when the status comment's hidden-text notice
// (app/reveal) reports it. Were they to disagree, a character the approver was told of
// would reach the pull request's reviewers raw, or the other way round.
func TestHiddenCharactersAgreeWithReveal(t *testing.T) {
	var all []rune
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if r < 0xD800 || r > 0xDFFF { // surrogates are not characters of a UTF-8 text
			all = append(all, r)
		}
	}

	// What reveal reports: each character between spaces (no emoji around it), in a title.
	flagged := map[rune]bool{}
	const scanChunk = 1 << 14
	for i := 0; i < len(all); i += scanChunk {
		var b strings.Builder
		for _, r := range all[i:min(i+scanChunk, len(all))] {
			b.WriteString(" " + string(r) + " ")
		}
		for _, f := range reveal.ScanTitle(b.String()) {
			for _, r := range f.Text {
				flagged[r] = true
			}
		}
	}

	// What the evidence marks: the same characters in test failures' output excerpts.
	marked := map[rune]bool{}
	markRE := regexp.MustCompile(`\[U\+([0-9A-F]{4,6})\]`)
	// Fewer than an excerpt's 2,000 bytes even where Neutralize spells a look-alike
	// character out.
	const perExcerpt, perBundle = 120, 800
	for i := 0; i < len(all); i += perExcerpt * perBundle {
		e := evidencetest.Realistic()
		e.Tests[0].Failures = nil
		for j := i; j < min(i+perExcerpt*perBundle, len(all)); j += perExcerpt {
			var b strings.Builder
			for _, r := range all[j:min(j+perExcerpt, len(all))] {
				b.WriteString(" " + string(r) + " ")
			}
			e.Tests[0].Failures = append(e.Tests[0].Failures, evidence.Failure{Name: fmt.Sprint("chunk ", j), Excerpt: b.String()})
		}
		md, of := evidencemd.Render(e, 1<<30)
		if of.Any() {
			t.Fatalf("the bundle was cut, so not every character was shown: %v", of)
		}
		for _, m := range markRE.FindAllStringSubmatch(md, -1) {
			r, _ := strconv.ParseUint(m[1], 16, 32)
			marked[rune(r)] = true
		}
	}

	var disagree []string
	for _, r := range all {
		if flagged[r] != marked[r] {
			disagree = append(disagree, fmt.Sprintf("%U (reveal %v, evidence %v)", r, flagged[r], marked[r]))
		}
	}
	if len(disagree) > 0 {
		t.Errorf("%d code points disagree, first: %s", len(disagree), strings.Join(disagree[:min(20, len(disagree))], ", "))
	}
	// Unicode has over 4,000 default-ignorable code points alone.
	if len(flagged) < 4000 || len(marked) < 4000 {
		t.Errorf("reveal flagged %d and the evidence marked %d code points: too few for the walk to have worked", len(flagged), len(marked))
	}
}
