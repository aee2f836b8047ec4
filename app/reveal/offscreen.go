package reveal

import (
	"bytes"
	"strconv"
	"strings"
	"unicode"

	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
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

// listIndent and quoteIndent are the columns of a code block's width a list (GitHub
// indents its items by 2em, 28 px) and a blockquote (1em of padding each side and a
// 0.25em border, 31.5 px) take, in 7.1 px columns, rounded up.
const (
	listIndent  = 4
	quoteIndent = 5
)

// containerIndent is the columns a node takes from the width of the blocks inside it.
func containerIndent(n ast.Node) int {
	switch n.(type) {
	case *ast.List, *east.FootnoteList:
		return listIndent
	case *ast.Blockquote:
		return quoteIndent
	}
	return 0
}

// visibleColumns is how many columns of the lines of the block the walk is in are in
// view: maxColumn, less what the lists and blockquotes around it take. Nested deep
// enough, a block has no width left, and everything in it is out of view.
func (s *scanner) visibleColumns() int {
	return max(maxColumn-s.indent, 0)
}

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

// codeBlock checks the lines of a fenced or indented code block for text past the
// columns in view (visibleColumns). A line's Padding is the indentation goldmark took
// out of a tab.
func (s *scanner) codeBlock(n ast.Node) {
	lines := n.Lines()
	ls := make([][3]int, 0, lines.Len())
	for i := range lines.Len() {
		seg := lines.At(i)
		ls = append(ls, [3]int{seg.Start, seg.Stop, seg.Padding})
	}
	s.offScreen(ls, s.visibleColumns())
}

// pre checks the content of a <pre> element whose opening tag ends at from for text
// past the columns in view of the Markdown block it is in: up to its closing tag, or, without one (within what matchClose
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
	s.offScreen(ls, s.visibleColumns())
}

// offScreen reports the text of lines (each a byte range and the column it starts at)
// that lies past column limit: the rest of each such line from the first character
// past it, without the spaces before it. Such lines in a row are one finding, its
// Target the limit.
func (s *scanner) offScreen(lines [][3]int, limit int) {
	var tails []string
	first := -1
	flush := func() {
		if first >= 0 {
			s.add(OffScreen, first, Finding{Text: strings.Join(tails, "\n"), Target: strconv.Itoa(limit)})
		}
		first, tails = -1, nil
	}
	for _, l := range lines {
		at := pastColumn(s.str[l[0]:l[1]], l[2], limit)
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
// (neither a space nor a hidden character) past column limit, or -1.
func pastColumn(line string, col, limit int) int {
	for i, r := range line {
		if col >= limit && letter(r) {
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

// --- tables wider than the page -----------------------------------------------------

// cellPadding is the columns a table cell's padding (13 px each side) and border take.
const cellPadding = 4

// table reports the cells of a table that lie, wholly or in part, past the columns in
// view. GitHub shows a table as wide as its content (display: block; width:
// max-content) and lets it scroll sideways (overflow: auto): once its columns cannot
// all be as narrow as their longest words, the last ones are out of view until the
// reader scrolls. A column is counted as wide as its longest word (textColumns) and its
// padding, which is the narrowest a browser makes it. Text is, for each row that has
// such cells, those cells as written, and Target the column where view ends.
func (s *scanner) table(t *east.Table) {
	limit := s.visibleColumns()
	var widths []int
	for row := t.FirstChild(); row != nil; row = row.NextSibling() {
		_, header := row.(*east.TableHeader)
		i := 0
		for c := row.FirstChild(); c != nil; c = c.NextSibling() {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			text, _ := s.visibleText(c)
			widths[i] = max(widths[i], longestWord(text, header)+cellPadding)
			i++
		}
	}
	first, x := -1, 0
	for i, w := range widths {
		if x+w > limit {
			first = i
			break
		}
		x += w
	}
	if first < 0 {
		return
	}
	var rows []string
	at := -1
	for row := t.FirstChild(); row != nil; row = row.NextSibling() {
		var cells []string
		i := 0
		for c := row.FirstChild(); c != nil; c = c.NextSibling() {
			if start, stop, ok := span(c.Lines()); ok && i >= first && stop > start {
				cells = append(cells, s.text(start, stop))
				if at < 0 {
					at = start
				}
			}
			i++
		}
		if len(cells) > 0 {
			rows = append(rows, strings.Join(cells, " | "))
		}
	}
	if at >= 0 {
		s.add(OffScreen, at, Finding{Text: strings.Join(rows, "\n"), Target: strconv.Itoa(limit)})
	}
}

// longestWord is the width, in columns of code, of the longest run of text without a
// space in s, which a table cell does not break: in GitHub's proportional font a
// lowercase letter or a digit is about a column wide, a capital wider, "m" and "w"
// and their capitals wider still, and bold (a header) about a tenth wider again.
// Counted wide, a table is reported a little early, never late.
func longestWord(s string, bold bool) int {
	longest, cur := 0, 0
	for _, r := range s {
		if unicode.IsSpace(r) {
			cur = 0
			continue
		}
		cur += runeTenths(r)
		longest = max(longest, cur)
	}
	if bold {
		longest += longest / 10
	}
	return (longest + 9) / 10
}

// runeTenths is the width of r in GitHub's proportional font, in tenths of a column of
// code (7.1 px), rounded up.
func runeTenths(r rune) int {
	switch {
	case r == 'm' || r == 'w':
		return 16
	case r == 'M' || r == 'W':
		return 18
	case r >= 'A' && r <= 'Z':
		return 14
	case r < 0x80:
		return 11
	}
	return 10 * columns(r)
}
