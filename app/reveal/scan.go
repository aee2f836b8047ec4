package reveal

import (
	"bytes"
	"html"
	"regexp"
	"sort"
	"strings"
	"unicode"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"

	"github.com/bumperdev/bumper/internal/hiddenchar"
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

func (s *scanner) htmlBlock(n *ast.HTMLBlock) {
	start, stop, ok := span(n.Lines())
	if !ok {
		return
	}
	if n.HasClosure() && n.ClosureLine.Stop > stop {
		stop = n.ClosureLine.Stop
	}
	s.html(start, stop)
}

func (s *scanner) rawHTML(n *ast.RawHTML) {
	start, stop, ok := span(n.Segments)
	if !ok {
		return
	}
	s.html(start, stop)
}

// html tokenises src[start:stop], raw HTML the page renders, and reports its comments
// and, once, the markup outside the harmless set: the whole range, extended to the
// closing tag of any element outside the set (which may lie in a later block).
func (s *scanner) html(start, stop int) {
	s.htmlRanges = append(s.htmlRanges, [2]int{start, stop})
	hostile := false
	end := stop // the end of the RawHTML finding
	for i := start; i < stop; {
		j := bytes.IndexByte(s.src[i:stop], '<')
		if j < 0 {
			break
		}
		i += j
		rest := s.src[i:stop]
		switch {
		case bytes.HasPrefix(rest, []byte("<!--")):
			e := commentEnd(s.src, i, stop)
			s.add(HTMLComment, i, Finding{Text: s.quote(i, e)})
			i = e
		case bytes.HasPrefix(rest, []byte("<?")):
			hostile = true
			i = skipPast(s.src, i, stop, "?>")
		case bytes.HasPrefix(rest, []byte("<![CDATA[")):
			hostile = true
			i = skipPast(s.src, i, stop, "]]>")
		case len(rest) > 2 && rest[1] == '!' && isASCIILetter(rest[2]):
			hostile = true
			i = skipPast(s.src, i, stop, ">")
		default:
			t, ok := parseTag(rest)
			if !ok {
				i++
				continue
			}
			// HTML ignores "/>" on an element that is not void: <details/> opens a
			// collapsed section like <details> does.
			opens := !t.close && !voidElements[t.name]
			if t.name == "details" && opens && t.harmless() && i >= s.covered {
				if _, open := t.attrs["open"]; !open {
					s.details(i, i+t.length)
				}
			}
			if t.name == "pre" && opens && i >= s.preformatted {
				s.pre(i + t.length)
			}
			if !t.harmless() {
				hostile = true
				if start >= s.covered && opens {
					if e := s.matchClose(t.name, i+t.length); e > end {
						end = e
					}
				}
			}
			i += t.length
		}
	}
	if hostile && start >= s.covered {
		s.add(RawHTML, start, Finding{Text: s.quote(start, end)})
		s.covered = end
	}
}

// commentEnd is the end of the comment opening at i: just past the first "-->" after
// "<!--" ("<!-->" and "<!--->" are complete, empty comments), or, when the comment is
// not closed before stop, the end of the input: the browser then hides everything.
func commentEnd(src []byte, i, stop int) int {
	rest := src[i:stop]
	if bytes.HasPrefix(rest, []byte("<!-->")) {
		return i + len("<!-->")
	}
	if bytes.HasPrefix(rest, []byte("<!--->")) {
		return i + len("<!--->")
	}
	if k := bytes.Index(src[i+4:stop], []byte("-->")); k >= 0 {
		return i + 4 + k + 3
	}
	return len(src)
}

func skipPast(src []byte, i, stop int, closer string) int {
	if k := bytes.Index(src[i+1:stop], []byte(closer)); k >= 0 {
		return i + 1 + k + len(closer)
	}
	return stop
}

func isASCIILetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

// maxElement bounds how far matchClose looks for a closing tag, and closeBudget how
// many bytes all its searches in one Scan read, keeping Scan linear. Past the budget a
// RawHTML finding quotes just its block or tag.
const (
	maxElement  = 16 << 10
	closeBudget = 4 << 20
)

// matchClose finds the end of the closing tag of an element named name whose opening
// tag ends at from, counting nested elements of the same name, in the maxElement bytes
// that follow (the element may span Markdown blocks). It returns -1 if there is none.
func (s *scanner) matchClose(name string, from int) int {
	if s.lower == nil {
		s.lower = make([]byte, len(s.src))
		for i, c := range s.src {
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			s.lower[i] = c
		}
	}
	if s.closeRead >= closeBudget {
		return -1
	}
	depth := 1
	lower := s.lower[from:min(len(s.src), from+maxElement)]
	opener, closer := []byte("<"+name), []byte("</"+name)
	i := 0
	defer func() { s.closeRead += i }()
	for i < len(lower) {
		j := bytes.IndexByte(lower[i:], '<')
		if j < 0 {
			i = len(lower)
			return -1
		}
		i += j
		switch {
		case bytes.HasPrefix(lower[i:], closer) && tagNameEnds(lower, i+len(closer)):
			depth--
			k := bytes.IndexByte(lower[i:], '>')
			if k < 0 {
				return -1
			}
			if depth == 0 {
				return from + i + k + 1
			}
			i += k + 1
		case bytes.HasPrefix(lower[i:], opener) && tagNameEnds(lower, i+len(opener)):
			depth++
			i += len(opener)
		default:
			i++
		}
	}
	return -1
}

func tagNameEnds(b []byte, i int) bool {
	if i >= len(b) {
		return false
	}
	switch b[i] {
	case '>', '/', ' ', '\t', '\n', '\r', '\f':
		return true
	}
	return false
}

// maxTagLen bounds the tag the tokeniser tries to match, keeping it linear; a longer
// "tag" is treated as one that hides something.
const maxTagLen = 4096

var (
	openTagRE  = regexp.MustCompile(`^<([A-Za-z][A-Za-z0-9-]*)((?:\s+[a-zA-Z_:][a-zA-Z0-9:._-]*(?:\s*=\s*(?:[^"'=<>` + "`" + `\x00-\x20]+|'[^']*'|"[^"]*"))?)*)\s*(/?)>`)
	closeTagRE = regexp.MustCompile(`^</([A-Za-z][A-Za-z0-9-]*)\s*>`)
	attrRE     = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9:._-]*)(?:\s*=\s*("[^"]*"|'[^']*'|[^\s"'=<>` + "`" + `]+))?`)
)

