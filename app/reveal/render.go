package reveal

import (
	"fmt"
	"html"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/bumperdev/bumper/internal/mdcode"
	"github.com/bumperdev/bumper/internal/textcut"
)

// Bounds of Render's output. A GitHub comment holds at most 65536 characters and the
// status comment has more to say than this: it keeps a note on hidden text of at most
// ledger.MaxNotice bytes (12 KiB), and of a longer one only says there is too much to
// list. Items stop 2500 bytes short of MaxRenderLen, room for the note that the list is
// incomplete and the count of what is left out (each naming every kind at most once),
// the legend and the marker note.
const (
	// MaxRenderLen bounds the length in bytes of what Render returns.
	MaxRenderLen = 12000
	// MaxListed is the most items Render lists; it counts the rest by kind.
	MaxListed = 40
	// MaxQuote is the most characters of one quoted text Render shows; it says how
	// many more there are.
	MaxQuote = 400
	// WrapColumns is the longest line of a quoted block Render writes, in columns: a
	// longer one is broken, each continuation starting with wrapMark. Quoted lines stay
	// inside the status comment's width (see maxColumn), so the notice hides nothing
	// off to the right itself.
	WrapColumns = 100

	maxQuoteLines   = 20  // lines of one quoted block
	maxInline       = 200 // characters of a link's text or target
	maxContext      = 120 // characters of the context of a hidden character
	maxNames        = 6   // distinct characters named per finding
	maxCommand      = 80  // characters of a MathHiding command
	maxPlaces       = 8   // lines named for a text found at several places
	maxTried        = 4 * MaxListed
	itemsBudget     = MaxRenderLen - 2500
	wrapMark        = "↪ "
	wrapMarkColumns = 2
)

const (
	header = "**This issue contains text the rendered page does not show.** " +
		"The agent will read it; approve only if you accept it:\n\n"
	// incomplete opens the notice when it leaves something out or cuts a quote short.
	incomplete = "**This list is incomplete: read the issue's Markdown source (Edit) before you approve.** " +
		"The agent reads all of it."
	// markerNote is added when a quote contained an HTML comment marker. Written out,
	// the markers would end the HTML comment that carries the status comment's record
	// (and start new ones), so quotes show them with a space inserted.
	markerNote = " HTML comment markers in quotes are shown with a space, as `<! --` and `-- >`."
)

var legend = fmt.Sprintf("\nQuotes are shown as code, with hidden characters written as `[U+XXXX]`"+
	" and lines longer than %d columns broken, each continuation starting with `%s`.", WrapColumns, strings.TrimSpace(wrapMark))

// Render writes findings as Markdown for the approver: a bold lead sentence and a list,
// one item per finding in the order given (title findings first, if the caller puts
// them first); findings of one kind with the same text are one item naming each line.
// It returns "" for no findings.
//
// Everything taken from the input is quoted in code (a code span, or a fenced block
// indented under the list item whose fence is longer than any backtick run inside), so
// Markdown, HTML, links and @mentions in it are shown, not interpreted. Inside code,
// character references do not decode, so the two sequences that could end or start
// the HTML comment holding the status comment's machine record are broken up with a
// space instead: "<!--" is shown as "<! --" and "-->" as "-- >" (repeated until
// neither is left), and a note says so. Hidden characters are shown as "[U+202E]" in
// quotes and by name in the item. The output therefore never contains "<!--", "-->",
// a hidden character (any rune Scan classifies), raw HTML or a live @mention. A quoted
// block's lines longer than WrapColumns are broken, so nothing of the notice lies past
// the comment's right edge.
//
// The output is bounded: at most MaxListed items, each quote cut at MaxQuote characters
// (or maxQuoteLines lines) with "… (K more characters)", items left out once the output
// would pass MaxRenderLen bytes, and a last item counting, by kind, what was left out.
// What is left out is chosen to be the least suspicious: items of the kinds ordinary
// issues hold too (HTML comments of issue templates, collapsed logs, long code lines,
// titles and alt texts) are left out before the rest (rank). Whenever the notice leaves
// an item out or cuts a quote short, it says so at its top, counts every finding by
// kind, and tells the approver to read the Markdown source before approving.
//
// The output is block-level Markdown ending in a newline: put it on its own lines (not in
// a table cell or a quote) before anything else in the comment, such as the record.
func Render(findings []Finding) string { return RenderWith(header, findings) }

