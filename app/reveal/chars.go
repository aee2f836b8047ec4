package reveal

import (
	"html"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/bumperdev/bumper/internal/hiddenchar"
)

// classify says whether r is a character the page does not show, and of which kind:
// internal/hiddenchar decides, for this notice and for every quote of others' text
// alike. It does not look at context: see emojiPart for the exceptions Scan makes.
func classify(r rune) (Kind, bool) {
	switch hiddenchar.Classify(r) {
	case hiddenchar.Tag:
		return TagChar, true
	case hiddenchar.Bidi:
		return BidiControl, true
	case hiddenchar.Invisible:
		return InvisibleChar, true
	}
	return "", false
}

// emojiPart says whether the flagged rune r at s[i:] is the ordinary spelling of an
// emoji: one U+FE0E/U+FE0F presentation selector after a visible character other than
// a letter or a space (a heart, an arrow, a keycap digit), or a U+200D ZERO WIDTH JOINER
// between two symbols (a family emoji; skin tones and a selector may come between).
func emojiPart(s string, i int, r rune) bool {
	prev, _ := utf8.DecodeLastRuneInString(s[:i])
	next, _ := utf8.DecodeRuneInString(s[i+utf8.RuneLen(r):])
	switch r {
	case 0xFE0E, 0xFE0F:
		if i == 0 || prev == utf8.RuneError || unicode.IsSpace(prev) || unicode.IsLetter(prev) ||
			unicode.Is(unicode.Variation_Selector, next) {
			return false
		}
		_, flagged := classify(prev)
		return !flagged
	case 0x200D:
		j := i
		for range 2 {
			if prev != 0xFE0F && (prev < 0x1F3FB || prev > 0x1F3FF) {
				break
			}
			j -= utf8.RuneLen(prev)
			prev, _ = utf8.DecodeLastRuneInString(s[:j])
		}
		return j > 0 && unicode.Is(unicode.So, prev) && unicode.Is(unicode.So, next)
	}
	return false
}

// chars reports the runs of hidden characters in the input, one finding per run of one
// kind.
func (s *scanner) chars() {
	str := s.str
	var kind Kind
	start, end := -1, -1
	flush := func() {
		if start >= 0 {
			s.add(kind, start, Finding{Text: s.text(start, end), Context: s.context(start, end)})
		}
		start = -1
	}
	for i, r := range str {
		k, ok := classify(r)
		if ok && emojiPart(str, i, r) {
			ok = false
		}
		switch {
		case !ok:
			flush()
		case start >= 0 && k == kind && i == end:
			end = i + utf8.RuneLen(r)
		default:
			flush()
			kind, start, end = k, i, i+utf8.RuneLen(r)
		}
	}
	flush()
}

// contextRunes is how many characters context keeps on each side.
const contextRunes = 30

// context is the input as written around what src[start:end] stands for, on its line.
func (s *scanner) context(start, end int) string {
	str := s.orig
	start, end = s.origOff(start), s.origOff(end)
	a := start
	for n := 0; n < contextRunes && a > 0; n++ {
		r, w := utf8.DecodeLastRuneInString(str[:a])
		if r == '\n' || r == '\r' {
			break
		}
		a -= w
	}
	b := end
	for n := 0; n < contextRunes && b < len(str); n++ {
		r, w := utf8.DecodeRuneInString(str[b:])
		if r == '\n' || r == '\r' {
			break
		}
		b += w
	}
	return str[a:b]
}

// entityRE matches the character references Markdown text decodes: CommonMark's, which
// end in ";" and have at most 6 hex or 7 decimal digits.
var entityRE = regexp.MustCompile(`&(?:#[xX][0-9a-fA-F]{1,6}|#[0-9]{1,7}|[A-Za-z][A-Za-z0-9]{1,31});`)

// htmlEntityRE matches what a browser may decode as a character reference in raw HTML
// (HTML's rules): numeric references of any length, and named ones, with or without
// the ";" (HTML decodes "&#x202e" followed by a space, and the legacy names such as
// "&shy" without it).
var htmlEntityRE = regexp.MustCompile(`&(?:#[xX][0-9a-fA-F]+|#[0-9]+|[A-Za-z][A-Za-z0-9]{0,31});?`)

// maxRefDigits is more digits than any code point needs once leading zeros are gone: a
// longer number is out of range, which a browser decodes as U+FFFD.
const maxRefDigits = 8

