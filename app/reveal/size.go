package reveal

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	gmhtml "github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/util"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/bumperdev/bumper/internal/ghhtml"
	"github.com/bumperdev/bumper/internal/hiddenchar"
)

// --- text too small to read ---------------------------------------------------------

// minSize is the smallest size, relative to the page's normal text, at which Scan takes
// text to be readable. Half the normal size is 7 px in a 14 px comment, below the
// smallest text GitHub itself sets (11 px) and below what most readers make out at a
// glance: three nested <sub> or <sup> (42 %) are under it, two (56 %) are not. Each
// further level divides the size by four thirds; twelve leave 3 %, a dotted line.
const minSize = 0.5

// shrink is how much GitHub's stylesheet for Markdown (.markdown-body) scales the text of
// an element its HTML sanitizer keeps, relative to the text around it, where that is
// smaller: sub and sup 75 %, small 90 %, code and tt 85 %, h5 87.5 %, h6 85 %; a
// browser's own stylesheet shows ruby text (rt) at 50 % and ruby fallback parentheses
// (rp) not at all. The sanitizer drops the other elements, keeping their text at the
// size around it (<font size=1>, <big>), and strips style and class. What enlarges
// text (h1–h4) or sets an absolute size (kbd, samp, pre) is left out: counting only
// what shrinks, Scan can report text that a heading makes readable again, never miss
// text that is too small.
var shrink = map[string]float64{
	"sub": 0.75, "sup": 0.75, "small": 0.9, "code": 0.85, "tt": 0.85,
	"h5": 0.875, "h6": 0.85, "rt": 0.5, "rp": 0,
}

// maxDepth is how deeply a browser nests elements: past it, Chromium's parser (and
// golang.org/x/net/html's, which Scan uses) stops building the page as written.
const maxDepth = 512

// tinyText reports the text GitHub's page shows too small to read or not at all (Kind
// TinyText): it renders the parsed document to HTML as GitHub does before sanitizing
// (raw HTML passed through), builds the page from it as a browser does, with its
// handling of misnested and unclosed tags, and measures the size of every text in it
// from the elements around it (shrink). Each text of the input carries a marker into
// the HTML (markRenderer), so what is too small is quoted from the input as the agent
// reads it. Markup nested deeper than maxDepth, which no browser shows as written, is
// reported whole (DeepNesting).
func (s *scanner) tinyText(doc ast.Node) {
	m := newMarkRenderer(s.src, s.mathSpans)
	r := renderer.NewRenderer(renderer.WithNodeRenderers(
		util.Prioritized(gmhtml.NewRenderer(gmhtml.WithUnsafe()), 1000),
		util.Prioritized(extension.NewTableHTMLRenderer(), 500),
		util.Prioritized(extension.NewStrikethroughHTMLRenderer(), 500),
		util.Prioritized(extension.NewTaskCheckBoxHTMLRenderer(), 500),
		util.Prioritized(extension.NewFootnoteHTMLRenderer(), 500),
		util.Prioritized(m, 100),
	))
	var out bytes.Buffer
	if err := r.Render(&out, m.src, doc); err != nil {
		return // a bytes.Buffer does not fail
	}
	sizes := make([]textSize, len(m.pieces))
	ms := s.mathShrinks()
	for i, p := range m.pieces {
		sizes[i].min = -1
		sizes[i].math = shrinkOf(ms, p[0], p[1])
	}
	// Whether GitHub's sanitizer drops the elements it does not keep from the page a
	// parser built (which the rendering, parsed, stands for) or from the markup before
	// a browser builds the page (keptTags), is not documented; the two can differ (a
	// dropped <aside> no longer closes the paragraph, and the <sub> in it, before
	// the text after it). Text too small on either page is reported.
	for _, rendered := range [][]byte{out.Bytes(), keptTags(out.Bytes())} {
		page, err := html.Parse(bytes.NewReader(rendered))
		if err != nil {
			// The only error the parser returns is for more than maxDepth open elements.
			s.add(DeepNesting, 0, Finding{Text: s.quote(0, len(s.src)), Target: fmt.Sprint(maxDepth)})
			return
		}
		measure(page, 1, nil, m.marker, sizes)
	}
	s.reportTiny(m.pieces, sizes)
}

// keptElement reports whether GitHub keeps element a of a text's HTML: its sanitizer's
// allowlist, and what its renderer adds of its own (the footnotes' section).
func keptElement(a atom.Atom) bool { return ghhtml.Kept(a) || ghhtml.AddedByRenderer(a) }

// keptTags is the rendering with the tags of elements GitHub's sanitizer does not keep
// taken out (their text stays), as a sanitizer that rewrites the markup as it streams
// leaves it for the browser.
func keptTags(rendered []byte) []byte {
	var out bytes.Buffer
	z := html.NewTokenizer(bytes.NewReader(rendered))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return out.Bytes()
		case html.StartTagToken, html.EndTagToken, html.SelfClosingTagToken:
			if name, _ := z.TagName(); !keptElement(atom.Lookup(name)) {
				continue
			}
		}
		out.Write(z.Raw())
	}
}

