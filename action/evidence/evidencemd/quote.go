package evidencemd

import (
	"fmt"
	"strings"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/internal/ghref"
	"github.com/bumperdev/bumper/internal/hiddenchar"
	"github.com/bumperdev/bumper/internal/mdcode"
	"github.com/bumperdev/bumper/internal/textcut"
)

// quoter writes untrusted text as Markdown that shows it, never renders it: code spans
// and fenced blocks through mdcode.Quoter (hidden characters as [U+XXXX], comment
// markers broken up), with secret-looking text redacted first. It remembers what it had
// to do, for the legend (mdcode.Quoter's Hidden and Marked, and redacted), and counts
// the texts it cut.
type quoter struct {
	mdcode.Quoter
	redacted bool // redacted a secret-looking text
	cuts     int  // texts cut to their bound
	// read counts the bytes prepared for quoting: the rendering's work, which its
	// bounds keep from growing with the bundle (TestMarkdownWorkBounded).
	read int
}

// redactWindow is how far past what is shown a text is searched for secrets, so a
// secret that starts in the shown part is redacted whole, not cut to a prefix (a GitHub
// token's prefix is all of its entropy).
const redactWindow = 1024

// prepare takes at most maxBytes of s (on a character boundary), as valid UTF-8 with
// "\n" line ends, secrets redacted and GitHub's references neutralized
// (internal/ghref): the pull request's body is a commit message on the default branch
// where a repository merges with "pull request title and description", and there code
// quotes mean nothing, so nothing quoted may close, mention or cross-reference.
func (q *quoter) prepare(s string, maxBytes int) string {
	s = textcut.Bytes(s, maxBytes)
	q.read += len(s)
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(s)
	if r := evidence.RedactText(s); r != s {
		q.redacted = true
		s = r
	}
	if strings.IndexFunc(s, hiddenchar.Is) >= 0 {
		q.Hidden = true // Neutralize writes them as [U+XXXX] first: the legend says so
	}
	return ghref.Neutralize(s)
}

// inline quotes s as one code span: line breaks and tabs shown as spaces, cut at limit
// characters with the length of the whole.
func (q *quoter) inline(s string, limit int) string {
	window := 4*limit + redactWindow // a character is at most 4 bytes
	p := q.prepare(s, window)
	cut, more := textcut.Runes(p, limit)
	span := q.Span(cut)
	if more > 0 || len(s) > window {
		q.cuts++
		return span + fmt.Sprintf(" … (cut from %s bytes)", commas(int64(len(s))))
	}
	return span
}

// cell is inline for a table cell: a pipe would end the cell, even inside code, so it
// is escaped (GitHub shows "\|" in a cell's code span as "|").
func (q *quoter) cell(s string, limit int) string {
	return strings.ReplaceAll(q.inline(s, limit), "|", `\|`)
}

// word writes s as is when it is a plain lower-case word (an enum value), else quotes it.
func (q *quoter) word(s string) string {
	if s != "" && len(s) <= 32 && strings.IndexFunc(s, func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '_' && r != '-'
	}) < 0 {
		return s
	}
	return q.inline(s, 40)
}

// diffBlock quotes a patch as a fenced "diff" block, whole or not at all: a cut patch
// would not apply. It returns "" when the patch is longer than maxBytes.
func (q *quoter) diffBlock(s string, maxBytes int) string {
	if len(s) > maxBytes {
		q.cuts++
		return ""
	}
	return q.BlockAs("diff", q.prepare(s, maxBytes)) + "\n"
}

// block quotes s as a fenced "text" block at the top level, keeping at most maxBytes
// and maxLines of it; it returns the block (ending in a newline) and whether it cut s.
func (q *quoter) block(s string, maxBytes, maxLines int) (string, bool) {
	p := q.prepare(s, maxBytes+redactWindow)
	kept := textcut.Lines(textcut.Bytes(p, maxBytes), maxLines)
	cut := len(kept) < len(p) || len(s) > maxBytes+redactWindow
	if cut {
		q.cuts++
	}
	return q.Block(kept) + "\n", cut
}
