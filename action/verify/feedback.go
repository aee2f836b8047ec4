package verify

import (
	"fmt"
	"strings"

	"github.com/bumperdev/bumper/action/harness"
	"github.com/bumperdev/bumper/internal/mdcode"
	"github.com/bumperdev/bumper/internal/textcut"
)

// MaxFeedbackBytes bounds Round.Feedback: what the harness hands the agent whole.
const MaxFeedbackBytes = harness.MaxFeedbackBytes

// Room kept for parts of the feedback.
const (
	// minExcerpt is the least room given to a failure's output: with less for each,
	// fewer failures are shown.
	minExcerpt = 512
	// entryOverhead is the room a failure's title and fences take besides its output.
	entryOverhead = 256
	// noteRoom is kept for the line that counts the failures not shown.
	noteRoom = 256
	// shownCommand and shownName bound a command line and a failure's name in the
	// feedback, in characters; shownTitleCommand a command in a failure's title.
	shownCommand      = 300
	shownName         = 200
	shownTitleCommand = 80
)

// feedbackEntry is one failure of the feedback.
type feedbackEntry struct {
	name, command, excerpt string
}

// feedback writes the Markdown the agent gets in its next round: the failures first,
// each with its output, then every command and how it ended, within
// MaxFeedbackBytes. When not every failure fits, the ones shown are taken from each
// failing command in turn (so every failing command shows its first failures), the
// room shared between them.
func feedback(round int, results []commandResult) string {
	failedCmds := 0
	for _, r := range results {
		if !r.passed() {
			failedCmds++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Verification round %d failed\n\n%d of %d verification %s failed after your changes. The failures come first, then every command and how it ended.\n\n## Failures\n\n",
		round, failedCmds, len(results), plural(len(results), "command", "commands"))
	commands := commandList(results)
	room := MaxFeedbackBytes - b.Len() - len(commands) - noteRoom

	total := 0
	for _, r := range results {
		total += max(r.test.Failed, len(r.test.Failures))
	}
	shown := 0
	entries := pickFailures(results, room/(minExcerpt+entryOverhead))
	for i, e := range entries {
		title := "### " + mdcode.Span(oneLine(e.name, shownName))
		if e.name != oneLine(e.command, commandFailureName) { // a failure of the command itself names it already
			title += " in " + mdcode.Span(oneLine(e.command, shownTitleCommand))
		}
		title += "\n\n"
		share := room / (len(entries) - i)
		text := cutMiddle(e.excerpt, max(0, share-len(title)-entryOverhead/2))
		if strings.TrimSpace(text) == "" {
			text = "(no output)"
		}
		fence := mdcode.Fence(text)
		part := title + fence + "text\n" + strings.TrimRight(text, "\n") + "\n" + fence + "\n\n"
		if len(part) > room {
			break
		}
		b.WriteString(part)
		room -= len(part)
		shown++
	}
	if rest := total - shown; rest > 0 {
		fmt.Fprintf(&b, "… and %d more %s, not shown: this feedback is limited to %d KiB.\n\n", rest, plural(rest, "failure", "failures"), MaxFeedbackBytes>>10)
	}
	b.WriteString(commands)
	// The parts were fitted to the bound; this only guards it.
	return textcut.Bytes(b.String(), MaxFeedbackBytes)
}

// pickFailures takes at most n failures, from each command's in turn, and returns
// them in the commands' order.
func pickFailures(results []commandResult, n int) []feedbackEntry {
	taken := make([]int, len(results)) // how many of each command's failures
	for k := 0; k < n; {
		progress := false
		for i, r := range results {
			if k < n && taken[i] < len(r.test.Failures) {
				taken[i]++
				k++
				progress = true
			}
		}
		if !progress {
			break
		}
	}
	var out []feedbackEntry
	for i, r := range results {
		for _, f := range r.test.Failures[:taken[i]] {
			out = append(out, feedbackEntry{f.Name, r.command, f.Excerpt})
		}
	}
	return out
}

// commandList is the "Commands" section: each command and how it ended.
func commandList(results []commandResult) string {
	var b strings.Builder
	b.WriteString("## Commands\n\n")
	for i, r := range results {
		t := r.test
		verdict := "passed"
		if !r.passed() {
			verdict = "**failed**"
		}
		fmt.Fprintf(&b, "%d. %s: %s; it %s", i+1, mdcode.Span(oneLine(r.command, shownCommand)), verdict, r.status.String())
		switch t.Format {
		case FormatGoTestJSON, FormatJUnit:
			fmt.Fprintf(&b, "; %s report: %d passed, %d failed, %d skipped", t.Format, t.Passed, t.Failed, t.Skipped)
		}
		if r.note != "" {
			b.WriteString("; " + oneLine(r.note, shownCommand))
		}
		b.WriteString(".\n")
	}
	return b.String()
}

// cutMiddle keeps at most n bytes of s: its beginning and its end (where a failure's
// message and stack are), with a marker between. The result is valid UTF-8.
func cutMiddle(s string, n int) string {
	if len(s) <= n {
		return s
	}
	marker := fmt.Sprintf("\n[… %d bytes left out …]\n", len(s))
	room := n - len(marker)
	if room <= 0 {
		return textcut.Bytes(s, n)
	}
	head := textcut.Bytes(s, room/3)
	tail := textcut.Tail(s, room-len(head))
	return head + fmt.Sprintf("\n[… %d bytes left out …]\n", len(s)-len(head)-len(tail)) + tail
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
