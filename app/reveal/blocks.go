package reveal

import (
	"bytes"
	"strings"

	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
)

// --- fenced blocks GitHub renders ---------------------------------------------------

// fenced reports what a fenced block hides: for one that GitHub renders as something
// other than code, the comments, directives and styling of a Mermaid diagram, math that
// hides text, and the whole of a block shown in a map or 3D viewer; for code, text past
// the block's right edge. GitHub picks the renderer by the first word of the info
// string; it is compared without regard to case.
func (s *scanner) fenced(n *ast.FencedCodeBlock) {
	lines := n.Lines()
	first, last, ok := span(lines)
	if !ok {
		return
	}
	switch strings.ToLower(string(n.Language(s.src))) {
	case "mermaid":
		s.mermaid(lines)
		if line, ok := s.mermaidStyled(lines); ok {
			start, stop := s.fenceExtent(n)
			s.add(DiagramStyled, start, Finding{Text: s.quote(start, stop), Target: line})
		}
	case "math":
		from, to := s.fenceExtent(n)
		s.measureMath(first, last, from, to)
		s.mathPastEdge(first, last, from, to)
		if cmd := mathHides(s.src[first:last], true); cmd != "" {
			start, stop := s.fenceExtent(n)
			s.add(MathHiding, start, Finding{Text: s.quote(start, stop), Target: cmd})
		}
	case "geojson", "topojson", "stl":
		if len(bytes.TrimSpace(s.src[first:last])) > 0 {
			start, stop := s.fenceExtent(n)
			s.add(ViewerBlock, start, Finding{Text: s.quote(start, stop)})
		}
	default:
		s.codeBlock(n)
	}
}

// fenceExtent is the byte range of a fenced block from its opening fence to the end of
// its closing fence, or of its last line if it has none.
func (s *scanner) fenceExtent(n *ast.FencedCodeBlock) (int, int) {
	start := n.Pos()
	first, stop, ok := span(n.Lines())
	if !ok {
		if start < 0 || start >= len(s.src) {
			return 0, 0
		}
		return start, s.lineEnd(start)
	}
	if start < 0 || start > first {
		start = first
	}
	if stop < len(s.src) {
		// The closing fence is the next line, after any container's prefix.
		end := s.lineEnd(stop)
		if l := bytes.TrimLeft(s.src[stop:end], " \t>"); bytes.HasPrefix(l, []byte("```")) || bytes.HasPrefix(l, []byte("~~~")) {
			stop = end
		}
	}
	return start, stop
}

// lineEnd is the offset just past the end (the "\n") of the line holding off.
func (s *scanner) lineEnd(off int) int {
	if k := bytes.IndexByte(s.src[off:], '\n'); k >= 0 {
		return off + k + 1
	}
	return len(s.src)
}

// mermaid reports the text of a Mermaid diagram that the diagram does not show: front
// matter with more than a title, "%%{…}%%" directives (which may span lines), "%%"
// comments (whole lines, or the rest of a line after a "%%" outside a quoted label),
// and accTitle/accDescr accessibility text. Hidden lines in a row are one finding.
func (s *scanner) mermaid(lines *text.Segments) {
	n := lines.Len()
	line := func(i int) []byte { seg := lines.At(i); return s.src[seg.Start:seg.Stop] }
	indent := func(i int) int {
		l := line(i)
		return lines.At(i).Start + len(l) - len(bytes.TrimLeft(l, " \t"))
	}
	var found [][2]int
	lastHidden := -2 // the last line hidden to its end
	// hide records from offset from on line i to the end of line j.
	hide := func(i, from, j int) {
		stop := lines.At(j).Stop
		if k := len(found); k > 0 && lastHidden == i-1 && from == indent(i) {
			found[k-1][1] = stop
		} else {
			found = append(found, [2]int{from, stop})
		}
		lastHidden = j
	}
	i := 0
	for i < n && len(bytes.TrimSpace(line(i))) == 0 {
		i++
	}
	if i < n && string(bytes.TrimSpace(line(i))) == "---" {
		for j := i + 1; j < n; j++ {
			if string(bytes.TrimSpace(line(j))) != "---" {
				continue
			}
			for k := i + 1; k < j; k++ {
				if l := bytes.TrimSpace(line(k)); len(l) > 0 && !bytes.HasPrefix(l, []byte("title:")) {
					hide(i, indent(i), j)
					break
				}
			}
			i = j + 1
			break
		}
	}
	for ; i < n; i++ {
		l := bytes.TrimLeft(line(i), " \t")
		j := i
		switch block, ok := accessibility(l); {
		case bytes.HasPrefix(l, []byte("%%{")):
			for j < n-1 && !bytes.Contains(line(j), []byte("}%%")) {
				j++
			}
			hide(i, indent(i), j)
		case ok:
			for block && j < n-1 && !bytes.Contains(line(j), []byte("}")) {
				j++
			}
			hide(i, indent(i), j)
		default:
			if k := mermaidComment(line(i)); k >= 0 {
				hide(i, lines.At(i).Start+k, i)
			}
		}
		i = j
	}
	for _, r := range found {
		s.add(DiagramHidden, r[0], Finding{Text: s.quote(r[0], r[1])})
	}
}

