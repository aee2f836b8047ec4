package reveal

import (
	"bytes"
	"strconv"
)

// --- math past the right edge -------------------------------------------------------

// MathJax does not break math into lines: a formula wider than the comment runs past
// its right edge, out of view. Positive spacing (\hspace{80em}, sixty \qquad) or one
// long \text puts text there as surely as spaces in a code block do. mathWidth
// estimates the width of the widest line of some TeX, counted wide, so that a formula
// is reported a little early, never late.

// Widths in em of MathJax's math, which it sets about a fifth larger than the text
// around it.
const (
	glyphEm   = 0.6  // a letter, digit or symbol (most are narrower)
	wideEm    = 1.2  // a character outside ASCII
	spaceEm   = 0.25 // a space, which shows only in \text
	commandEm = 1.0  // any other command: a symbol (\sum), a space (\quad), a font change
	columnEm  = 1.0  // "&", between the columns of an array
	symbolEm  = 0.3  // a control symbol: \, \; \  \!
	unknownEm = 1000 // an amount Scan cannot read (a macro, \fill): off the page
	// mathEmPerColumn is how many em of math a column of code (7.1 px) holds: math's em
	// is about 1.2 × 14 px.
	mathEmPerColumn = 7.1 / (1.2 * 14)
)

// namedSpaces are the spacing commands without an argument wider than commandEm.
var namedSpaces = map[string]float64{"qquad": 2}

// texUnits are the em of TeX's units, in math at 14 px × 1.2 (16.8 px to the em).
var texUnits = map[string]float64{
	"em": 1, "ex": 0.45, "mu": 1.0 / 18, "pt": 1.0 / 10, "bp": 1.0 / 10, "dd": 1.07 / 10, "pc": 12.0 / 10,
	"cc": 12.84 / 10, "px": 1 / 16.8, "in": 96 / 16.8, "cm": 96 / 2.54 / 16.8, "mm": 96 / 25.4 / 16.8, "sp": 1.0 / 655360,
}

// mathWidth estimates the width, in em of math, of the widest line of the TeX m (lines
// end at "\\").
func mathWidth(m []byte) float64 {
	widest, cur := 0.0, 0.0
	for i := 0; i < len(m); i++ {
		switch c := m[i]; {
		case c == '\\':
			j := i + 1
			for j < len(m) && isASCIILetter(m[j]) {
				j++
			}
			if j == i+1 {
				if j < len(m) && m[j] == '\\' {
					widest, cur = max(widest, cur), 0
				} else {
					cur += symbolEm
				}
				i = j
				continue
			}
			name := m[i+1 : j]
			switch {
			case spacingMacros[string(name)]:
				em, n := spacingAmount(m[j:])
				cur += max(em, 0)
				j += n
			case namedSpaces[string(name)] > 0:
				cur += namedSpaces[string(name)]
			default:
				cur += commandEm
			}
			i = j - 1
		case c == '%':
			for i+1 < len(m) && m[i+1] != '\n' {
				i++
			}
		case c == '&':
			cur += columnEm
		case isSpaceByte(c):
			cur += spaceEm
		case c == '{' || c == '}' || c == '^' || c == '_':
		case c >= 0x80 && c < 0xC0: // inside a character outside ASCII
		case c >= 0xC0:
			cur += wideEm
		default:
			cur += glyphEm
		}
	}
	return max(widest, cur)
}

// maxAmount bounds how much of a spacing command's argument spacingAmount reads.
const maxAmount = 32

// spacingAmount reads the amount at the start of r, the argument of a spacing command
// ("{80em}", " 30cm", "1000mu", "*{-2em}"), and returns it in em of math and how many
// bytes it took; an amount it cannot read is unknownEm.
func spacingAmount(r []byte) (float64, int) {
	r = r[:min(len(r), maxAmount)]
	n := len(r) - len(bytes.TrimLeft(r, " \t\r\n*"))
	braced := n < len(r) && r[n] == '{'
	if braced {
		n++
	}
	for n < len(r) && isSpaceByte(r[n]) {
		n++
	}
	k := n
	for k < len(r) && (r[k] == '-' || r[k] == '+' || r[k] == '.' || r[k] >= '0' && r[k] <= '9') {
		k++
	}
	v, err := strconv.ParseFloat(string(r[n:k]), 64)
	for k < len(r) && isSpaceByte(r[k]) {
		k++
	}
	if err != nil || k+2 > len(r) || texUnits[string(r[k:k+2])] == 0 {
		return unknownEm, n
	}
	em := v * texUnits[string(r[k:k+2])]
	k += 2
	if braced && k < len(r) && r[k] == '}' {
		k++
	}
	return em, k
}

// mathPastEdge reports the math src[from:to], whose TeX is src[start:stop], when it is
// wider than the columns in view.
func (s *scanner) mathPastEdge(start, stop, from, to int) {
	limit := s.visibleColumns()
	if mathWidth(s.src[start:stop]) > float64(limit)*mathEmPerColumn {
		s.add(OffScreen, from, Finding{Text: s.text(from, to), Target: strconv.Itoa(limit)})
	}
}
