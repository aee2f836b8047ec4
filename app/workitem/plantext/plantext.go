// Package plantext is the format of the App's plan comment: the plan a plan run wrote,
// shown for approval as text in a fenced block, and read back exactly from it so that
// it can be re-hashed when credentials are minted.
//
// Why as text: the plan is written by an agent that read the code. Rendered, its images
// would make GitHub's image proxy fetch any URL (a channel around the firewall), its
// links could mislead, and its HTML or diagram comments could hide instructions from
// the approver that the implementing agent then reads.
package plantext

import (
	"fmt"
	"strings"

	"github.com/bumperdev/bumper/app/reveal"
	"github.com/bumperdev/bumper/internal/mdcode"
)

// planMarker opens the bot's plan comment. The plan is shown in a fenced block whose
// fence is longer than any backtick run in the plan.
const (
	planMarker = "<!-- bumper:plan -->"
	planIntro  = "The plan as the plan run wrote it, shown as text (links, images and markup are not rendered):"
)

// Comment renders the comment that shows a plan for approval; id is the short id of
// the revision an /approve of it names.
func Comment(id, plan string) string {
	fence := mdcode.Fence(plan)
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n### Plan (revision `%s`)\n\n%s\n\n%s\n%s\n%s\n\n", planMarker, id, planIntro, fence, plan, fence)
	if notice := reveal.Render(reveal.Scan(plan)); notice != "" {
		b.WriteString(notice)
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "A maintainer who has read this plan can comment `/approve %s` to authorize a run of it.\n", id)
	return b.String()
}

// Parse reads the plan back out of a plan comment; ok is false when body is not one
// (an edited comment, say).
func Parse(body string) (plan string, ok bool) {
	rest, ok := strings.CutPrefix(body, planMarker+"\n### Plan (revision `")
	if !ok {
		return "", false
	}
	_, rest, ok = strings.Cut(rest, "`)\n\n"+planIntro+"\n\n")
	if !ok {
		return "", false
	}
	fence, rest, ok := strings.Cut(rest, "\n")
	if !ok || len(fence) < 3 || strings.Trim(fence, "`") != "" {
		return "", false
	}
	plan, _, ok = strings.Cut(rest, "\n"+fence+"\n")
	return plan, ok
}
