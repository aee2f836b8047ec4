package reveal

import (
	"sort"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Kind says why a finding is hidden from the rendered page.
type Kind string

// The kinds of findings.
const (
	// HTMLComment is an HTML comment; the page does not show it. An unclosed comment
	// hides the rest of the issue, and its Text runs to the end of the input.
	HTMLComment Kind = "html-comment"
	// RawHTML is raw HTML outside the harmless set; the page may hide or alter it.
	RawHTML Kind = "raw-html"
	// InvisibleChar is a run of invisible characters: format characters (category
	// Cf), variation selectors, default-ignorable fillers, control characters.
	InvisibleChar Kind = "invisible-char"
	// BidiControl is a run of bidirectional control characters, which reorder how the
	// surrounding text is displayed.
	BidiControl Kind = "bidi-control"
	// TagChar is a run of Unicode tag characters (U+E0000–U+E007F), invisible copies of
	// ASCII that a model may still read.
	TagChar Kind = "tag-char"
	// LinkMismatch is a link whose visible text looks like a URL, domain or e-mail
	// address other than its target, or a link with no visible text.
	LinkMismatch Kind = "link-mismatch"
	// LinkTitle is the title of a link or image, shown only on mouse-over.
	LinkTitle Kind = "link-title"
	// LinkDestination is a link's or image's destination that is not an address (see
	// address): prose, shown only on mouse-over, if at all. Text is the destination as
	// written; for a reference link it is reported at its definition, once.
	LinkDestination Kind = "link-destination"
	// ImageAlt is an image's alt text, not shown while the image displays.
	ImageAlt Kind = "image-alt"
	// LinkDefinition is a link reference definition that no link uses; the page
	// shows nothing of it.
	LinkDefinition Kind = "link-definition"
	// FootnoteDefinition is a footnote definition ([^1]: text) that no footnote
	// reference ([^1]) uses; the page shows nothing of it.
	FootnoteDefinition Kind = "footnote-definition"
	// DiagramHidden is text in a Mermaid diagram (a fenced block with info string
	// "mermaid") that the diagram does not show: "%%" comments, "%%{…}%%" directives,
	// front matter other than a title, and accessibility titles and descriptions
	// (accTitle, accDescr). Consecutive hidden lines are one finding.
	DiagramHidden Kind = "diagram-hidden"
	// DiagramStyled is a Mermaid diagram that styles its own elements (style, classDef,
	// class, ":::", linkStyle, cssClass, click, or HTML with a style in a label): a
	// style can make a label invisible or unreadably small, and click adds tooltips.
	// Text is the whole block, Target its first styling line.
	DiagramStyled Kind = "diagram-styled"
	// MathHiding is math ($…$, $$…$$, $`…`$ or a fenced "math" block, which GitHub
	// typesets with MathJax) that uses a command able to hide, recolour, cover or move
	// text, or to keep it out of the output: \phantom, \color with a colour that does
	// not stand out on both GitHub's light and dark backgrounds, \style, \class,
	// \href, macro definitions, negative spacing, a "%" comment and the like. Text is
	// the whole math span with its delimiters and Target the command found first.
	MathHiding Kind = "math-hiding"
	// ViewerBlock is a fenced block GitHub shows in a viewer rather than as text: a
	// map for "geojson" and "topojson", a 3D model for "stl". Text is the whole block.
	ViewerBlock Kind = "viewer-block"
	// Collapsed is the body of a <details> element without "open": on the page it is
	// collapsed, and the approver must expand it to read it. Visible is its <summary>
	// (raw, "" if none). Milder than the others: the page does show it, on request.
	Collapsed Kind = "collapsed"
	// TinyText is text the page shows at less than half its normal size, or not at
	// all, because of the elements around it that GitHub keeps: nested <sub>, <sup>
	// and <small> (each shrinks its text), code, h5 and h6, ruby text (<rt>), and ruby
	// fallback parentheses (<rp>), which are not shown. Size is the smallest size of
	// its letters relative to normal (0 for not shown), Target the elements that make
	// it so ("<sub>×12"). Consecutive texts that small are one finding.
	TinyText Kind = "tiny-text"
	// DroppedCells are the cells of a table row past the number of the header's cells,
	// which GitHub drops from the page. Text is the cells as written, from the first
	// dropped one to the end of the row.
	DroppedCells Kind = "dropped-cells"
	// OffScreen is text past the columns in view: maxColumn (120), less what the lists
	// and blockquotes around it take. GitHub shows code (fenced, indented or <pre>) and
	// math unwrapped, and a table as wide as its columns' longest words, so what lies
	// past the right edge is out of view until the reader scrolls sideways. Text is, for
	// each such line of a run of them, the line from its first letter past the column;
	// for a table, each row's cells past it; for math, the whole of it. Target is the
	// column.
	OffScreen Kind = "off-screen"
	// DeepNesting is markup nested deeper than a browser builds (512 elements), past
	// which what the page shows, and at what size, cannot be told. Text is the whole
	// input and Target the depth.
	DeepNesting Kind = "deep-nesting"
)

// A Finding is one piece of the input that the rendered page hides or misrepresents.
type Finding struct {
	Kind Kind
	// Line is the 1-based line of the input where the finding starts.
	Line int
	// InTitle is set on findings from ScanTitle.
	InTitle bool
	// Text is what the agent reads, raw: the comment or HTML with its markup, the run
	// of invisible characters (or the character references spelling them), the title,
	// alt text or definition, the hidden lines of a diagram, the math span, the
	// viewer block, the collapsed body. For LinkMismatch it is the link's destination.
	Text string
	// Visible is, for LinkMismatch, the link text as the page shows it ("" if none),
	// and for Collapsed the raw content of its <summary> ("" if none).
	Visible string
	// Target is the destination, as written, of a LinkMismatch, LinkTitle or
	// LinkDefinition, the source of an ImageAlt's image, for MathHiding the
	// command that hides (`\phantom`, `\color{white}`, `%`), for TinyText the
	// elements that shrink it ("<sub>×12"), and for DeepNesting the depth browsers
	// stop at.
	Target string
	// Context is, for character findings, the raw text around Text on its line.
	Context string
	// Size is, for TinyText, the size at which the page shows the smallest of its
	// letters relative to the normal size: 0.03 for 3 %, 0 for not at all.
	Size float64
}

// md parses like GitHub: CommonMark with tables, strikethrough, task lists, autolinked
// URLs and footnotes. goldmark's parser keeps its per-document state in the parser
// context, so one instance serves concurrent calls. footnoteRecorder notes, in that
// context, every footnote definition, including those goldmark drops from the tree.
var md = goldmark.New(
	goldmark.WithExtensions(extension.GFM, extension.Footnote),
	goldmark.WithParserOptions(parser.WithBlockParsers(
		util.Prioritized(footnoteRecorder{extension.NewFootnoteBlockParser()}, footnoteRecorderPriority))),
)

// Scan reports, in the order they occur, what the rendered page of markdown (an issue
// body) hides from a reader. It is pure and deterministic. For an issue, report
// append(ScanTitle(title), Scan(body)...).
//
// Line ends are read as CommonMark reads them: "\r\n", and a lone "\r" too, end a line
// (goldmark keeps a lone "\r" inside its line, so Scan parses the input with its line
// ends written "\n"). Line counts lines so, and Text and Context are quoted from the
// input as written.
func Scan(markdown string) []Finding {
	norm, crlf := normalizeLineEnds(markdown)
	src := []byte(norm)
	s := &scanner{src: src, str: norm, orig: markdown, crlf: crlf, lineStarts: lineStarts(src), used: map[string]bool{}}
	var footnotes []*east.Footnote
	pc := parser.NewContext()
	pc.Set(footnotesKey, &footnotes)
	doc := md.Parser().Parse(text.NewReader(src), parser.WithContext(pc))
	_ = ast.Walk(doc, s.visit)
	sort.Slice(s.code, func(i, j int) bool { return s.code[i][0] < s.code[j][0] })
	s.definitions()
	s.unusedFootnotes(footnotes)
	for _, r := range s.mathText {
		s.indent = r[2]
		s.mathInText(r[0], r[1])
	}
	s.indent = 0
	s.chars()
	s.entities()
	s.tinyText(doc)
	return s.sorted()
}

// ScanTitle reports the invisible, bidirectional and tag characters of an issue title.
// GitHub shows a title's HTML and Markdown as written, so nothing else in it hides.
// The findings have InTitle set and Line 1 (a title has one line).
func ScanTitle(title string) []Finding {
	s := &scanner{src: []byte(title), str: title, orig: title, lineStarts: []int{0}}
	s.chars()
	out := s.sorted()
	for i := range out {
		out[i].InTitle = true
	}
	return out
}

type hit struct {
	off int
	f   Finding
}

type scanner struct {
	src          []byte // the input with its line ends written "\n"
	str          string // src as a string
	orig         string // the input as written
	crlf         []int  // the offsets in src of each "\n" that stands for a "\r\n" in orig
	lower        []byte // src with ASCII letters in lower case, made when needed
	closeRead    int    // bytes matchClose has read
	lineStarts   []int
	hits         []hit
	code         [][2]int     // byte ranges shown as code (or as $`math`$), sorted after the walk
	covered      int          // end of the last RawHTML finding; nested tags are inside it
	collapsed    int          // end of the last Collapsed finding; nested <details> are inside it
	preformatted int          // end of the last <pre> checked; nested ones are inside it
	indent       int          // the columns the lists and blockquotes around the walk take
	mathText     [][3]int     // byte ranges of blocks whose inline content may hold $math$, and their indent
	htmlRanges   [][2]int     // byte ranges of raw HTML: HTML blocks and tags
	mathSizes    []mathShrink // the math whose letters are smaller than the text around it
	mathSpans    map[int]bool // where the content of each $`…`$ starts: math, not code
	used         map[string]bool
	defs         []*ast.LinkReferenceDefinition
}

func (s *scanner) add(kind Kind, off int, f Finding) {
	f.Kind = kind
	f.Line = s.lineOf(off)
	s.hits = append(s.hits, hit{off: off, f: f})
}

func (s *scanner) sorted() []Finding {
	sort.SliceStable(s.hits, func(i, j int) bool { return s.hits[i].off < s.hits[j].off })
	if len(s.hits) == 0 {
		return nil
	}
	out := make([]Finding, len(s.hits))
	for i, h := range s.hits {
		out[i] = h.f
	}
	return out
}

// normalizeLineEnds writes each "\r\n" and each lone "\r" of s as "\n", and returns
// the offsets in the result of the "\n"s that stand for a "\r\n" (a lone "\r" keeps
// its length, so it needs no note).
func normalizeLineEnds(s string) (string, []int) {
	if strings.IndexByte(s, '\r') < 0 {
		return s, nil
	}
	b := make([]byte, 0, len(s))
	var crlf []int
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\r' {
			if i+1 < len(s) && s[i+1] == '\n' {
				crlf = append(crlf, len(b))
				i++
			}
			c = '\n'
		}
		b = append(b, c)
	}
	return string(b), crlf
}