// mermaidStyling are the Mermaid statements that style a diagram's elements: style,
// classDef and class (and the class shorthand ":::"), linkStyle, cssClass; and click,
// which attaches links and tooltips (text shown on mouse-over). Each can make a label
// invisible (its colour that of its fill, a font size of 0, display:none) or hide text.
var mermaidStyling = map[string]bool{
	"style": true, "classDef": true, "class": true, "linkStyle": true, "cssClass": true, "click": true,
}

// mermaidStyled says whether a Mermaid diagram styles its own elements, and returns the
// first line that does: a statement of mermaidStyling (in a class diagram "class"
// declares a class and is not counted), the ":::" class shorthand outside a quoted
// label, or HTML in a label with a style attribute or a <font> element. Which label a
// style reaches, and whether it then shows, Scan does not work out: the diagram is
// reported whole, so that the approver can read every label.
func (s *scanner) mermaidStyled(lines *text.Segments) (string, bool) {
	n := lines.Len()
	line := func(i int) []byte { seg := lines.At(i); return bytes.TrimSpace(s.src[seg.Start:seg.Stop]) }
	i := 0
	for i < n && len(line(i)) == 0 {
		i++
	}
	if i < n && string(line(i)) == "---" {
		// Front matter, which mermaid reports when it holds more than a title.
		for j := i + 1; j < n; j++ {
			if string(line(j)) == "---" {
				i = j + 1
				break
			}
		}
	}
	classDiagram, seenType := false, false
	for ; i < n; i++ {
		seg := lines.At(i)
		l := line(i)
		if len(l) == 0 || bytes.HasPrefix(l, []byte("%%")) {
			continue
		}
		word := l
		if k := bytes.IndexAny(l, " \t"); k >= 0 {
			word = l[:k]
		}
		if !seenType {
			seenType = true
			classDiagram = bytes.HasPrefix(word, []byte("classDiagram"))
		}
		styled := mermaidStyling[string(word)] && len(word) < len(l) && !(classDiagram && string(word) == "class")
		if lower := bytes.ToLower(l); styled || mermaidShorthand(l) ||
			bytes.Contains(lower, []byte("style=")) || bytes.Contains(lower, []byte("<font")) {
			return s.quote(seg.Start+bytes.Index(s.src[seg.Start:seg.Stop], l), seg.Stop), true
		}
	}
	return "", false
}

// mermaidShorthand says whether a Mermaid line applies a class with ":::" outside a
// double-quoted label.
func mermaidShorthand(line []byte) bool {
	quoted := false
	for k := 0; k+2 < len(line); k++ {
		switch line[k] {
		case '"':
			quoted = !quoted
		case ':':
			if !quoted && line[k+1] == ':' && line[k+2] == ':' {
				return true
			}
		}
	}
	return false
}

// accessibility says whether a Mermaid line (without its indentation) sets the
// accessible title or description, which only screen readers get, and whether it opens
// a multi-line "accDescr {" block that does not close on the line.
func accessibility(l []byte) (block, ok bool) {
	for _, k := range []string{"accTitle", "accDescr"} {
		if !bytes.HasPrefix(l, []byte(k)) {
			continue
		}
		r := bytes.TrimLeft(l[len(k):], " \t")
		if len(r) > 0 && (r[0] == ':' || r[0] == '{') {
			return r[0] == '{' && !bytes.Contains(r, []byte("}")), true
		}
	}
	return false, false
}

// mermaidComment is the offset in line of a "%%" outside a double-quoted label, or -1.
func mermaidComment(line []byte) int {
	quoted := false
	for k := 0; k+1 < len(line); k++ {
		switch line[k] {
		case '"':
			quoted = !quoted
		case '%':
			if !quoted && line[k+1] == '%' {
				return k
			}
		}
	}
	return -1
}

// --- tables -------------------------------------------------------------------------

// tableRow reports the cells of a table row past the header's number of cells, which
// GitHub (cmark-gfm), like goldmark, drops: goldmark stops reading the row after the
// last cell it keeps, so what follows that cell on the row's line, but for the pipes
// and spaces around it, was dropped.
func (s *scanner) tableRow(row *east.TableRow) {
	if _, header := row.Parent().(*east.TableHeader); header || row.ChildCount() == 0 {
		return
	}
	cell, ok := row.LastChild().(*east.TableCell)
	if !ok || cell.Lines().Len() == 0 {
		return // a cell goldmark added to fill a short row
	}
	from := cell.Lines().At(cell.Lines().Len() - 1).Stop
	if from < 0 || from > len(s.src) {
		return
	}
	to := s.lineEnd(from)
	for to > from && (isSpaceByte(s.src[to-1]) || s.src[to-1] == '|') {
		to--
	}
	for from < to && (isSpaceByte(s.src[from]) || s.src[from] == '|') {
		from++
	}
	if from < to {
		s.add(DroppedCells, from, Finding{Text: s.text(from, to)})
	}
}

