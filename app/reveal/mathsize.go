package reveal

import (
	"bytes"
	"sort"
	"strings"
)

// --- the size of math ---------------------------------------------------------------

// MathJax sets math at the size of the text around it, then shrinks some of it: the
// size commands (\tiny is half the size), subscripts and superscripts, fractions'
// parts in text style, roots' indices, and the script styles. Alone each is readable
// (\tiny is at Scan's limit of half the size, a script at 71 %); inside <small> or
// <sub>, which shrink the text around the math, they are not. mathShrink measures the
// smallest letters of a stretch of TeX, and tinyText multiplies that into the size of
// the elements around it.

// mathSizeCommands are MathJax's (and KaTeX's) size commands that shrink, with the size
// they set relative to the text around the math; where the two differ, the smaller.
// The size commands set a size, they do not multiply it: in a group under \tiny,
// \small sets 85 %. Scan keeps the smallest in effect, so that a command that enlarges
// text again (\normalsize, \Huge) makes it report more, never less.
var mathSizeCommands = map[string]float64{
	"tiny": 0.5, "Tiny": 0.6, "sixptsize": 0.6, "scriptsize": 0.7, "footnotesize": 0.8, "small": 0.85,
}

// scriptScale is how much each script level shrinks (MathJax's scriptsizemultiplier,
// TeX's script sizes): 71 % for a script, 50 % for a script of a script, and no
// smaller, as in TeX and MathJax.
var scriptScale = [...]float64{1, 0.71, 0.71 * 0.71}

// scriptArgs are the commands whose arguments are set a script level (or two) smaller:
// the increment of each mandatory argument in order, and of an optional [argument].
// Fractions and binomials are counted as in text style (inline math), where their
// parts are scripts; in display math they are not, which only makes Scan report more.
var scriptArgs = map[string]struct {
	args []int
	opt  int
}{
	"frac": {[]int{1, 1}, 0}, "tfrac": {[]int{1, 1}, 0}, "binom": {[]int{1, 1}, 0}, "tbinom": {[]int{1, 1}, 0},
	"genfrac": {[]int{0, 0, 0, 0, 1, 1}, 0}, "sqrt": {[]int{0}, 2},
	"overset": {[]int{1, 0}, 0}, "underset": {[]int{1, 0}, 0}, "stackrel": {[]int{1, 0}, 0},
	"substack":    {[]int{1}, 0},
	"xrightarrow": {[]int{1}, 1}, "xleftarrow": {[]int{1}, 1}, "xleftrightarrow": {[]int{1}, 1},
	"xRightarrow": {[]int{1}, 1}, "xLeftarrow": {[]int{1}, 1}, "xLeftrightarrow": {[]int{1}, 1},
	"xmapsto": {[]int{1}, 1}, "xhookrightarrow": {[]int{1}, 1}, "xhookleftarrow": {[]int{1}, 1},
	"xlongequal": {[]int{1}, 1}, "xtwoheadrightarrow": {[]int{1}, 1}, "xtwoheadleftarrow": {[]int{1}, 1},
}

// scriptEnvironments set their content in script style.
var scriptEnvironments = map[string]bool{"smallmatrix": true, "subarray": true}

// mathShrink is the smallest size of the letters of a stretch of math, relative to the
// text around it, where it is below 1: src[start:stop] covers those letters, why names
// what makes them so small (`\tiny`, `_`, `\frac`), outermost first, and src[from:to]
// is the whole math, delimiters included, which a finding quotes.
type mathShrink struct {
	start, stop int
	factor      float64
	why         []string
	from, to    int
}

// texGroup is a group of TeX ("{…}", or an optional "[…]" argument) as measureMath
// reads it.
type texGroup struct {
	level   int     // script level, 0 to 2
	size    float64 // the smallest size command in effect, 1 for none
	why     []string
	close   byte        // '}' or ']'
	pending []scriptArg // the arguments still to come at this level, the next one last
	opt     scriptArg   // an optional argument that may come next (inc 0 for none)
	carry   scriptArg   // what a command in a script's place passes to its arguments
}

// scriptArg is an argument a construct (why: "_", `rac`) sets inc script levels
// smaller.
type scriptArg struct {
	inc int
	why string
}

// next takes the pending argument, if any, for the next thing at the group's level.
func (g *texGroup) next() scriptArg {
	if len(g.pending) == 0 {
		return scriptArg{}
	}
	a := g.pending[len(g.pending)-1]
	g.pending = g.pending[:len(g.pending)-1]
	return a
}

// with is the group's level and reasons after a script argument a. A reason is added
// only where the level grows (it stops at 2), so the reasons stay few however deep
// the scripts nest.
func (g *texGroup) with(a scriptArg) (int, []string) {
	level := min(g.level+a.inc, 2)
	if level == g.level {
		return g.level, g.why
	}
	return level, append(g.why[:len(g.why):len(g.why)], a.why)
}