// origOff is the offset in the input as written of src's offset off.
func (s *scanner) origOff(off int) int {
	return off + sort.SearchInts(s.crlf, off)
}

// text is the input as written that src[start:stop] stands for.
func (s *scanner) text(start, stop int) string {
	return s.orig[s.origOff(start):s.origOff(stop)]
}

// quote is text(start, stop) without the line end it may end with.
func (s *scanner) quote(start, stop int) string {
	return strings.TrimRight(s.text(start, stop), "\r\n")
}

func lineStarts(src []byte) []int {
	starts := []int{0}
	for i, c := range src {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

func (s *scanner) lineOf(off int) int {
	if off < 0 {
		off = 0
	}
	return sort.Search(len(s.lineStarts), func(i int) bool { return s.lineStarts[i] > off })
}

func (s *scanner) visit(n ast.Node, entering bool) (ast.WalkStatus, error) {
	if k := containerIndent(n); entering {
		s.indent += k
	} else {
		s.indent -= k
		return ast.WalkContinue, nil
	}
	switch n := n.(type) {
	case *ast.CodeSpan:
		if first, last := n.FirstChild(), n.LastChild(); first != nil {
			if a, ok := first.(*ast.Text); ok {
				if b, ok := last.(*ast.Text); ok {
					s.codeSpan(a.Segment.Start, b.Segment.Stop)
				}
			}
		}
		return ast.WalkSkipChildren, nil
	case *ast.FencedCodeBlock:
		if start, stop, ok := span(n.Lines()); ok {
			s.code = append(s.code, [2]int{start, stop})
		}
		s.fenced(n)
		return ast.WalkSkipChildren, nil
	case *ast.CodeBlock:
		if start, stop, ok := span(n.Lines()); ok {
			s.code = append(s.code, [2]int{start, stop})
		}
		s.codeBlock(n)
		return ast.WalkSkipChildren, nil
	case *ast.Paragraph, *ast.TextBlock, *ast.Heading, *east.TableCell:
		// Blocks of inline content, where GitHub finds $math$.
		if start, stop, ok := span(n.Lines()); ok {
			s.mathText = append(s.mathText, [3]int{start, stop, s.indent})
		}
	case *east.Table:
		s.table(n)
	case *east.TableRow:
		s.tableRow(n)
	case *ast.HTMLBlock:
		s.htmlBlock(n)
	case *ast.RawHTML:
		s.rawHTML(n)
	case *ast.Link:
		s.link(n)
	case *ast.Image:
		s.image(n)
	case *ast.LinkReferenceDefinition:
		s.defs = append(s.defs, n)
	}
	return ast.WalkContinue, nil
}

// span is the byte range from the first to the last segment.
func span(segs *text.Segments) (start, stop int, ok bool) {
	if segs == nil || segs.Len() == 0 {
		return 0, 0, false
	}
	return segs.At(0).Start, segs.At(segs.Len() - 1).Stop, true
}

// --- HTML -------------------------------------------------------------------------