type tag struct {
	name        string
	close       bool
	selfClosing bool
	attrs       map[string]string
	length      int
}

// parseTag reads the HTML tag at the start of b. A "<" followed by a letter that runs
// past maxTagLen without a match is returned as an unnamed tag, which is not harmless.
func parseTag(b []byte) (tag, bool) {
	if len(b) < 2 || (!isASCIILetter(b[1]) && b[1] != '/') {
		return tag{}, false
	}
	w := b
	if len(w) > maxTagLen {
		w = w[:maxTagLen]
	}
	if m := closeTagRE.FindSubmatchIndex(w); m != nil {
		return tag{name: strings.ToLower(string(w[m[2]:m[3]])), close: true, length: m[1]}, true
	}
	if m := openTagRE.FindSubmatchIndex(w); m != nil {
		t := tag{name: strings.ToLower(string(w[m[2]:m[3]])), selfClosing: m[6] != m[7], length: m[1]}
		t.attrs = map[string]string{}
		for _, a := range attrRE.FindAllSubmatch(w[m[4]:m[5]], -1) {
			v := string(a[2])
			if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') {
				v = v[1 : len(v)-1]
			}
			t.attrs[strings.ToLower(string(a[1]))] = html.UnescapeString(v)
		}
		return t, true
	}
	if len(b) > maxTagLen {
		return tag{length: 1}, true
	}
	return tag{}, false
}

// harmlessTags show their content as is. With attributes they are harmless only if the
// attributes are in harmlessAttrs (and, for img, the alt text is a generic label).
var harmlessTags = map[string]bool{
	"abbr": true, "b": true, "big": true, "blockquote": true, "br": true,
	"caption": true, "cite": true, "code": true, "dd": true, "del": true, "details": true,
	"div": true, "dl": true, "dt": true, "em": true, "h1": true, "h2": true, "h3": true,
	"h4": true, "h5": true, "h6": true, "hr": true, "i": true, "ins": true, "kbd": true,
	"li": true, "mark": true, "ol": true, "p": true, "pre": true, "q": true, "s": true,
	"samp": true, "small": true, "span": true, "strike": true, "strong": true, "sub": true,
	"summary": true, "sup": true, "table": true, "tbody": true, "td": true, "tfoot": true,
	"th": true, "thead": true, "tr": true, "tt": true, "u": true, "ul": true, "var": true,
	"img": true,
}

var harmlessAttrs = map[string]map[string]bool{
	"":        {"align": true},
	"details": {"open": true},
	"img":     {"src": true, "alt": true, "width": true, "height": true},
	"td":      {"colspan": true, "rowspan": true},
	"th":      {"colspan": true, "rowspan": true},
}