// measureMath returns the smallest letters of the TeX in m, at offset base of the input,
// and ok if they are smaller than the text around the math. A letter is any character
// that is not a space, a TeX special or part of a command's name.
func measureMath(m []byte, base int) (mathShrink, bool) {
	stack := []texGroup{{size: 1}}
	best := mathShrink{factor: 1}
	glyph := func(i, j int, g *texGroup, a scriptArg) {
		level, why := g.with(a)
		switch f := g.size * scriptScale[level]; {
		case f < best.factor:
			best = mathShrink{start: base + i, stop: base + j, factor: f, why: why}
		case f == best.factor && f < 1:
			best.stop = base + j
		}
	}
	for i := 0; i < len(m); i++ {
		g := &stack[len(stack)-1]
		switch c := m[i]; {
		case c == '{' || (c == '[' && g.opt.inc > 0):
			a := g.opt
			if c == '{' {
				a = g.next()
				if g.carry.inc > 0 {
					a = scriptArg{a.inc + g.carry.inc, g.carry.why}
				}
			}
			g.opt = scriptArg{}
			level, why := g.with(a)
			stack = append(stack, texGroup{level: level, size: g.size, why: why, close: map[byte]byte{'{': '}', '[': ']'}[c]})
		case (c == '}' || c == ']') && c == g.close && len(stack) > 1:
			stack = stack[:len(stack)-1]
		case c == '_' || c == '^':
			g.pending = append(g.pending, scriptArg{1, string(c)})
			g.opt, g.carry = scriptArg{}, scriptArg{}
		case c == '%':
			for i+1 < len(m) && m[i+1] != '\n' {
				i++
			}
		case c == '\\':
			j := i + 1
			for j < len(m) && isASCIILetter(m[j]) {
				j++
			}
			if j == i+1 {
				// A control symbol: \{ \} \$ \% \_ \& \# show a character.
				if j < len(m) && strings.IndexByte(`{}$%_&#`, m[j]) >= 0 {
					glyph(i, j+1, g, g.next())
				}
				g.opt, g.carry = scriptArg{}, scriptArg{}
				i = j
				continue
			}
			name := string(m[i+1 : j])
			i = j - 1
			// A command in a script's place (_\text{…}) passes the script to its
			// arguments.
			g.carry, g.opt = g.next(), scriptArg{}
			i = texCommand(g, name, m, i)
		case isSpaceByte(c) || c == '~' || c == '&' || c == '$' || c == '#':
		default:
			glyph(i, i+1, g, g.next())
			g.opt, g.carry = scriptArg{}, scriptArg{}
		}
	}
	return best, best.factor < 1
}

// texCommand applies the command \name, whose name ends at m[i], to the group g, and
// returns where reading goes on (past an environment's name).
func texCommand(g *texGroup, name string, m []byte, i int) int {
	switch {
	case mathSizeCommands[name] > 0:
		if f := mathSizeCommands[name]; f < g.size {
			g.size = f
			g.why = append(g.why[:len(g.why):len(g.why)], `\`+name)
		}
	case name == "scriptstyle" || name == "scriptscriptstyle":
		if l := strings.Count(name, "script"); l > g.level {
			g.level = l
			g.why = append(g.why[:len(g.why):len(g.why)], `\`+name)
		}
	case name == "begin" || name == "end":
		k := i + 1
		for k < len(m) && isSpaceByte(m[k]) {
			k++
		}
		if k >= len(m) || m[k] != '{' {
			return i
		}
		e := bytes.IndexByte(m[k:min(len(m), k+maxColorArg)], '}')
		if e < 0 {
			return i
		}
		if env := string(bytes.TrimSpace(m[k+1 : k+e])); name == "begin" && scriptEnvironments[env] && g.level < 2 {
			g.level++
			g.why = append(g.why[:len(g.why):len(g.why)], env)
		}
		return k + e
	default:
		if a, ok := scriptArgs[name]; ok {
			for k := len(a.args) - 1; k >= 0; k-- {
				g.pending = append(g.pending, scriptArg{a.args[k], `\` + name})
			}
			if a.opt > 0 {
				g.opt = scriptArg{a.opt, `\` + name + "[…]"}
			}
		}
	}
	return i
}

// mathShrinks sorts the recorded stretches of math and merges those that overlap (a
// $`…`$ inside a stretch between two dollars), keeping the smaller letters, so that
// shrinkOf can search them.
func (s *scanner) mathShrinks() []mathShrink {
	ms := s.mathSizes
	sort.Slice(ms, func(i, j int) bool { return ms[i].start < ms[j].start })
	var out []mathShrink
	for _, m := range ms {
		if k := len(out) - 1; k >= 0 && m.start < out[k].stop {
			if m.factor < out[k].factor {
				m.start, m.stop = min(m.start, out[k].start), max(m.stop, out[k].stop)
				m.from, m.to = min(m.from, out[k].from), max(m.to, out[k].to)
				out[k] = m
			} else {
				out[k].stop = max(out[k].stop, m.stop)
				out[k].from, out[k].to = min(m.from, out[k].from), max(m.to, out[k].to)
			}
			continue
		}
		out = append(out, m)
	}
	return out
}

// shrinkOf is the smallest math among ms (sorted, apart) whose letters lie in
// src[start:stop], with factor 1 if none.
func shrinkOf(ms []mathShrink, start, stop int) mathShrink {
	best := mathShrink{factor: 1}
	for i := sort.Search(len(ms), func(i int) bool { return ms[i].stop > start }); i < len(ms) && ms[i].start < stop; i++ {
		if ms[i].factor < best.factor {
			best = ms[i]
		}
	}
	return best
}
