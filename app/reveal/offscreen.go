package reveal

import (
	"bytes"
	"strings"

	"github.com/yuin/goldmark/text"
	"golang.org/x/text/width"
)

// --- code that runs off the screen --------------------------------------------------

// maxColumn is the last column of a code block's line Scan takes a reader to see.
// GitHub shows code blocks (and <pre>) unwrapped, with a scroll bar: what lies past the
// block's right edge is out of view until the reader scrolls sideways, block by block.
// On a wide desktop window an issue's comment box is about 850 pixels wide inside its
// padding, and GitHub sets code at 85 % of 14 px in a monospace font whose characters
// are 0.6 em wide (about 7.1 px): some 120 columns. A narrower window shows fewer, so
// text a few columns short of the edge may still be out of view there; text pushed
// hundreds of columns right, the way to hide it, is out of view everywhere.
const maxColumn = 120

// tabWidth is the tab stop Scan counts: 8, the browsers' default, is the widest GitHub
// uses, so a tab never counts narrower than it shows.
const tabWidth = 8

// columns is how many columns r takes in a code block: characters of East Asian wide
// and fullwidth forms take two, as do the characters of scripts a monospace font does
// not hold (from U+0530 on, other than punctuation, arrows and box drawing), which the
// browser draws from a proportional font, often wider than a column. Counting two where
// a character is narrower only reports text a little earlier.
func columns(r rune) int {
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	if r < 0x530 || (r >= 0x2000 && r <= 0x27FF) {
		return 1
	}
	return 2
}

// codeBlock checks the lines of a fenced or indented code block for text past
// maxColumn. A line's Padding is the indentation goldmark took out of a tab.
func (s *scanner) codeBlock(lines *text.Segments) {
	ls := make([][3]int, 0, lines.Len())
	for i := range lines.Len() {
		seg := lines.At(i)
		ls = append(ls, [3]int{seg.Start, seg.Stop, seg.Padding})
	}
	s.offScreen(ls)
}

// pre checks the content of a <pre> element whose opening tag ends at from for text
// past maxColumn: up to its closing tag, or, without one (within what matchClose
// reads), to the end of the input, which a browser then shows preformatted. Markup and
// character references inside are counted as written, which can only make a line
// longer than it shows.
func (s *scanner) pre(from int) {
	to := len(s.src)
	if e := s.matchClose("pre", from); e >= 0 {
		if k := bytes.LastIndex(s.lower[from:e], []byte("</pre")); k >= 0 {
			to = from + k
		}
	}
	s.preformatted = max(s.preformatted, to)
	var ls [][3]int
	for a := from; a < to; {
		b := to
		if k := bytes.IndexByte(s.src[a:to], '\n'); k >= 0 {
			b = a + k
		}
		ls = append(ls, [3]int{a, b, 0})
		a = b + 1
	}
	s.offScreen(ls)
}

// offScreen reports the text of lines (each a byte range and the column it starts at)
// that lies past maxColumn: the rest of each such line from the first character past
// it, without the spaces before it. Such lines in a row are one finding.
func (s *scanner) offScreen(lines [][3]int) {
	var tails []string
	first := -1
	flush := func() {
		if first >= 0 {
			s.add(OffScreen, first, Finding{Text: strings.Join(tails, "\n")})
		}
		first, tails = -1, nil
	}
	for _, l := range lines {
		at := pastColumn(s.str[l[0]:l[1]], l[2])
		if at < 0 {
			flush()
			continue
		}
		if first < 0 {
			first = l[0] + at
		}
		tails = append(tails, strings.TrimSpace(s.text(l[0]+at, l[1])))
	}
	flush()
}

// pastColumn is the offset in line, which starts at column col, of the first letter
// (neither a space nor a hidden character) past maxColumn, or -1.
func pastColumn(line string, col int) int {
	for i, r := range line {
		if col >= maxColumn && letter(r) {
			return i
		}
		if r == '\t' {
			col += tabWidth - col%tabWidth
		} else {
			col += columns(r)
		}
	}
	return -1
}