// RenderWith is Render under another lead sentence than the issue's: lead is Bumper's
// own words (bold, ending in a blank line), for a note on text other than an issue's,
// such as what a revise round took from a pull request's reviews.
func RenderWith(lead string, findings []Finding) string {
	if len(findings) == 0 {
		return ""
	}
	groups := sameFindings(findings)
	order := make([]int, len(groups))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return rank(groups[order[a]].f.Kind) < rank(groups[order[b]].f.Kind) })
	items := make([]renderedItem, len(groups))
	listed, used, cut, marked := 0, len(lead), 0, false
	for tried, i := range order {
		if listed == MaxListed || tried == maxTried || itemsBudget-used < minItem {
			break
		}
		it := renderItem(groups[i])
		if used+len(it.text) > itemsBudget {
			continue
		}
		it.listed = true
		items[i] = it
		used += len(it.text)
		listed++
		if it.cut {
			cut++
		}
		marked = marked || it.marked
	}
	var left []Finding
	for i, g := range groups {
		if !items[i].listed {
			for range g.count {
				left = append(left, g.f)
			}
		}
	}
	var b strings.Builder
	b.WriteString(lead)
	if len(left) > 0 || cut > 0 {
		b.WriteString(incompleteNote(len(findings), countKinds(findings), len(left), cut))
	}
	for _, it := range items {
		if it.listed {
			b.WriteString(it.text)
		}
	}
	if len(left) > 0 {
		b.WriteString(restItem(len(left), countKinds(left)))
	}
	b.WriteString(legend)
	if marked {
		b.WriteString(markerNote)
	}
	b.WriteString("\n")
	return b.String()
}

// minItem is shorter than any item Render writes: with less room left, it stops trying.
const minItem = 40

// incompleteNote says, at the top of the notice, that of the all findings (counted by
// kind in kinds) it leaves left out and cuts cut quotes short.
func incompleteNote(all int, kinds map[Kind]int, left, cut int) string {
	var parts []string
	if left > 0 {
		parts = append(parts, fmt.Sprintf("%d %s not listed (counted at the end)", left, map[bool]string{true: "is", false: "are"}[left == 1]))
	}
	if cut > 0 {
		parts = append(parts, fmt.Sprintf("%d %s cut short", cut, map[bool]string{true: "quote is", false: "quotes are"}[cut == 1]))
	}
	return fmt.Sprintf("%s It found %d (%s): %s.\n\n", incomplete, all, counts(kinds), strings.Join(parts, ", and "))
}

// restItem is the last item of a notice that leaves left findings out, counting them by
// kind.
func restItem(left int, kinds map[Kind]int) string {
	return fmt.Sprintf("- …and %d more not listed: %s.\n", left, counts(kinds))
}

// group is one or more findings of one kind with the same text, at the lines named.
type group struct {
	f     Finding
	lines []int // the lines past the first, at most maxPlaces
	count int
}

// sameFindings groups the findings that differ only by line, in the order of the first
// of each: forty copies of an issue template's comment are one item.
func sameFindings(findings []Finding) []group {
	type key struct {
		kind                           Kind
		title                          bool
		text, visible, target, context string
		size                           float64
	}
	var groups []group
	at := map[key]int{}
	for _, f := range findings {
		k := key{f.Kind, f.InTitle, f.Text, f.Visible, f.Target, f.Context, f.Size}
		if i, ok := at[k]; ok {
			g := &groups[i]
			g.count++
			if len(g.lines) < maxPlaces && f.Line != g.f.Line {
				g.lines = append(g.lines, f.Line)
			}
			continue
		}
		at[k] = len(groups)
		groups = append(groups, group{f: f, count: 1})
	}
	return groups
}