// textSize is what measure found of one piece of the input's text on the page.
type textSize struct {
	min     float64    // the smallest size of its letters below minSize, or -1
	within  []string   // the shrinking elements around it there, outermost first
	visible bool       // some of its letters are at a readable size
	math    mathShrink // the smallest math in it (factor 1 if none), set before measure
	// mathSmall is set when its math's letters are below minSize on the page.
	mathSmall bool
}

// measure walks the page, scaling the size by the elements it enters, and notes for each
// piece of text (known by its marker) the sizes of its letters.
func measure(n *html.Node, size float64, within []string, marker string, sizes []textSize) {
	switch n.Type {
	case html.CommentNode, html.DoctypeNode:
		return
	case html.TextNode:
		measureText(n.Data, size, within, marker, sizes)
		return
	case html.ElementNode:
		if f, ok := shrink[n.Data]; ok && n.Namespace == "" {
			size *= f
			within = append(within[:len(within):len(within)], n.Data)
		}
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		measure(c, size, within, marker, sizes)
	}
}

// measureText notes the size of the letters of one text node: each belongs to the piece
// whose marker last came before it in the node. Text before any marker is the
// renderer's own (a footnote's number), not the input's.
func measureText(data string, size float64, within []string, marker string, sizes []textSize) {
	cur := -1
	for data != "" {
		text := data
		next := strings.Index(data, marker)
		if next >= 0 {
			text = data[:next]
		}
		if cur >= 0 && strings.IndexFunc(text, letter) >= 0 {
			t := &sizes[cur]
			t.note(size, within)
			if t.math.factor < 1 && size*t.math.factor < minSize {
				// The piece holds math whose letters are smaller still.
				t.note(size*t.math.factor, append(within[:len(within):len(within)], t.math.why...))
				t.mathSmall = true
			}
		}
		if next < 0 {
			return
		}
		data = data[next+len(marker):]
		digits := strings.IndexFunc(data, func(r rune) bool { return r < '0' || r > '9' })
		if digits < 0 {
			digits = len(data)
		}
		i, err := strconv.Atoi(data[:digits])
		if cur = i; err != nil || i >= len(sizes) {
			cur = -1
		}
		data = strings.TrimPrefix(data[digits:], ";")
	}
}

// note takes letters at size, inside the elements within, into t.
func (t *textSize) note(size float64, within []string) {
	switch {
	case size >= minSize:
		t.visible = true
	case t.min < 0 || size < t.min:
		t.min, t.within = size, within
	}
}

// letter says whether r shows as something: not a space, not a hidden character.
func letter(r rune) bool { return !unicode.IsSpace(r) && !hiddenchar.Is(r) }

// reportTiny turns the pieces too small to read into findings: pieces in a row (with
// nothing readable between them) are one, quoted from the start of the first to the
// end of the last.
func (s *scanner) reportTiny(pieces [][2]int, sizes []textSize) {
	first, last := -1, -1
	flush := func() {
		if first < 0 {
			return
		}
		smallest := first
		for i := first; i <= last; i++ {
			if sizes[i].min >= 0 && sizes[i].min < sizes[smallest].min {
				smallest = i
			}
		}
		start, stop := pieces[first][0], pieces[last][1]
		for i := first; i <= last; i++ {
			// Small because of math: quote the whole math, dollars included.
			if m := sizes[i].math; m.factor < 1 && sizes[i].mathSmall {
				start, stop = min(start, m.from), max(stop, m.to)
			}
		}
		text := strings.TrimSpace(s.text(start, stop))
		s.add(TinyText, start, Finding{Text: text, Size: sizes[smallest].min, Target: elementsText(sizes[smallest].within)})
		first = -1
	}
	for i, t := range sizes {
		switch {
		case t.min >= 0:
			// A piece that also shows readable letters is still reported: the letters
			// that do not show are there.
			if first >= 0 && pieces[i][0] < pieces[last][1] {
				flush() // a footnote, rendered at the end, written earlier
			}
			if first < 0 {
				first = i
			}
			last = i
		case t.visible:
			flush()
		}
	}
	flush()
}

// elementsText names the elements around a text, outermost first, with repeats
// counted, and the math commands that shrink it as written: "<sub>×12 <small> \tiny _".
func elementsText(names []string) string {
	var parts []string
	for i := 0; i < len(names); {
		j := i
		for j < len(names) && names[j] == names[i] {
			j++
		}
		p := names[i]
		if isASCIILetter(p[0]) && !scriptEnvironments[p] {
			p = "<" + p + ">"
		}
		if j-i > 1 {
			p += fmt.Sprintf("×%d", j-i)
		}
		parts = append(parts, p)
		i = j
	}
	return strings.Join(parts, " ")
}