// entities reports character references that the page decodes into hidden characters
// (&#x202E;, &zwj;), adjacent ones of one kind as one finding: in Markdown text (outside
// code) those CommonMark decodes, and in raw HTML (HTML blocks, tags) those a browser
// decodes, which need no ";". s.code must be sorted.
func (s *scanner) entities() {
	sort.Slice(s.htmlRanges, func(i, j int) bool { return s.htmlRanges[i][0] < s.htmlRanges[j][0] })
	type ref struct {
		start, end int
		kind       Kind
	}
	var refs []ref
	note := func(start, end int, decoded string) {
		for _, r := range decoded {
			if k, ok := classify(r); ok {
				refs = append(refs, ref{start, end, k})
				return
			}
		}
	}
	for _, m := range entityRE.FindAllIndex(s.src, -1) {
		if !s.inCode(m[0]) && !s.inHTML(m[0]) {
			note(m[0], m[1], html.UnescapeString(string(s.src[m[0]:m[1]])))
		}
	}
	for _, h := range s.htmlRanges {
		for _, m := range htmlEntityRE.FindAllIndex(s.src[h[0]:h[1]], -1) {
			if end, decoded, ok := htmlReference(s.src[h[0]+m[0] : h[0]+m[1]]); ok {
				note(h[0]+m[0], h[0]+m[0]+end, decoded)
			}
		}
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].start < refs[j].start })
	for i := 0; i < len(refs); {
		j := i + 1
		for j < len(refs) && refs[j].kind == refs[i].kind && refs[j].start == refs[j-1].end {
			j++
		}
		start, end := refs[i].start, refs[j-1].end
		s.add(refs[i].kind, start, Finding{Text: s.text(start, end), Context: s.context(start, end)})
		i = j
	}
}

// htmlReference decodes the character reference at the start of m (a match of
// htmlEntityRE) as a browser does, and returns how much of m it takes. A named
// reference without ";" takes the longest name HTML decodes without one; ok is false
// when m decodes to nothing.
func htmlReference(m []byte) (end int, decoded string, ok bool) {
	ref := string(m)
	if len(ref) > 2 && ref[1] == '#' {
		hex := ref[2] == 'x' || ref[2] == 'X'
		digits := strings.TrimSuffix(ref[2:], ";")
		prefix := "&#"
		if hex {
			digits, prefix = digits[1:], "&#x"
		}
		digits = strings.TrimLeft(digits, "0")
		if len(digits) > maxRefDigits {
			return len(m), "\uFFFD", true
		}
		if digits == "" {
			digits = "0"
		}
		return len(m), html.UnescapeString(prefix + digits + ";"), true
	}
	if strings.HasSuffix(ref, ";") {
		if d := html.UnescapeString(ref); d != ref {
			return len(m), d, true
		}
		ref = ref[:len(ref)-1]
	}
	for n := len(ref); n > 2; n-- {
		if d := html.UnescapeString(ref[:n]); d != ref[:n] {
			return n, d, true
		}
	}
	return 0, "", false
}

// inHTML says whether off lies in raw HTML: an HTML block or a tag. s.htmlRanges must be
// sorted.
func (s *scanner) inHTML(off int) bool {
	i := sort.Search(len(s.htmlRanges), func(i int) bool { return s.htmlRanges[i][0] > off })
	return i > 0 && off < s.htmlRanges[i-1][1]
}

func (s *scanner) inCode(off int) bool {
	i := sort.Search(len(s.code), func(i int) bool { return s.code[i][0] > off })
	return i > 0 && off < s.code[i-1][1]
}

// genericWords are what uploads and screenshot tools put in alt text by default.
var genericWords = map[string]bool{
	"image": true, "img": true, "screenshot": true, "screen": true, "shot": true, "picture": true,
	"pic": true, "photo": true, "at": true, "am": true, "pm": true, "png": true, "jpg": true,
	"jpeg": true, "gif": true, "webp": true, "svg": true, "bmp": true, "heic": true, "mov": true,
	"mp4": true, "untitled": true, "clip": true, "cleanshot": true,
}

// genericAlt says whether alt text says nothing beyond "this is an image", e.g. "image"
// or "Screenshot 2024-05-01 at 10.00.00 AM.png".
func genericAlt(alt string) bool {
	for _, w := range strings.FieldsFunc(strings.ToLower(alt), func(r rune) bool { return !unicode.IsLetter(r) }) {
		if !genericWords[w] {
			return false
		}
	}
	return true
}

// normalizeURL puts an absolute URL, a scheme-less domain or an e-mail address in the
// form misleading compares.
func normalizeURL(s string) (string, bool) {
	l := strings.ToLower(s)
	switch {
	case strings.HasPrefix(l, "mailto:"):
		return l, true
	case emailRE.MatchString(s):
		return "mailto:" + l, true
	case strings.HasPrefix(s, "//"):
		s = "https:" + s
	case !schemeRE.MatchString(s):
		s = "https://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Opaque != "" {
		return "", false
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme == "http" {
		scheme = "https"
	}
	var b strings.Builder
	b.WriteString(scheme + "://")
	if u.User != nil {
		b.WriteString(u.User.String() + "@")
	}
	b.WriteString(strings.TrimPrefix(strings.TrimSuffix(strings.ToLower(u.Hostname()), "."), "www."))
	if p := u.Port(); p != "" && p != "80" && p != "443" {
		b.WriteString(":" + p)
	}
	b.WriteString(strings.TrimSuffix(u.Path, "/"))
	if u.RawQuery != "" || u.ForceQuery {
		b.WriteString("?" + u.RawQuery)
	}
	if u.Fragment != "" {
		b.WriteString("#" + u.Fragment)
	}
	return b.String(), true
}