// rank orders kinds by how little they stand out in an ordinary issue: when the notice
// must leave items out, it leaves out those of the highest rank first. Issue templates
// fill issues with HTML comments, logs go in collapsed sections and long code lines,
// and titles and alt texts are common; the other kinds are rare in an honest issue.
func rank(k Kind) int {
	switch k {
	case HTMLComment, Collapsed, OffScreen:
		return 2
	case LinkTitle, ImageAlt:
		return 1
	}
	return 0
}

// renderedItem is one item of the list as Render writes it.
type renderedItem struct {
	text   string
	cut    bool // a quote in it was cut short
	marked bool // a quote in it had a comment marker broken up
	listed bool
}

func renderItem(g group) renderedItem {
	q := &quoter{}
	where := "title"
	if !g.f.InTitle {
		where = fmt.Sprintf("line %d", g.f.Line)
		if g.count > 1 {
			where = places(g)
		}
	}
	text := q.item(g.f, where)
	return renderedItem{text: text, cut: q.cut, marked: q.Marked}
}

// places names the lines of a group: "lines 3, 5 and 7 (the same 3 times)".
func places(g group) string {
	lines := []string{fmt.Sprint(g.f.Line)}
	for _, l := range g.lines {
		lines = append(lines, fmt.Sprint(l))
	}
	s := "line " + lines[0]
	switch more := g.count - len(lines); {
	case more > 0 && len(lines) > 1:
		s = "lines " + strings.Join(lines, ", ") + fmt.Sprintf(" and %d more", more)
	case len(lines) > 1:
		s = "lines " + strings.Join(lines[:len(lines)-1], ", ") + " and " + lines[len(lines)-1]
	}
	return s + fmt.Sprintf(" (the same %d times)", g.count)
}

// quoter quotes text through mdcode.Quoter, which remembers whether it had to break up
// a comment marker, and remembers whether it cut a quote short.
type quoter struct {
	mdcode.Quoter
	cut bool
}

// item writes one finding as a list item, where being "line 3", "title" or the lines of
// a group.
func (q *quoter) item(f Finding, where string) string {
	switch f.Kind {
	case HTMLComment:
		label := "**HTML comment** (hidden on the page)"
		if !strings.HasSuffix(f.Text, "-->") {
			label = "**unclosed HTML comment** (hides everything after it)"
		}
		return "- " + where + ": " + label + ":" + q.block(f.Text)
	case RawHTML:
		return "- " + where + ": **raw HTML** (the page may hide or change it):" + q.block(f.Text)
	case LinkDefinition:
		return "- " + where + ": **link reference definition no link uses** (not shown):" + q.block(f.Text)
	case FootnoteDefinition:
		return "- " + where + ": **footnote definition no reference uses** (not shown):" + q.block(f.Text)
	case DiagramHidden:
		return "- " + where + ": **Mermaid comment, directive or description** (not shown in the diagram):" + q.block(f.Text)
	case MathHiding:
		return "- " + where + ": **math that can hide text**, using " + q.inline(f.Target, maxCommand) +
			" (the page may not show all of it):" + q.block(f.Text)
	case ViewerBlock:
		return "- " + where + ": **block shown as a map or 3D model** (its text is not shown):" + q.block(f.Text)
	case Collapsed:
		label := "**collapsed section**"
		if f.Visible != "" {
			label += " " + q.inline(f.Visible, maxInline)
		}
		return "- " + where + ": " + label + " (the approver must expand it to read it):" + q.block(f.Text)
	case TinyText:
		if f.Size <= 0 {
			return "- " + where + ": **text the page does not show**, inside " + q.inline(f.Target, maxCommand) + ":" + q.block(f.Text)
		}
		return "- " + where + ": **text too small to read**, shown at " + percent(f.Size) + " of the normal size inside " +
			q.inline(f.Target, maxCommand) + ":" + q.block(f.Text)
	case DeepNesting:
		return "- " + where + ": **markup nested deeper than browsers show** (" + q.inline(f.Target, maxCommand) +
			" elements): what the page shows of this issue, and at what size, cannot be told; all of it:" + q.block(f.Text)
	case DiagramStyled:
		return "- " + where + ": **Mermaid diagram that styles its own text**, with " + q.inline(f.Target, maxInline) +
			" (a style can make any label invisible or too small to read); the whole diagram:" + q.block(f.Text)
	case DroppedCells:
		return "- " + where + ": **table cells past the header's count** (the page drops them):" + q.block(f.Text)
	case OffScreen:
		return "- " + where + ": **code, table or math past column " + q.inline(f.Target, maxCommand) +
			"** (shown unwrapped: out of view unless the reader scrolls sideways):" + q.block(f.Text)
	case LinkDestination:
		label := "**link or image destination holding spaces or hidden characters**"
		if strings.TrimSpace(f.Visible) != "" {
			label += ", behind " + q.inline(f.Visible, maxInline)
		}
		return "- " + where + ": " + label + " (shown only on mouse-over, if at all):" + q.block(f.Text)
	case LinkTitle:
		return "- " + where + ": **link or image title** (shown only on mouse-over):" + q.block(f.Text)
	case ImageAlt:
		return "- " + where + ": **image alt text** (not shown while the image displays):" + q.block(f.Text)
	case LinkMismatch:
		if f.Visible == "" {
			return "- " + where + ": **link with no visible text**, leading to " + q.inline(f.Target, maxInline) + "\n"
		}
		return "- " + where + ": **link text differs from where it leads**: shows " +
			q.inline(f.Visible, maxInline) + ", leads to " + q.inline(f.Target, maxInline) + "\n"
	case InvisibleChar, BidiControl, TagChar:
		return "- " + where + ": " + q.chars(f) + "\n"
	}
	return "- " + where + ": **" + q.inline(string(f.Kind), 40) + "**:" + q.block(f.Text)
}

