package evidencemd

import (
	"fmt"
	"strings"

	"github.com/bumperdev/bumper/action/evidence"
)

// Fixed bounds of a steer's text as shown.
const (
	mdSteerBytes = 2000
	mdSteerLines = 30
)

// steerVia says how a steer reached the agent, in this package's words.
var steerVia = map[string]string{
	evidence.SteerViaTask:    "in the task",
	evidence.SteerViaMessage: "as a message on the agent's input",
	evidence.SteerViaFile:    "as a file in the steering directory",
	evidence.SteerViaPrompt:  "in the round's prompt",
}

// steersSection lists the writers' /steer words the run was given: who wrote each and
// when, when the run had it, and when and how the agent got it or why not; the words
// themselves quoted as text (a steer is a writer's, but what it says is not Bumper's).
// A run given none has no section.
func (r *renderer) steersSection() *section {
	if len(r.e.Steers) == 0 {
		return nil
	}
	q := r.q
	s := r.newSection(section{name: "steers", title: fmt.Sprintf("Steers (%d)", len(r.e.Steers)), weight: 1,
		noun: "steers", shortNote: "shown without their text", trimNote: "texts shortened"})
	s.intro = "Writers' `/steer` words for the agent while it worked, as the run had them.\n\n"
	for _, st := range r.e.Steers {
		if !s.more("") {
			continue
		}
		s.items = append(s.items, r.track(func() (string, string) {
			var b strings.Builder
			fmt.Fprintf(&b, "- steer %d by %s, written %s, had by the run %s: ", st.ID, q.inline(st.Author, mdName), stamp(st.CreatedAt), stamp(st.ArrivedAt))
			if via, ok := steerVia[st.Via]; ok && !st.DeliveredAt.IsZero() {
				fmt.Fprintf(&b, "**delivered** %s at %s\n", via, stamp(st.DeliveredAt))
			} else {
				b.WriteString("**not delivered**")
				if st.Note != "" {
					b.WriteString(": " + q.inline(st.Note, mdText))
				}
				b.WriteString("; kept for the next round\n")
			}
			short := b.String()
			text, _ := q.block(st.Text, mdSteerBytes, mdSteerLines)
			return short + "\n" + text + "\n", short
		}))
	}
	return s
}
