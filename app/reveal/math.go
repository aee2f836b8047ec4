package reveal

import (
	"bytes"
	"math"
	"sort"
	"strconv"
	"strings"
)

// GitHub typesets $…$, $$…$$, $`…`$ and fenced "math" blocks with MathJax. Most of
// TeX shows what it says, but some commands hide text (\phantom), colour it like the
// background (\color{white}), attach it to nothing visible (\href, \style, \class,
// \label, \texttip), define macros instead of typesetting (\newcommand), or move and
// overlap it (\smash, \rlap, negative \hspace); and "%" starts a comment that runs to
// the end of the line. How small math sets its letters (\tiny, scripts) is measured
// with the elements around it (mathsize.go), and how wide it runs (mathwidth.go).

// hidingMacros are the commands whose use makes math worth reporting, whatever their
// arguments.
var hidingMacros = map[string]bool{
	// Reserve space but draw nothing, or draw with no width, height or depth.
	"phantom": true, "hphantom": true, "vphantom": true, "smash": true,
	// Overlap or move text, possibly off the page.
	"llap": true, "rlap": true, "clap": true, "mathllap": true, "mathrlap": true, "mathclap": true,
	"raise": true, "lower": true, "raisebox": true, "moveleft": true, "moveright": true,
	// CSS, classes, ids, data and links (the html extension; KaTeX's spellings too).
	"style": true, "class": true, "cssId": true, "href": true, "data": true,
	"htmlStyle": true, "htmlClass": true, "htmlId": true, "htmlData": true, "mmlToken": true,
	// Backgrounds and boxes that can match the text colour or carry CSS.
	"bbox": true, "colorbox": true, "fcolorbox": true, "definecolor": true,
	// Text shown only on hover or after a click, or only in some styles.
	"texttip": true, "mathtip": true, "tooltip": true, "toggle": true, "mathtoggle": true,
	"mathchoice": true,
	// Text that is never typeset: labels, macro definitions, conditionals, extensions.
	"label": true, "def": true, "gdef": true, "edef": true, "xdef": true, "let": true,
	"newcommand": true, "renewcommand": true, "newenvironment": true, "renewenvironment": true,
	"DeclareMathOperator": true, "iffalse": true, "require": true,
}

// spacingMacros move what follows by their argument; a negative one can push text
// out of sight or over other text.
var spacingMacros = map[string]bool{
	"hspace": true, "kern": true, "mkern": true, "hskip": true, "mskip": true, "mspace": true,
}

