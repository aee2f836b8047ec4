package evidence

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/bumperdev/bumper/internal/hiddenchar"
	"github.com/bumperdev/bumper/internal/mdcode"
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
}

// redactWindow is how far past what is shown a text is searched for secrets, so a
// secret that starts in the shown part is redacted whole, not cut to a prefix (a GitHub
// token's prefix is all of its entropy).
const redactWindow = 1024

// stripHidden drops hidden runes (internal/hiddenchar), to find secrets split by them.
func stripHidden(s string) string {
	return strings.Map(func(r rune) rune {
		if hiddenchar.Is(r) {
			return -1
		}
		return r
	}, s)
}

// prepare takes at most maxBytes of s (on a character boundary), as valid UTF-8 with
// "\n" line ends and secrets redacted.
func (q *quoter) prepare(s string, maxBytes int) string {
	s = cutBytes(s, maxBytes)
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(s)
	if r, changed := redactSecrets(s); changed {
		q.redacted = true
		s = r
	}
	return s
}

// inline quotes s as one code span: line breaks and tabs shown as spaces, cut at limit
// characters with the length of the whole.
func (q *quoter) inline(s string, limit int) string {
	window := 4*limit + redactWindow // a character is at most 4 bytes
	p := q.prepare(s, window)
	cut, more := truncateRunes(p, limit)
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

// block quotes s as a fenced "text" block at the top level, keeping at most maxBytes
// and maxLines of it; it returns the block (ending in a newline) and whether it cut s.
func (q *quoter) block(s string, maxBytes, maxLines int) (string, bool) {
	p := q.prepare(s, maxBytes+redactWindow)
	kept := cutLines(p, maxBytes, maxLines)
	cut := len(kept) < len(p) || len(s) > maxBytes+redactWindow
	if cut {
		q.cuts++
	}
	return q.Block(kept) + "\n", cut
}

// truncateRunes keeps at most n characters of s and says how many it dropped.
func truncateRunes(s string, n int) (string, int) {
	i := 0
	for j := range s {
		if i == n {
			return s[:j], utf8.RuneCountInString(s[j:])
		}
		i++
	}
	return s, 0
}

// cutLines keeps at most maxBytes and maxLines lines of s, ending on a character
// boundary.
func cutLines(s string, maxBytes, maxLines int) string {
	s = cutBytes(s, maxBytes)
	lines := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			lines++
			if lines == maxLines {
				return s[:i]
			}
		}
	}
	return s
}

// CutBytes keeps at most n bytes of s, ending on a character boundary: one cut for
// the runner's bounded texts (a harness's feedback, verification's excerpts) and the
// bundle's.
func CutBytes(s string, n int) string { return cutBytes(s, n) }

// cutBytes keeps at most n bytes of s, ending on a character boundary.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Excerpt cuts a test's output to at most MaxExcerptBytes for the bundle, keeping its
// beginning and its end (where test runners put the failure and the summary) and
// saying how much of the middle it left out. The result is valid UTF-8.
func Excerpt(output string) string {
	output = strings.ToValidUTF8(output, "\uFFFD")
	if len(output) <= MaxExcerptBytes {
		return output
	}
	const marker = "\n[… %s bytes left out …]\n"
	room := MaxExcerptBytes - len(fmt.Sprintf(marker, commas(int64(len(output)))))
	headEnd := room / 2
	for headEnd > 0 && !utf8.RuneStart(output[headEnd]) {
		headEnd--
	}
	tailStart := len(output) - (room - headEnd)
	for tailStart < len(output) && !utf8.RuneStart(output[tailStart]) {
		tailStart++
	}
	return output[:headEnd] + fmt.Sprintf(marker, commas(int64(tailStart-headEnd))) + output[tailStart:]
}
