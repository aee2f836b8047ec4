package mdcode

import (
	"strings"

	"github.com/bumperdev/bumper/internal/hiddenchar"
)

// Quoter quotes others' text as Markdown code that shows it as written, for the status
// comment's hidden-text notice, the evidence bundle and the reviewer's verdict alike:
// valid UTF-8, "\n" line ends, every hidden character (internal/hiddenchar) written as
// "[U+XXXX]", and "<!--" and "-->" broken up (BreakMarkers). Inside code a character
// reference does not decode, so the raw character would hide there as well as anywhere:
// marking it is the only way to show it. The Quoter remembers what it did, for the
// caller's legend; the zero value is ready to use.
type Quoter struct {
	// Hidden is set once a hidden character was written as "[U+XXXX]".
	Hidden bool
	// Marked is set once a comment marker was broken up.
	Marked bool
}

// Text makes s safe to put in code: what Quoter says, without the delimiters.
func (q *Quoter) Text(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(s)
	s, hidden := hiddenchar.Mark(s)
	q.Hidden = q.Hidden || hidden
	out, broke := BreakMarkers(s)
	q.Marked = q.Marked || broke
	return out
}

// Span quotes s as one code span, its line breaks and tabs shown as spaces.
func (q *Quoter) Span(s string) string {
	return Span(strings.NewReplacer("\n", " ", "\t", " ").Replace(q.Text(s)))
}

// Block quotes s as a fenced block with the info string "text", from its opening fence
// to its closing one (no line end after it); trailing line ends of s are dropped.
func (q *Quoter) Block(s string) string { return q.BlockAs("text", s) }

// BlockAs is Block with another info string, such as "diff" for a patch a person may
// copy; info is the caller's constant, never others' text.
func (q *Quoter) BlockAs(info, s string) string {
	s = strings.TrimRight(q.Text(s), "\n")
	f := Fence(s)
	return f + info + "\n" + s + "\n" + f
}