// chars describes a run of hidden characters: their names (or, for tag characters, the
// ASCII they spell), the character references that wrote them, and where they are.
func (q *quoter) chars(f Finding) string {
	runes := []rune(f.Text)
	entity := strings.HasPrefix(f.Text, "&")
	if entity {
		runes = []rune(html.UnescapeString(f.Text))
	}
	var b strings.Builder
	switch f.Kind {
	case BidiControl:
		b.WriteString("**bidirectional control characters** (they reorder how the text around them is displayed): ")
	case TagChar:
		b.WriteString("**Unicode tag characters** (invisible copies of ASCII): ")
	default:
		b.WriteString("**invisible characters**: ")
	}
	if f.Kind == TagChar {
		var decoded strings.Builder
		for _, r := range runes {
			if r >= 0xE0020 && r <= 0xE007E {
				decoded.WriteRune(r - 0xE0000)
			}
		}
		b.WriteString("spelling " + q.inline(decoded.String(), MaxQuote))
		fmt.Fprintf(&b, " (%d characters)", len(runes))
	} else {
		b.WriteString(names(runes))
	}
	if entity {
		b.WriteString(", written as the character references " + q.inline(f.Text, MaxQuote))
	}
	if f.Context != "" && f.Context != f.Text {
		// The context is text the page shows: cut, it leaves nothing hidden out.
		cut := q.cut
		b.WriteString(", in " + q.inline(f.Context, maxContext))
		q.cut = cut
	}
	return b.String()
}

