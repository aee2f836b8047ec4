// Package approverefusal says why an /approve does not approve what is on the issue now:
// nobody approves text they could not read. The approver must name the revision they
// read when the text changed a short while ago, and whatever revision they name
// must be the current one. The refusal echoes the approver's argument only cut short and
// inert.
package approverefusal

import (
	"fmt"
	"strings"
	"time"

	"github.com/bumperdev/bumper/app/ledger"
)

// ChangedParts names what an edit of the issue changed, from the webhook payload's
// "changes" keys: what the record's SpecChange says, and a refusal repeats.
func ChangedParts(changed []string) string {
	var parts []string
	for _, c := range changed {
		if c == "title" || c == "body" {
			parts = append(parts, c)
		}
	}
	if len(parts) == 0 {
		return "title or body"
	}
	return strings.Join(parts, " and ")
}

// Refusal says why an /approve with args does not approve the text as it is
// now, or "" when it does. current is the short id of the text's revision, full the
// revision itself (either may be named); change is the record's last change of the
// text (nil: none), now the time, and window how long after a change a bare /approve is
// refused.
func Refusal(current, full string, change *ledger.SpecChange, args []string, now time.Time, window time.Duration) string {
	changed := ""
	if c := change; c != nil {
		who := "an edit Bumper did not see as it happened"
		if c.By != "" {
			who = "@" + c.By
		}
		changed = fmt.Sprintf("the %s changed %s ago (%s)", c.What, now.Sub(c.At).Round(time.Second), who)
	}
	if len(args) > 0 {
		named := strings.ToLower(strings.Trim(args[0], "`"))
		if named == current || named == full {
			return ""
		}
		msg := fmt.Sprintf("`%s` is not the current revision of this issue; the current one is `%s`", oneWord(named), current)
		if changed != "" {
			msg += ": " + changed
		}
		return msg + fmt.Sprintf(". Read the issue again and comment `/approve %s` to approve it as it is now.", current)
	}
	if c := change; c != nil && now.Sub(c.At) < window {
		return fmt.Sprintf("%s, so a bare `/approve` could approve text you have not read. "+
			"The current revision is `%s`: read the issue (and the note on hidden text in the status comment, if any) and comment `/approve %s`.",
			upperFirst(changed), current, current)
	}
	return ""
}

// oneWord keeps an echoed argument short and inert.
func oneWord(s string) string {
	if len(s) > 80 {
		s = s[:80]
	}
	return strings.Map(func(r rune) rune {
		if r == '`' || r < ' ' {
			return -1
		}
		return r
	}, s)
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
