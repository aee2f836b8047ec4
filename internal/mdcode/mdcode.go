// Package mdcode quotes text as Markdown code, so that what someone else wrote (an issue
// author, an agent) is shown as it is and never interpreted: a code span for one line, a
// fenced block for many. The delimiters are always longer than any run of backticks in
// the text, so the text cannot end its own quote. Quoter is the one quoter of others'
// text for the status comment, the evidence bundle and the reviewer's verdict: it also
// writes hidden characters (internal/hiddenchar) as [U+XXXX] and breaks up HTML comment
// markers.
package mdcode

import (
	"strings"

	"github.com/bumperdev/bumper/internal/hiddenchar"
)

// Fence is a code fence of backticks longer than any run of backticks in s (at least
// three), so s shown between two of them cannot end the block early.
func Fence(s string) string { return strings.Repeat("`", max(3, LongestRun(s, '`')+1)) }

// Span wraps s, which has no line break, in a code span that shows it as is: its hidden
// characters (internal/hiddenchar) written as [U+XXXX], which inside code is the only way
// to show them, so that no caller can put a raw bidirectional override or zero-width
// character in front of a reader; "(empty)" for an empty s, which a code span cannot show.
func Span(s string) string {
	if s == "" {
		return "(empty)"
	}
	s, _ = hiddenchar.Mark(s)
	d := strings.Repeat("`", LongestRun(s, '`')+1)
	// A span whose text starts or ends with a backtick, or starts and ends with a space,
	// needs a space inside each delimiter (CommonMark strips one).
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") ||
		(strings.HasPrefix(s, " ") && strings.HasSuffix(s, " ") && strings.Trim(s, " ") != "") {
		return d + " " + s + " " + d
	}
	return d + s + d
}

// LongestRun is the length of the longest run of c in s.
func LongestRun(s string, c byte) int {
	longest, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			longest = max(longest, n)
		} else {
			n = 0
		}
	}
	return longest
}

// BreakMarkers breaks every "<!--" and "-->" in s with a space ("<! --", "-- >") and
// reports whether it had to. Text that lands in a comment whose machine record sits in
// an HTML comment must never open or close one, and entities do not decode inside code.
// Inserting a space never forms a new marker, so this ends.
func BreakMarkers(s string) (string, bool) {
	broke := false
	for strings.Contains(s, "<!--") || strings.Contains(s, "-->") {
		broke = true
		s = strings.ReplaceAll(s, "<!--", "<! --")
		s = strings.ReplaceAll(s, "-->", "-- >")
	}
	return s, broke
}