var voidElements = map[string]bool{
	"area": true, "base": true, "br": true, "col": true, "embed": true, "hr": true,
	"img": true, "input": true, "link": true, "meta": true, "param": true, "source": true,
	"track": true, "wbr": true,
}

func (t tag) harmless() bool {
	if !harmlessTags[t.name] {
		return false
	}
	if t.close {
		return true
	}
	for a := range t.attrs {
		if !harmlessAttrs[""][a] && !harmlessAttrs[t.name][a] {
			return false
		}
	}
	if t.name == "img" {
		return genericAlt(t.attrs["alt"]) && address([]byte(t.attrs["src"]))
	}
	return true
}

// --- links and images ---------------------------------------------------------------

func (s *scanner) link(n *ast.Link) {
	if n.Reference != nil {
		s.used[util.ToLinkReference(n.Reference.Value)] = true
	}
	dest := string(n.Destination)
	if len(n.Title) > 0 {
		s.add(LinkTitle, n.Pos(), Finding{Text: string(n.Title), Target: dest})
	}
	visible, image := s.visibleText(n)
	switch {
	case strings.TrimSpace(visible) == "" && !image:
		s.add(LinkMismatch, n.Pos(), Finding{Text: dest, Target: dest})
	case misleading(visible, dest):
		s.add(LinkMismatch, n.Pos(), Finding{Text: dest, Visible: visible, Target: dest})
	}
	// A reference link's destination is checked once, at its definition; a link whose
	// text shows its destination hides nothing of it.
	if n.Reference == nil && !address(n.Destination) && !(looksLikeURL(strings.TrimSpace(visible)) && !misleading(visible, dest)) {
		s.add(LinkDestination, n.Pos(), Finding{Text: dest, Visible: visible, Target: dest})
	}
}

func (s *scanner) image(n *ast.Image) {
	if n.Reference != nil {
		s.used[util.ToLinkReference(n.Reference.Value)] = true
	}
	if len(n.Title) > 0 {
		s.add(LinkTitle, n.Pos(), Finding{Text: string(n.Title), Target: string(n.Destination)})
	}
	alt, _ := s.visibleText(n)
	if !genericAlt(alt) {
		s.add(ImageAlt, n.Pos(), Finding{Text: alt, Target: string(n.Destination)})
	}
	if n.Reference == nil && !address(n.Destination) {
		s.add(LinkDestination, n.Pos(), Finding{Text: string(n.Destination), Visible: alt, Target: string(n.Destination)})
	}
}

// visibleText is the text the page shows for a link's (or image's) children, and
// whether they include an image (which is visible even without text).
func (s *scanner) visibleText(n ast.Node) (string, bool) {
	var b strings.Builder
	image := false
	var walk func(ast.Node)
	walk = func(n ast.Node) {
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			switch c := c.(type) {
			case *ast.Text:
				v := c.Segment.Value(s.src)
				if !c.IsRaw() {
					v = util.ResolveEntityNames(util.ResolveNumericReferences(util.UnescapePunctuations(v)))
				}
				b.Write(v)
				if c.SoftLineBreak() || c.HardLineBreak() {
					b.WriteByte(' ')
				}
			case *ast.String:
				b.Write(c.Value)
			case *ast.AutoLink:
				b.Write(c.Label(s.src))
			case *ast.RawHTML:
			case *ast.Image:
				image = true
			default:
				walk(c)
			}
		}
	}
	walk(n)
	return b.String(), image
}

// definitions reports the link reference definitions no link uses, whole, and of the
// used ones a destination that is not an address.
func (s *scanner) definitions() {
	seen := map[string]bool{}
	for _, d := range s.defs {
		label := util.ToLinkReference(d.Label)
		// The first definition of a label wins; later ones are never used.
		if s.used[label] && !seen[label] {
			seen[label] = true
			if start, _, ok := span(d.Lines()); ok && !address(d.Destination) {
				s.add(LinkDestination, start, Finding{Text: string(d.Destination), Visible: string(d.Label), Target: string(d.Destination)})
			}
			continue
		}
		seen[label] = true
		start, stop, ok := span(d.Lines())
		if !ok {
			continue
		}
		s.add(LinkDefinition, start, Finding{Text: s.quote(start, stop), Target: string(d.Destination)})
	}
}

