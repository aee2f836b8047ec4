package web

import (
	"bytes"
	"html/template"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	gmhtml "github.com/yuin/goldmark/renderer/html"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/bumperdev/bumper/internal/ghhtml"
)

// markdown renders the Markdown people and the App write (issue and pull request
// bodies, comments, review bodies, check run summaries) the way GitHub does for the web
// view: CommonMark with GitHub's extensions (tables, strikethrough, task lists,
// autolinks), raw HTML passed through to sanitize, which keeps what GitHub's sanitizer
// keeps. So <sub>, <sup>, <small>, <details> and the rest show as on GitHub (the status
// comment's <sub> footer, an issue's twelve nested <sub>), and nothing else does.
var markdown = goldmark.New(
	goldmark.WithExtensions(extension.GFM),
	goldmark.WithRendererOptions(gmhtml.WithUnsafe()),
)

// renderMarkdown turns Markdown into HTML that is safe to insert into a page.
func renderMarkdown(src string) template.HTML {
	var buf bytes.Buffer
	if err := markdown.Convert([]byte(src), &buf); err != nil {
		// goldmark fails only when writing fails, which a bytes.Buffer does not; show
		// the text rather than nothing if it ever does.
		return template.HTML("<pre>" + template.HTMLEscapeString(src) + "</pre>") //nolint:gosec // escaped just here
	}
	return sanitize(buf.Bytes())
}

// droppedWhole are elements whose content is no text to show: scripts, styles, embedded
// documents, form controls, and SVG and MathML (foreign content, dropped whole).
var droppedWhole = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Template: true, atom.Iframe: true, atom.Frame: true,
	atom.Frameset: true, atom.Object: true, atom.Embed: true, atom.Noembed: true, atom.Noframes: true,
	atom.Noscript: true, atom.Title: true, atom.Textarea: true, atom.Select: true, atom.Svg: true,
	atom.Math: true,
}

// allowedAttrs are the attributes kept, of those GitHub's sanitizer keeps, that change
// what the page shows: on every element ("") and on some. URLs are checked apart
// (safeURL); id, class and style are never kept.
var allowedAttrs = map[atom.Atom]map[string]bool{
	0:            {"align": true, "title": true, "lang": true, "dir": true},
	atom.A:       {"href": true},
	atom.Img:     {"src": true, "alt": true, "width": true, "height": true},
	atom.Td:      {"colspan": true, "rowspan": true, "valign": true},
	atom.Th:      {"colspan": true, "rowspan": true, "valign": true},
	atom.Ol:      {"start": true},
	atom.Details: {"open": true},
	atom.Input:   {"type": true, "checked": true, "disabled": true},
	atom.Abbr:    {"title": true},
	atom.Time:    {"datetime": true},
}

// sanitize parses rendered HTML as a browser parses a fragment of a page (so that
// misnested or unclosed tags cannot reach outside it) and writes back what the
// allowlists keep.
func sanitize(rendered []byte) template.HTML {
	context := &html.Node{Type: html.ElementNode, Data: "div", DataAtom: atom.Div}
	nodes, err := html.ParseFragment(bytes.NewReader(rendered), context)
	if err != nil {
		// Nested past the parser's depth: show the markup as text, not as a page.
		return template.HTML("<pre>" + template.HTMLEscapeString(string(rendered)) + "</pre>") //nolint:gosec // escaped just here
	}
	var out bytes.Buffer
	for _, n := range nodes {
		for _, c := range clean(n) {
			if err := html.Render(&out, c); err != nil {
				return template.HTML("") // a bytes.Buffer does not fail
			}
		}
	}
	return template.HTML(out.String()) //nolint:gosec // rebuilt from the allowlists and rendered by x/net/html, which escapes
}

// clean returns what of n the page keeps: n itself with its allowed attributes and
// cleaned children, its cleaned children alone (an element not allowed), or nothing (a
// comment, an element dropped whole).
func clean(n *html.Node) []*html.Node {
	switch n.Type {
	case html.TextNode:
		return []*html.Node{{Type: html.TextNode, Data: n.Data}}
	case html.ElementNode:
	default:
		return nil
	}
	if droppedWhole[n.DataAtom] || n.Namespace != "" {
		return nil
	}
	var kids []*html.Node
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		kids = append(kids, clean(c)...)
	}
	if !ghhtml.Kept(n.DataAtom) {
		return kids
	}
	out := &html.Node{Type: html.ElementNode, Data: n.Data, DataAtom: n.DataAtom}
	for _, a := range n.Attr {
		if a.Namespace == "" && (allowedAttrs[0][a.Key] || allowedAttrs[n.DataAtom][a.Key]) && attrValueOK(n.DataAtom, a) {
			out.Attr = append(out.Attr, html.Attribute{Key: a.Key, Val: a.Val})
		}
	}
	if n.DataAtom == atom.Input {
		// Only a task list's checkbox, which nobody can tick here.
		if attr(n, "type") != "checkbox" {
			return kids
		}
		out.Attr = append(out.Attr[:0:0], html.Attribute{Key: "type", Val: "checkbox"}, html.Attribute{Key: "disabled"})
		if hasAttr(n, "checked") {
			out.Attr = append(out.Attr, html.Attribute{Key: "checked"})
		}
	}
	for _, k := range kids {
		out.AppendChild(k)
	}
	return []*html.Node{out}
}

// attrValueOK checks the values that could do more than change the look: links and
// image sources go only to http, https, mailto (links) or relative URLs.
func attrValueOK(el atom.Atom, a html.Attribute) bool {
	switch {
	case a.Key == "href":
		return safeURL(a.Val, true)
	case a.Key == "src" && el == atom.Img:
		return safeURL(a.Val, false)
	case a.Key == "dir":
		return a.Val == "ltr" || a.Val == "rtl" || a.Val == "auto"
	}
	return true
}

// safeURL says whether a link (or, without link, an image source) may keep the URL v:
// relative, or http, https and, for links, mailto. Control characters and spaces inside
// (which a browser strips, "java\tscript:") refuse it.
func safeURL(v string, link bool) bool {
	v = strings.TrimSpace(v)
	if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7F }) {
		return false
	}
	i := strings.IndexAny(v, ":/?#")
	if i < 0 || v[i] != ':' {
		return true
	}
	switch strings.ToLower(v[:i]) {
	case "http", "https":
		return true
	case "mailto":
		return link
	}
	return false
}

// attr is n's attribute key ("" if none).
func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Key == key {
			return true
		}
	}
	return false
}
