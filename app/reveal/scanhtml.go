package reveal

import (
	"bytes"
	"html"
	"regexp"
	"strings"

	"github.com/yuin/goldmark/ast"
)

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
