// Package roundreply is what Bumper says on a pull request when a writer's review or
// /revise asks for a round: what the round takes, what it leaves out and why, and what
// the taken words hide from a reader of the page. It writes names and places only, never
// the words themselves, which the agent reads in its task.
package roundreply

import (
	"fmt"
	"strings"

	"github.com/bumperdev/bumper/app/reveal"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/mdcode"
	"github.com/bumperdev/bumper/internal/textcut"
)

// maxListed bounds the lines a round's reply lists of each kind.
const maxListed = 20

// Round is what a revise round takes from the pull request, as the App read it.
type Round struct {
	// Number is the round, from 1, of Bound the repository allows.
	Number, Bound int
	// Head and Branch are the pull request's head the round works from and its branch.
	Head, Branch string
	// Review are the writers' words the round takes; LeftOut what it does not, and why.
	Review  []wire.ReviewComment
	LeftOut []wire.LeftOut
	// Waiting counts the comments split off for the next round.
	Waiting int
	// Texts are the taken texts, for the note on what they hide.
	Texts []string
	// Started is false when nothing could be taken, and no round started.
	Started bool
}

// Text is what Bumper says on the pull request of a round: what it takes (author, kind,
// place) and leaves out (author, association, why), what waits for the next round, and
// what the taken text hides from a reader of the page (app/reveal, as the issue's
// status comment shows it). Names and places are code spans; no text is quoted.
func Text(r Round) string {
	var b strings.Builder
	q := &mdcode.Quoter{}
	if r.Started {
		fmt.Fprintf(&b, "**Revise round %d of %d** · Bumper's agent works from `%.12s` on what is listed below, pushes a new commit to `%s` (keeping the ones on it), verifies it and has it reviewed again.\n\n",
			r.Number, r.Bound, r.Head, r.Branch)
		fmt.Fprintf(&b, "**Taken** (%d):\n\n", len(r.Review))
		for i, c := range r.Review {
			if i == maxListed {
				fmt.Fprintf(&b, "- …and %d more\n", len(r.Review)-maxListed)
				break
			}
			fmt.Fprintf(&b, "- %s\n", takenLine(q, c))
		}
	} else {
		b.WriteString("**No revise round starts:** nothing that was asked may reach Bumper's agent.\n")
	}
	if len(r.LeftOut) > 0 {
		fmt.Fprintf(&b, "\n**Left out**, never shown to the agent (%d):\n\n", len(r.LeftOut))
		for i, l := range r.LeftOut {
			if i == maxListed {
				fmt.Fprintf(&b, "- …and %d more\n", len(r.LeftOut)-maxListed)
				break
			}
			assoc := ""
			if l.Association != "" {
				assoc = " (" + strings.ToLower(l.Association) + ")"
			}
			fmt.Fprintf(&b, "- %s%s, comment %d: %s\n", q.Span(l.Author), assoc, l.ID, leftOutWhy(l.Reason))
		}
	}
	if r.Waiting > 0 {
		fmt.Fprintf(&b, "\n%d more comment(s) wait for the next round: a round takes at most %d.\n", r.Waiting, wire.MaxReviewComments)
	}
	var found []reveal.Finding
	for _, t := range r.Texts {
		found = append(found, reveal.Scan(t)...)
	}
	if notice := reveal.RenderWith(takenHeader, found); notice != "" {
		b.WriteString("\n" + notice)
	}
	if q.Hidden {
		b.WriteString("\nHidden characters in names and places are shown as `[U+XXXX]`.\n")
	}
	return b.String()
}

// takenHeader leads the note on hidden text in what a round took.
const takenHeader = "**What was taken contains text the rendered page does not show.** The agent will read it:\n\n"

// takenLine names one comment a round takes, without its text.
func takenLine(q *mdcode.Quoter, c wire.ReviewComment) string {
	who := "@" + c.Author
	if c.Kind == wire.ReviewKindFinding {
		who = "Bumper's reviewer"
	}
	switch c.Kind {
	case wire.ReviewKindReview:
		return who + "'s review"
	case wire.ReviewKindRevise:
		return who + "'s `/revise`"
	}
	where := "the review"
	if c.Path != "" {
		// A path is the reviewer's to name, up to GitHub's limits: cut, so that the list
		// stays short whatever the paths.
		where = q.Span(fmt.Sprintf("%s:%d", textcut.Clip(strings.ToValidUTF8(strings.Join(strings.Fields(c.Path), " "), "\uFFFD"), 200, textcut.Ellipsis), c.Line))
	}
	what := "comment"
	if c.Kind == wire.ReviewKindFinding {
		what = "finding"
	}
	if len(c.Thread) > 0 {
		return fmt.Sprintf("%s's %s on %s, in a thread of %d earlier comment(s)", who, what, where, len(c.Thread))
	}
	return fmt.Sprintf("%s's %s on %s", who, what, where)
}

// leftOutWhy says a LeftOut reason in words.
func leftOutWhy(reason string) string {
	switch reason {
	case wire.LeftOutNotWriter:
		return "its author may not give Bumper commands here"
	case wire.LeftOutBot:
		return "a bot's"
	case wire.LeftOutEdited:
		return "edited after it was given"
	case wire.LeftOutTooMany:
		return fmt.Sprintf("past the %d comments a round takes", wire.MaxReviewComments)
	}
	return reason
}