// --- footnotes ----------------------------------------------------------------------

// footnoteRecorderPriority puts footnoteRecorder before goldmark's own footnote block
// parser (priority 999; lower runs first), so that it opens every footnote definition.
const footnoteRecorderPriority = 998

// footnotesKey holds, in the parser context Scan passes, a *[]*east.Footnote that
// footnoteRecorder fills with every footnote definition it opens.
var footnotesKey = parser.NewContextKey()

// footnoteRecorder is goldmark's footnote block parser, noting each definition it opens
// under footnotesKey. goldmark (like GitHub) drops a definition no reference uses from
// the tree, and a definition inside another one may never be in it; the note keeps
// them all for Scan.
type footnoteRecorder struct{ parser.BlockParser }

func (r footnoteRecorder) Open(parent ast.Node, reader text.Reader, pc parser.Context) (ast.Node, parser.State) {
	n, state := r.BlockParser.Open(parent, reader, pc)
	if fn, ok := n.(*east.Footnote); ok {
		if all, ok := pc.Get(footnotesKey).(*[]*east.Footnote); ok {
			*all = append(*all, fn)
		}
	}
	return n, state
}

// unusedFootnotes reports the footnote definitions no reference uses (goldmark numbers
// the used ones), each from its "[^label]:" to the end of its content.
func (s *scanner) unusedFootnotes(all []*east.Footnote) {
	for _, fn := range all {
		start := fn.Pos()
		if fn.Index >= 0 || start < 0 || start >= len(s.src) {
			continue
		}
		stop := max(s.blockEnd(fn), start)
		s.add(FootnoteDefinition, start, Finding{Text: s.quote(start, stop)})
	}
}

// blockEnd is where the source of block n and its descendants ends: the end of the
// last line any of them holds, or of its first line. It does not enter footnote lists:
// their definitions come from elsewhere, and goldmark can link a list into the very
// definition it holds.
func (s *scanner) blockEnd(n ast.Node) int {
	end := -1
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		if _, list := c.(*east.FootnoteList); list || c.Type() != ast.TypeBlock {
			return ast.WalkSkipChildren, nil
		}
		if p := c.Pos(); p >= 0 && p < len(s.src) {
			end = max(end, s.lineEnd(p))
		}
		if _, stop, ok := span(c.Lines()); ok {
			end = max(end, stop)
		}
		switch c := c.(type) {
		case *ast.FencedCodeBlock:
			_, stop := s.fenceExtent(c)
			end = max(end, stop)
		case *ast.HTMLBlock:
			if c.HasClosure() {
				end = max(end, c.ClosureLine.Stop)
			}
		}
		return ast.WalkContinue, nil
	})
	return min(end, len(s.src))
}

// --- collapsed sections -------------------------------------------------------------

// details reports the body of a <details> element without "open" whose opening tag
// spans src[open:body]: everything after its <summary> (if that comes first) up to
// its closing tag. The page shows the summary and hides the body until the reader
// expands it. An unclosed <details> collapses the rest of the input.
func (s *scanner) details(open, body int) {
	if open < s.collapsed {
		return // inside a collapsed section already reported
	}
	end := s.matchClose("details", body)
	closeAt := len(s.src)
	if end < 0 {
		end = len(s.src)
	} else if k := bytes.LastIndex(s.lower[body:end], []byte("</details")); k >= 0 {
		closeAt = body + k
	}
	s.collapsed = end
	from, summary := body, ""
	rest := s.src[body:closeAt]
	at := body + len(rest) - len(bytes.TrimLeft(rest, " \t\r\n"))
	if t, ok := parseTag(s.src[at:closeAt]); ok && t.name == "summary" && !t.close {
		inner := at + t.length
		if e := s.matchClose("summary", inner); e >= 0 && e <= closeAt {
			if k := bytes.LastIndex(s.lower[inner:e], []byte("</summary")); k >= 0 {
				summary = strings.TrimSpace(s.text(inner, inner+k))
			}
			from = e
		}
	}
	for from < closeAt && isSpaceByte(s.src[from]) {
		from++
	}
	for closeAt > from && isSpaceByte(s.src[closeAt-1]) {
		closeAt--
	}
	if from < closeAt {
		s.add(Collapsed, open, Finding{Text: s.text(from, closeAt), Visible: summary})
	}
}
