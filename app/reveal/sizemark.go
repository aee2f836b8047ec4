package reveal

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/renderer"
	gmhtml "github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
	"golang.org/x/net/html"
)

// markRenderer renders every text of the input that reaches the page (text, code spans,
// code blocks, autolinks, the text of raw HTML blocks) after a marker naming it: the
// text's index in pieces, which holds its byte range in the input. The marker's word
// includes a digest of the input, so the input cannot spell it, not even with
// character references, and no text can pass for another.
type markRenderer struct {
	src    []byte // the input
	marker string
	pieces [][2]int
	// mathSpans holds where the content of each $`…`$ starts: GitHub typesets it as
	// math, not as code (whose smaller font would count twice with the math's).
	mathSpans map[int]bool
}

func newMarkRenderer(src []byte, mathSpans map[int]bool) *markRenderer {
	sum := sha256.Sum256(src)
	return &markRenderer{src: src, marker: fmt.Sprintf("bumper%x:", sum[:12]), mathSpans: mathSpans}
}

// RegisterFuncs replaces goldmark's renderers of the nodes that carry the input's text.
func (m *markRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindText, m.text)
	reg.Register(ast.KindCodeSpan, m.codeSpan)
	reg.Register(ast.KindCodeBlock, m.codeBlock)
	reg.Register(ast.KindFencedCodeBlock, m.codeBlock)
	reg.Register(ast.KindAutoLink, m.autoLink)
	reg.Register(ast.KindHTMLBlock, m.htmlBlock)
}

// mark writes the marker of the input's bytes [start, stop), if they hold more than
// spaces.
func (m *markRenderer) mark(w util.BufWriter, start, stop int) {
	if start < 0 || stop > len(m.src) || start >= stop || len(bytes.TrimSpace(m.src[start:stop])) == 0 {
		return
	}
	_, _ = w.WriteString(m.marker)
	_, _ = w.Write(strconv.AppendInt(nil, int64(len(m.pieces)), 10))
	_ = w.WriteByte(';')
	m.pieces = append(m.pieces, [2]int{start, stop})
}

func (m *markRenderer) text(w util.BufWriter, src []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*ast.Text)
	m.mark(w, n.Segment.Start, n.Segment.Stop)
	if n.IsRaw() {
		gmhtml.DefaultWriter.RawWrite(w, n.Segment.Value(src))
	} else {
		gmhtml.DefaultWriter.Write(w, n.Segment.Value(src))
	}
	if n.SoftLineBreak() || n.HardLineBreak() {
		// GitHub breaks a comment's lines where its text does.
		_, _ = w.WriteString("<br>\n")
	}
	return ast.WalkContinue, nil
}

func (m *markRenderer) codeSpan(w util.BufWriter, src []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	open, closing := "<code>", "</code>"
	if t, ok := node.FirstChild().(*ast.Text); ok && m.mathSpans[t.Segment.Start] {
		open, closing = "<span>", "</span>"
	}
	_, _ = w.WriteString(open)
	for c := node.FirstChild(); c != nil; c = c.NextSibling() {
		if t, ok := c.(*ast.Text); ok {
			m.mark(w, t.Segment.Start, t.Segment.Stop)
			gmhtml.DefaultWriter.RawWrite(w, t.Segment.Value(src))
		}
	}
	_, _ = w.WriteString(closing)
	return ast.WalkSkipChildren, nil
}

func (m *markRenderer) codeBlock(w util.BufWriter, src []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	open, closing := "<pre><code>", "</code></pre>\n"
	if f, ok := node.(*ast.FencedCodeBlock); ok && strings.EqualFold(string(f.Language(src)), "math") {
		open, closing = "<div>", "</div>\n" // typeset as math, not shown as code
	}
	_, _ = w.WriteString(open)
	lines := node.Lines()
	for i := range lines.Len() {
		seg := lines.At(i)
		m.mark(w, seg.Start, seg.Stop)
		gmhtml.DefaultWriter.RawWrite(w, seg.Value(src))
	}
	_, _ = w.WriteString(closing)
	return ast.WalkSkipChildren, nil
}

func (m *markRenderer) autoLink(w util.BufWriter, src []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*ast.AutoLink)
	label := n.Label(src)
	_, _ = w.WriteString(`<a href="#">`)
	if p := n.Pos(); p >= 0 && p < len(src) {
		if k := bytes.Index(src[p:], label); k >= 0 {
			m.mark(w, p+k, p+k+len(label))
		}
	}
	_, _ = w.Write(util.EscapeHTML(label))
	_, _ = w.WriteString("</a>")
	return ast.WalkContinue, nil
}

// htmlBlock writes a raw HTML block as it is, with a marker before each of its texts.
func (m *markRenderer) htmlBlock(w util.BufWriter, src []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*ast.HTMLBlock)
	var raw []byte
	var starts [][2]int // where each line starts in raw, and in src
	add := func(seg text.Segment) {
		starts = append(starts, [2]int{len(raw) + seg.Padding, seg.Start})
		raw = append(raw, seg.Value(src)...)
	}
	for i := range n.Lines().Len() {
		add(n.Lines().At(i))
	}
	if n.HasClosure() {
		add(n.ClosureLine)
	}
	if onlyTags(raw) {
		_, _ = w.Write(raw)
		return ast.WalkContinue, nil
	}
	at := func(off int) int { // the input's offset of raw's byte off
		k := max(0, sort.Search(len(starts), func(k int) bool { return starts[k][0] > off })-1)
		return starts[k][1] + max(0, off-starts[k][0])
	}
	z := html.NewTokenizer(bytes.NewReader(raw))
	off := 0
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		tok := z.Raw()
		if tt == html.TextToken {
			m.mark(w, at(off), at(off+len(tok)-1)+1)
		}
		_, _ = w.Write(tok)
		off += len(tok)
	}
	return ast.WalkContinue, nil
}

// onlyTags says, quickly, that raw HTML holds nothing but tags, comments and spaces: each
// of its non-space bytes lies between a "<" followed by a letter, "/", "!" or "?" and
// the first ">" after it. Where it says so, a tokenizer finds no text either (a tag or
// comment ends at that ">" or later); where not (a ">" in a quoted attribute or a
// comment, a raw-text element's content, text), htmlBlock tokenizes.
func onlyTags(raw []byte) bool {
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
		case c == '<' && i+1 < len(raw) && (isASCIILetter(raw[i+1]) || strings.IndexByte("/!?", raw[i+1]) >= 0):
			k := bytes.IndexByte(raw[i:], '>')
			if k < 0 {
				return false
			}
			i += k
		default:
			return false
		}
	}
	return true
}