var (
	schemeRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://`)
	// domainRE matches host names, Unicode ones too (a homograph is the point), with
	// an optional port and path.
	domainRE = regexp.MustCompile(`^(?:[\p{L}\p{N}](?:[\p{L}\p{N}-]*[\p{L}\p{N}])?\.)+\p{L}{2,63}\.?(?::[0-9]{1,5})?(?:[/?#]\S*)?$`)
	emailRE  = regexp.MustCompile(`^[^\s@<>()\[\]]+@(?:[\p{L}\p{N}](?:[\p{L}\p{N}-]*[\p{L}\p{N}])?\.)+\p{L}{2,63}$`)
	// fileRE matches a bare file name that domainRE would take for a domain.
	fileRE = regexp.MustCompile(`^[\w.-]+\.(?:go|md|py|js|ts|tsx|jsx|json|ya?ml|toml|txt|sh|rs|c|h|cc|cpp|hpp|java|kt|rb|php|cs|swift|sql|proto|mod|sum|lock|html|css|xml|tf|mk|cfg|ini|conf|log|diff|patch)$`)
)

// maxDecodes bounds how many times address decodes percent-encoding that decodes to more
// of it ("%2520").
const maxDecodes = 4

// address says whether a link's or image's destination is an address, which the reader
// can see on mouse-over and which, like the target of any link, the notice leaves to
// them; a destination that is not one is prose the page shows only on mouse-over, if
// at all. It is an address unless, with its backslash escapes, character references
// and percent-encoding decoded, it holds whitespace or a hidden character: a URL has
// none, and words set apart by spaces are prose whatever the scheme or path around
// them. Words run together with hyphens, underscores or "+" (a slug, a search) are not
// told apart from an address.
func address(dest []byte) bool {
	d := util.ResolveEntityNames(util.ResolveNumericReferences(util.UnescapePunctuations(dest)))
	for range maxDecodes {
		next := percentDecode(d)
		if bytes.Equal(next, d) {
			break
		}
		d = next
	}
	for _, r := range string(d) {
		if unicode.IsSpace(r) || hiddenchar.Is(r) {
			return false
		}
	}
	return true
}

// percentDecode decodes the %XX escapes of b, leaving other "%"s as they are.
func percentDecode(b []byte) []byte {
	if bytes.IndexByte(b, '%') < 0 {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] == '%' && i+2 < len(b) && isHex(b[i+1]) && isHex(b[i+2]) {
			out = append(out, unhex(b[i+1])<<4|unhex(b[i+2]))
			i += 2
			continue
		}
		out = append(out, b[i])
	}
	return out
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c|0x20 >= 'a' && c|0x20 <= 'f'
}

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c | 0x20 - 'a' + 10
}

// looksLikeURL says whether a reader takes text for a claim about where a link goes.
func looksLikeURL(v string) bool {
	if v == "" || strings.ContainsFunc(v, unicode.IsSpace) {
		return false
	}
	l := strings.ToLower(v)
	return schemeRE.MatchString(v) || strings.HasPrefix(l, "mailto:") || strings.HasPrefix(l, "www.") ||
		domainRE.MatchString(v) || emailRE.MatchString(v)
}

// misleading says whether a link's visible text looks like a URL, domain or e-mail
// address that is not where the link leads. Scheme case, http versus https, a
// leading "www.", a trailing "/" or "." and a default port do not count; anything else
// in scheme, host, user, port, path, query or fragment does.
func misleading(visible, dest string) bool {
	v := strings.TrimSpace(visible)
	d := strings.TrimSpace(string(util.ResolveEntityNames(util.ResolveNumericReferences(util.UnescapePunctuations([]byte(dest))))))
	if v == d || !looksLikeURL(v) {
		return false
	}
	if !schemeRE.MatchString(d) && !strings.HasPrefix(d, "//") && !strings.HasPrefix(strings.ToLower(d), "mailto:") {
		// A relative link: "[README.md](./README.md)" is what it says.
		if schemeRE.MatchString(v) {
			return true
		}
		return cleanRelative(v) != cleanRelative(d)
	}
	nd, ok := normalizeURL(d)
	if !ok {
		return true
	}
	if fileRE.MatchString(v) && strings.HasSuffix(strings.SplitN(strings.SplitN(d, "#", 2)[0], "?", 2)[0], "/"+v) {
		// "[config.go](https://github.com/o/r/blob/main/config.go)" names a file.
		return false
	}
	nv, ok := normalizeURL(v)
	return !ok || nv != nd
}

func cleanRelative(s string) string {
	return strings.TrimSuffix(strings.TrimPrefix(s, "./"), "/")
}
