package evidencemd

import (
	"fmt"
	"strings"

	"github.com/bumperdev/bumper/action/evidence"
)

// section is one collapsed part of the rendering.
type section struct {
	name   string // for Overflow
	title  string // the <summary> text: written by this package, never from the bundle
	intro  string
	items  []item
	weight int // share of the room when sections must be cut
	// noun names the items ("failures") unless an item names itself; shortNote says
	// what an item's short form leaves out ("shown without their output"); trimNote
	// what the fixed bounds cut.
	noun, shortNote, trimNote string

	// maxItems bounds the items built per noun: no more could fit within the limit.
	// unbuilt counts the rest, by noun, in order.
	maxItems int
	built    map[string]int
	unbuilt  map[string]int
	nouns    []string
}

// item is one entry of a section. A must item is always shown (a label); the others
// are shown in order while they fit, in full, else short, else not at all (and then
// neither are those after them).
type item struct {
	full, short string
	noun        string // what the item is, when not the section's noun
	must        bool
	trimmed     bool // full already cut something to the fixed bounds
}

// newSection is s bounded to the items that could fit in limit bytes.
func (r *renderer) newSection(s section) *section {
	s.maxItems = r.maxItems
	s.built, s.unbuilt = map[string]int{}, map[string]int{}
	return &s
}

// more reports whether another item of noun is worth building, and counts it as left
// out when it is not.
func (s *section) more(noun string) bool {
	if noun == "" {
		noun = s.noun
	}
	if s.built[noun]+s.unbuilt[noun] == 0 {
		s.nouns = append(s.nouns, noun)
	}
	if s.built[noun] >= s.maxItems {
		s.unbuilt[noun]++
		return false
	}
	s.built[noun]++
	return true
}

const closing = "\n</details>\n\n"

func (s *section) open() string { return "<details>\n<summary>" + s.title + "</summary>\n\n" + s.intro }

func (s *section) nounOf(it item) string {
	if it.noun != "" {
		return it.noun
	}
	return s.noun
}

// moreNote is the line saying how many items were left out, "" when none were.
func (s *section) moreNote(omitted map[string]int) string {
	var parts []string
	for _, n := range s.nouns {
		if omitted[n] > 0 {
			parts = append(parts, fmt.Sprintf("%s more %s", commas(int64(omitted[n])), n))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("\n…and %s not shown: see `%s`.\n", strings.Join(parts, " and "), evidence.FileName)
}

// totals counts the optional items by noun, built or not.
func (s *section) totals() map[string]int {
	total := map[string]int{}
	for n, k := range s.unbuilt {
		total[n] += k
	}
	for _, it := range s.items {
		if !it.must {
			total[s.nounOf(it)]++
		}
	}
	return total
}

// size is the length of the section with every item built, in full.
func (s *section) size() int {
	n := len(s.open()) + len(closing) + len(s.moreNote(s.unbuilt))
	for _, it := range s.items {
		n += len(it.full)
	}
	return n
}

// render writes the section within budget bytes, or nothing when not even its frame
// and labels fit, and says what it cut.
func (s *section) render(budget int) (string, []string) {
	total := s.totals()
	mustLen := 0
	for _, it := range s.items {
		if it.must {
			mustLen += len(it.full)
		}
	}
	whole := budget >= s.size()
	room := budget - len(s.open()) - mustLen - len(closing)
	if !whole {
		room -= len(s.moreNote(total)) // at its longest
		if room < 0 {
			return "", []string{"left out"}
		}
	}
	var b strings.Builder
	b.WriteString(s.open())
	trimmed, short := 0, 0
	omitted := map[string]int{}
	for n, k := range s.unbuilt {
		omitted[n] = k
	}
	stopped := false
	for _, it := range s.items {
		switch {
		case it.must:
			b.WriteString(it.full)
		case whole || !stopped && len(it.full) <= room:
			b.WriteString(it.full)
			room -= len(it.full)
		case !stopped && it.short != "" && len(it.short) <= room:
			b.WriteString(it.short)
			room -= len(it.short)
			short++
			continue
		default:
			stopped = true
			omitted[s.nounOf(it)]++
			continue
		}
		if it.trimmed {
			trimmed++
		}
	}
	b.WriteString(s.moreNote(omitted))
	b.WriteString(closing)

	var cuts []string
	if trimmed > 0 {
		cuts = append(cuts, fmt.Sprintf("%s %s", commas(int64(trimmed)), s.trimNote))
	}
	if short > 0 {
		cuts = append(cuts, fmt.Sprintf("%s %s %s", commas(int64(short)), s.noun, s.shortNote))
	}
	for _, n := range s.nouns {
		if omitted[n] > 0 {
			cuts = append(cuts, fmt.Sprintf("%s of %s %s not shown", commas(int64(omitted[n])), commas(int64(total[n])), n))
		}
	}
	return b.String(), cuts
}

func sectionNames(secs []*section) []string {
	out := make([]string, len(secs))
	for i, s := range secs {
		out[i] = s.name
	}
	return out
}