// names lists the distinct runes in order of appearance with their counts.
func names(runes []rune) string {
	var order []rune
	count := map[rune]int{}
	for _, r := range runes {
		if count[r] == 0 {
			order = append(order, r)
		}
		count[r]++
	}
	var parts []string
	for i, r := range order {
		if i == maxNames {
			parts = append(parts, fmt.Sprintf("and %d more kinds", len(order)-maxNames))
			break
		}
		p := RuneName(r)
		if count[r] > 1 {
			p += fmt.Sprintf(" ×%d", count[r])
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

// runeNames names the hidden characters met most often.
var runeNames = map[rune]string{
	0x0000: "NULL", 0x0008: "BACKSPACE", 0x001B: "ESCAPE", 0x007F: "DELETE",
	0x0085: "NEXT LINE", 0x00AD: "SOFT HYPHEN", 0x034F: "COMBINING GRAPHEME JOINER",
	0x061C: "ARABIC LETTER MARK", 0x115F: "HANGUL CHOSEONG FILLER", 0x1160: "HANGUL JUNGSEONG FILLER",
	0x17B4: "KHMER VOWEL INHERENT AQ", 0x17B5: "KHMER VOWEL INHERENT AA",
	0x180E: "MONGOLIAN VOWEL SEPARATOR", 0x200B: "ZERO WIDTH SPACE", 0x200C: "ZERO WIDTH NON-JOINER",
	0x200D: "ZERO WIDTH JOINER", 0x200E: "LEFT-TO-RIGHT MARK", 0x200F: "RIGHT-TO-LEFT MARK",
	0x2028: "LINE SEPARATOR", 0x2029: "PARAGRAPH SEPARATOR", 0x202A: "LEFT-TO-RIGHT EMBEDDING",
	0x202B: "RIGHT-TO-LEFT EMBEDDING", 0x202C: "POP DIRECTIONAL FORMATTING",
	0x202D: "LEFT-TO-RIGHT OVERRIDE", 0x202E: "RIGHT-TO-LEFT OVERRIDE", 0x2060: "WORD JOINER",
	0x2061: "FUNCTION APPLICATION", 0x2062: "INVISIBLE TIMES", 0x2063: "INVISIBLE SEPARATOR",
	0x2064: "INVISIBLE PLUS", 0x2066: "LEFT-TO-RIGHT ISOLATE", 0x2067: "RIGHT-TO-LEFT ISOLATE",
	0x2068: "FIRST STRONG ISOLATE", 0x2069: "POP DIRECTIONAL ISOLATE", 0x3164: "HANGUL FILLER",
	0xFEFF: "ZERO WIDTH NO-BREAK SPACE", 0xFFA0: "HALFWIDTH HANGUL FILLER",
	0xFFF9: "INTERLINEAR ANNOTATION ANCHOR", 0xFFFA: "INTERLINEAR ANNOTATION SEPARATOR",
	0xFFFB: "INTERLINEAR ANNOTATION TERMINATOR", 0xE0001: "LANGUAGE TAG", 0xE007F: "CANCEL TAG",
}

// RuneName is "U+202E RIGHT-TO-LEFT OVERRIDE" for the hidden characters it knows and
// "U+XXXX" for others.
func RuneName(r rune) string {
	code := fmt.Sprintf("U+%04X", r)
	switch {
	case runeNames[r] != "":
		return code + " " + runeNames[r]
	case r >= 0xFE00 && r <= 0xFE0F:
		return fmt.Sprintf("%s VARIATION SELECTOR-%d", code, r-0xFE00+1)
	case r >= 0xE0100 && r <= 0xE01EF:
		return fmt.Sprintf("%s VARIATION SELECTOR-%d", code, r-0xE0100+17)
	case r >= 0xE0020 && r <= 0xE007E:
		return fmt.Sprintf("%s TAG U+%04X", code, r-0xE0000)
	}
	return code
}

// countKinds counts findings by kind.
func countKinds(findings []Finding) map[Kind]int {
	n := map[Kind]int{}
	for _, f := range findings {
		n[f.Kind]++
	}
	return n
}

// countedKinds are the kinds in the order counts names them.
var countedKinds = []Kind{HTMLComment, RawHTML, InvisibleChar, BidiControl, TagChar, LinkMismatch,
	LinkTitle, LinkDestination, ImageAlt, LinkDefinition, FootnoteDefinition, DiagramHidden,
	DiagramStyled, MathHiding, ViewerBlock, Collapsed, TinyText, DroppedCells, OffScreen, DeepNesting}

// counts summarises counts by kind, e.g. "2 HTML comments, 1 raw HTML".
func counts(n map[Kind]int) string {
	var parts []string
	for _, k := range countedKinds {
		if n[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[k], nouns[k]))
		}
	}
	other := 0
	for k, c := range n {
		if _, known := nouns[k]; !known {
			other += c
		}
	}
	if other > 0 {
		parts = append(parts, fmt.Sprintf("%d other", other))
	}
	return strings.Join(parts, ", ")
}

var nouns = map[Kind]string{
	HTMLComment:        "HTML comment(s)",
	RawHTML:            "raw HTML",
	InvisibleChar:      "run(s) of invisible characters",
	BidiControl:        "run(s) of bidirectional controls",
	TagChar:            "run(s) of tag characters",
	LinkMismatch:       "misleading link(s)",
	LinkTitle:          "link title(s)",
	ImageAlt:           "image alt text(s)",
	LinkDefinition:     "unused link definition(s)",
	FootnoteDefinition: "unused footnote(s)",
	DiagramHidden:      "hidden diagram text(s)",
	MathHiding:         "math span(s) that can hide text",
	ViewerBlock:        "map or 3D model block(s)",
	Collapsed:          "collapsed section(s)",
	TinyText:           "text(s) too small to read",
	LinkDestination:    "link destination(s) holding spaces",
	DiagramStyled:      "styled diagram(s)",
	DroppedCells:       "row(s) of dropped table cells",
	OffScreen:          "run(s) of code, table or math past the right edge",
	DeepNesting:        "deeply nested markup",
}

// percent writes a size relative to normal as a percentage: "3 %", "under 1 %".
func percent(size float64) string {
	if size < 0.01 {
		return "under 1 %"
	}
	return fmt.Sprintf("%.0f %%", size*100)
}

// block quotes s: a code span after a space if it is one line (GitHub wraps inline
// code, so a long line stays in view and whole), else a fenced block indented under the
// list item, its long lines broken (wrap). Either ends the line.
func (q *quoter) block(s string) string {
	s, more := truncate(s, MaxQuote, maxQuoteLines)
	q.cut = q.cut || more > 0
	s = q.Text(s)
	if !strings.Contains(s, "\n") {
		return " " + mdcode.Span(strings.ReplaceAll(s, "\t", " ")) + moreNote(more) + "\n"
	}
	s = wrap(s)
	fence := mdcode.Fence(s)
	var b strings.Builder
	b.WriteString("\n  " + fence + "text\n")
	for line := range strings.SplitSeq(s, "\n") {
		if line != "" {
			b.WriteString("  ")
		}
		b.WriteString(line + "\n")
	}
	b.WriteString("  " + fence + "\n")
	if more > 0 {
		b.WriteString("  " + strings.TrimSpace(moreNote(more)) + "\n")
	}
	return b.String()
}

// inline quotes s as one code span, newlines shown as spaces, cut at limit characters.
func (q *quoter) inline(s string, limit int) string {
	s, more := truncate(s, limit, 1<<30)
	q.cut = q.cut || more > 0
	return q.Span(s) + moreNote(more)
}

// wrap breaks the lines of s longer than WrapColumns (counted as a code block counts
// them, see columns) into lines that are not, each continuation starting with wrapMark.
func wrap(s string) string {
	var b strings.Builder
	for i, line := range strings.Split(s, "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		col := 0
		for _, r := range line {
			w := columns(r)
			if r == '\t' {
				w = tabWidth - col%tabWidth
			}
			if col+w > WrapColumns && col > wrapMarkColumns {
				b.WriteString("\n" + wrapMark)
				col = wrapMarkColumns
				if r == '\t' {
					w = tabWidth - col%tabWidth
				}
			}
			b.WriteRune(r)
			col += w
		}
	}
	return b.String()
}

func moreNote(more int) string {
	if more == 0 {
		return ""
	}
	return fmt.Sprintf(" … (%d more characters)", more)
}

// truncate keeps at most maxRunes characters and maxLines lines of s and says how many
// characters it dropped.
func truncate(s string, maxRunes, maxLines int) (string, int) {
	kept, _ := textcut.Runes(s, maxRunes)
	kept = textcut.Lines(kept, maxLines)
	return kept, utf8.RuneCountInString(s[len(kept):])
}
