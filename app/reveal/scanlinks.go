package reveal

import (
	"bytes"
	"regexp"
	"strings"
	"unicode"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/util"

	"github.com/bumperdev/bumper/internal/hiddenchar"
)

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