// mathHides returns the first command in the TeX source m that can hide text, as
// written (with its first argument, for a colour), or "". A "%" comment that has text
// after it counts only if comments is set: in a stretch of text that may not be math
// at all, "%" is more often a percent sign.
func mathHides(m []byte, comments bool) string {
	for i := 0; i < len(m); i++ {
		switch m[i] {
		case '\\':
			j := i + 1
			for j < len(m) && isASCIILetter(m[j]) {
				j++
			}
			if j == i+1 {
				i++ // a control symbol such as \\, \% or \$
				continue
			}
			name := string(m[i+1 : j])
			switch {
			case hidingMacros[name]:
				return `\` + name
			case name == "color" || name == "textcolor":
				if n, ok := colorVisible(m[j:]); !ok {
					return `\` + name + string(m[j:j+n])
				}
			case spacingMacros[name]:
				if r := bytes.TrimLeft(m[j:], " \t\r\n*"); bytes.HasPrefix(bytes.TrimLeft(bytes.TrimPrefix(r, []byte("{")), " \t"), []byte("-")) {
					return `\` + name
				}
			}
			i = j - 1
		case '%':
			if !comments {
				continue
			}
			rest := m[i+1:]
			if k := bytes.IndexByte(rest, '\n'); k >= 0 {
				rest = rest[:k]
			}
			if len(bytes.TrimSpace(rest)) > 0 {
				return "%"
			}
		}
	}
	return ""
}

// maxColorArg bounds the colour argument colorVisible reads.
const maxColorArg = 64

// colorVisible reads the colour argument at the start of r ("{red}", "[RGB]{0,128,0}")
// and says whether text in that colour stands out on both GitHub's light (#ffffff) and
// dark (#0d1117) backgrounds. It also returns the length of the argument it read. A
// colour it cannot read (unknown name, alpha, a macro) does not count as visible.
func colorVisible(r []byte) (int, bool) {
	n := 0
	skip := func() {
		for n < len(r) && n < maxColorArg && isSpaceByte(r[n]) {
			n++
		}
	}
	group := func(open, close byte) (string, bool) {
		if n >= len(r) || r[n] != open {
			return "", false
		}
		k := bytes.IndexByte(r[n:min(len(r), n+maxColorArg)], close)
		if k < 0 {
			return "", false
		}
		v := string(bytes.TrimSpace(r[n+1 : n+k]))
		n += k + 1
		return v, true
	}
	skip()
	model, _ := group('[', ']')
	skip()
	spec, ok := group('{', '}')
	if !ok {
		return n, false
	}
	c, ok := parseColor(model, spec)
	if !ok {
		return n, false
	}
	l := luminance(c)
	return n, contrast(l, 1) >= minContrast && contrast(l, darkBackground) >= minContrast
}

// minContrast is the WCAG contrast ratio below which coloured text counts as hidden:
// low enough that red, blue, green and grey text are not reported, high enough that
// white, yellow, black and navy text (each invisible on one of the themes) are.
const minContrast = 2

// darkBackground is the relative luminance of #0d1117, GitHub's dark background.
var darkBackground = luminance([3]float64{0x0d / 255.0, 0x11 / 255.0, 0x17 / 255.0})

// namedColors are common CSS colour names MathJax passes to the browser.
var namedColors = map[string]string{
	"black": "000000", "white": "ffffff", "gray": "808080", "grey": "808080", "silver": "c0c0c0",
	"red": "ff0000", "green": "008000", "blue": "0000ff", "yellow": "ffff00", "orange": "ffa500",
	"purple": "800080", "magenta": "ff00ff", "fuchsia": "ff00ff", "cyan": "00ffff", "aqua": "00ffff",
	"lime": "00ff00", "brown": "a52a2a", "teal": "008080", "olive": "808000", "maroon": "800000",
	"navy": "000080", "pink": "ffc0cb", "violet": "ee82ee", "crimson": "dc143c", "gold": "ffd700",
	"darkred": "8b0000", "darkgreen": "006400", "darkblue": "00008b", "darkorange": "ff8c00",
	"orangered": "ff4500", "tomato": "ff6347", "royalblue": "4169e1", "steelblue": "4682b4",
	"dodgerblue": "1e90ff", "seagreen": "2e8b57", "forestgreen": "228b22", "indigo": "4b0082",
	"coral": "ff7f50", "salmon": "fa8072", "chocolate": "d2691e", "sienna": "a0522d",
	"goldenrod": "daa520", "darkviolet": "9400d3", "deeppink": "ff1493", "hotpink": "ff69b4",
	"limegreen": "32cd32", "slategray": "708090", "darkgray": "a9a9a9", "lightgray": "d3d3d3",
}

// parseColor reads a colour in one of the models of MathJax's color extension: a name
// or #hex (no model), HTML, RGB (0–255), rgb (0–1) or gray (0–1).
func parseColor(model, spec string) ([3]float64, bool) {
	var c [3]float64
	switch model {
	case "":
		if h, ok := namedColors[strings.ToLower(spec)]; ok {
			return parseHex(h)
		}
		if h, ok := strings.CutPrefix(spec, "#"); ok {
			if len(h) == 3 {
				h = string([]byte{h[0], h[0], h[1], h[1], h[2], h[2]})
			}
			return parseHex(h)
		}
		return c, false
	case "HTML":
		return parseHex(spec)
	case "gray":
		v, err := strconv.ParseFloat(strings.TrimSpace(spec), 64)
		if err != nil || v < 0 || v > 1 {
			return c, false
		}
		return [3]float64{v, v, v}, true
	case "RGB", "rgb":
		parts := strings.Split(spec, ",")
		if len(parts) != 3 {
			return c, false
		}
		scale := 1.0
		if model == "RGB" {
			scale = 255
		}
		for i, p := range parts {
			v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
			if err != nil || v < 0 || v > scale {
				return c, false
			}
			c[i] = v / scale
		}
		return c, true
	}
	return c, false
}

func parseHex(h string) ([3]float64, bool) {
	var c [3]float64
	if len(h) != 6 {
		return c, false
	}
	for i := range 3 {
		v, err := strconv.ParseUint(h[2*i:2*i+2], 16, 8)
		if err != nil {
			return c, false
		}
		c[i] = float64(v) / 255
	}
	return c, true
}

// luminance is the WCAG relative luminance of an sRGB colour.
func luminance(c [3]float64) float64 {
	lin := func(v float64) float64 {
		if v <= 0.04045 {
			return v / 12.92
		}
		return math.Pow((v+0.055)/1.055, 2.4)
	}
	return 0.2126*lin(c[0]) + 0.7152*lin(c[1]) + 0.0722*lin(c[2])
}

func contrast(a, b float64) float64 {
	return (max(a, b) + 0.05) / (min(a, b) + 0.05)
}

func isSpaceByte(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// codeSpan records a code span whose content is src[start:stop]. Between dollars,
// $`…`$, a code span is GitHub's other spelling of inline math: then it is recorded
// whole, dollars included (so mathInText skips it), and reported if it hides text.
func (s *scanner) codeSpan(start, stop int) {
	a, b := start, stop
	// goldmark drops one space (or line ending) next to each run of backticks.
	if a > 1 && isSpaceByte(s.src[a-1]) && s.src[a-2] == '`' {
		a--
	}
	if b+1 < len(s.src) && isSpaceByte(s.src[b]) && s.src[b+1] == '`' {
		b++
	}
	opening, closing := 0, 0
	for a > 0 && s.src[a-1] == '`' {
		a--
		opening++
	}
	for b < len(s.src) && s.src[b] == '`' {
		b++
		closing++
	}
	if opening == 0 || opening != closing || a == 0 || s.src[a-1] != '$' || b >= len(s.src) || s.src[b] != '$' {
		s.code = append(s.code, [2]int{start, stop})
		return
	}
	s.code = append(s.code, [2]int{a - 1, b + 1})
	if s.mathSpans == nil {
		s.mathSpans = map[int]bool{}
	}
	s.mathSpans[start] = true
	s.measureMath(start, stop, a-1, b+1)
	s.mathPastEdge(start, stop, a-1, b+1)
	if cmd := mathHides(s.src[start:stop], true); cmd != "" {
		s.add(MathHiding, a-1, Finding{Text: s.text(a-1, b+1), Target: cmd})
	}
}

// mathInText reports the $…$ and $$…$$ math in src[start:stop], a block of inline
// content, that hides text. Dollars in code and escaped dollars do not count.
//
// It does not decide which dollars GitHub pairs: every stretch between two runs of
// dollars in a row is checked, so a pairing this misses cannot hide a command. Prose
// between two math spans is checked too, which costs nothing unless the prose itself
// holds a hiding command. A "%" comment counts only where the stretch is surely math:
// between "$$"s, or between "$"s with no space just inside them and no digit after.
func (s *scanner) mathInText(start, stop int) {
	c := sort.Search(len(s.code), func(i int) bool { return s.code[i][1] > start })
	var runs [][2]int
	for i := start; i < stop; {
		for c < len(s.code) && s.code[c][1] <= i {
			c++
		}
		if c < len(s.code) && s.code[c][0] <= i {
			i = s.code[c][1]
			continue
		}
		switch s.src[i] {
		case '\\':
			i += 2
			continue
		case '$':
			j := i
			for j < stop && s.src[j] == '$' {
				j++
			}
			runs = append(runs, [2]int{i, j})
			i = j
			continue
		}
		i++
	}
	for k := 0; k+1 < len(runs); k++ {
		a, b := runs[k], runs[k+1]
		m := s.src[a[1]:b[0]]
		if len(m) == 0 {
			continue
		}
		display := a[1]-a[0] >= 2 && b[1]-b[0] >= 2
		inline := !isSpaceByte(m[0]) && !isSpaceByte(m[len(m)-1]) &&
			(b[1] >= len(s.src) || s.src[b[1]] < '0' || s.src[b[1]] > '9')
		if cmd := mathHides(m, display || inline); cmd != "" {
			s.add(MathHiding, a[0], Finding{Text: s.text(a[0], b[1]), Target: cmd})
		}
		s.measureMath(a[1], b[0], a[0], b[1])
	}
	s.mathInTextPastEdge(runs)
}

// mathInTextPastEdge reports the math between the dollar runs of a block of inline
// content that is wider than the columns in view. Width, unlike a hiding command, is
// found in prose too, so here the runs are paired as GitHub pairs them, left to right:
// a run opens math unless a space follows it ("$$" always), and the math runs to the
// next run that can close it, one with no space before it and no digit after ("$$"
// always); a "$5" inside is part of it.
func (s *scanner) mathInTextPastEdge(runs [][2]int) {
	display := func(r [2]int) bool { return r[1]-r[0] >= 2 }
	for k := 0; k+1 < len(runs); k++ {
		a := runs[k]
		if !display(a) && (a[1] >= len(s.src) || isSpaceByte(s.src[a[1]])) {
			continue
		}
		l := k + 1
		for ; l < len(runs); l++ {
			b := runs[l]
			if display(b) || (!isSpaceByte(s.src[b[0]-1]) && (b[1] >= len(s.src) || s.src[b[1]] < '0' || s.src[b[1]] > '9')) {
				break
			}
		}
		if l == len(runs) {
			return // no run after a closes math, nor any after a later one
		}
		s.mathPastEdge(a[1], runs[l][0], a[0], runs[l][1])
		k = l
	}
}

// measureMath notes the letters of the TeX src[start:stop] that are smaller than the
// text around it, for tinyText; src[from:to] is the whole math, delimiters included.
func (s *scanner) measureMath(start, stop, from, to int) {
	if m, ok := measureMath(s.src[start:stop], start); ok {
		m.from, m.to = from, to
		s.mathSizes = append(s.mathSizes, m)
	}
}
