package evidencemd

import (
	"fmt"
	"strings"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/app/wire"
)

// leftOutWhy are the App's reasons for leaving a comment out, in this package's words;
// any other reason is quoted.
var leftOutWhy = map[string]string{
	wire.LeftOutNotWriter: "its author has no write access",
	wire.LeftOutBot:       "a bot's",
	wire.LeftOutEdited:    "edited after the review was submitted",
	wire.LeftOutTooMany:   "past what one round takes; kept for the next",
}

// kindName are the kinds of answered comments in this package's words; any other kind
// is quoted.
var kindName = map[string]string{
	wire.ReviewKindInline: "inline comment", wire.ReviewKindReview: "review", wire.ReviewKindRevise: "`/revise` comment",
	wire.ReviewKindFinding: "reviewer's finding",
}

// update says the round is an update round (a failed one may have merged nothing).
func (r *renderer) update() bool { return r.e.Stage == wire.StageUpdate || r.e.Round.Merge != nil }

// roundName is "review round N" or "update round N".
func (r *renderer) roundName() string {
	what := "review"
	if r.update() {
		what = "update"
	}
	return fmt.Sprintf("%s round %d", what, r.e.Round.Number)
}

// roundLine is a revise or update round in one line: what it answered and left out and
// what became of its replies, or what it merged.
func (r *renderer) roundLine() string {
	rd, q := r.e.Round, r.q
	s := r.roundName()
	if r.update() && rd.Merge == nil {
		return s + ": nothing was merged"
	}
	if m := rd.Merge; m != nil {
		s += fmt.Sprintf(": merged the base branch's head %s into the pull request's %s", q.word(cutCommit(m.To)), q.word(cutCommit(m.From)))
		if !m.Conflicted {
			return s + ", cleanly"
		}
		return s + ", with conflicts in " + plural(int64(len(m.Files)+m.FilesOmitted), "file")
	}
	s += ": answered " + plural(int64(len(rd.Answered)), "comment")
	if n := len(rd.LeftOut) + rd.LeftOutOmitted; n > 0 {
		s += fmt.Sprintf("; %s left out", plural(int64(n), "comment"))
	}
	if rp := rd.Replies; rp != nil {
		switch rp.Status {
		case evidence.RepliesAbsent:
			s += "; the agent wrote no replies"
		case evidence.RepliesInvalid:
			s += "; **the agent's replies were invalid, none posted**: " + q.inline(rp.Error, mdText)
		default:
			posted := 0
			for _, p := range rp.Posted {
				if p.CommentID > 0 {
					posted++
				}
			}
			s += "; " + plural(int64(posted), "reply", "replies") + " posted in their threads"
			if failed := len(rp.Posted) - posted; failed > 0 {
				s += fmt.Sprintf(", **%s not**", commas(int64(failed)))
			}
		}
	}
	return s
}

// roundSection lists what the round answered, left out and replied, or the files its
// merge conflicted in.
func (r *renderer) roundSection() *section {
	rd, q := r.e.Round, r.q
	s := r.newSection(section{name: "round", title: upperFirst(r.roundName()), weight: 1, noun: "lines", trimNote: "lines shortened"})
	line := func(must bool, build func() string) {
		if !must && !s.more("") {
			return
		}
		it := r.track(func() (string, string) { return build(), "" })
		it.must = must
		s.items = append(s.items, it)
	}
	if r.update() && rd.Merge == nil {
		s.intro = "Nothing was merged: the run ended before its merge.\n"
		return s
	}
	if m := rd.Merge; m != nil {
		s.intro = fmt.Sprintf("Merged %s (the base branch's head) into %s (the pull request's head) with a merge commit.\n", q.inline(m.To, 64), q.inline(m.From, 64))
		if !m.Conflicted {
			s.intro += "The merge was clean.\n"
			return s
		}
		s.intro += fmt.Sprintf("\nIt conflicted in %s, left to the agent to resolve:\n\n", plural(int64(len(m.Files)+m.FilesOmitted), "file"))
		for _, f := range m.Files {
			line(false, func() string { return "- " + q.inline(f, mdName) + "\n" })
		}
		if m.FilesOmitted > 0 {
			line(true, func() string {
				return fmt.Sprintf("- …and %s more, only counted\n", commas(int64(m.FilesOmitted)))
			})
		}
		return s
	}
	s.intro = fmt.Sprintf("**Answered** (%d):\n\n", len(rd.Answered))
	if len(rd.Answered) == 0 {
		s.intro += "None.\n"
	}
	for _, a := range rd.Answered {
		line(false, func() string {
			kind, ok := kindName[a.Kind]
			if !ok {
				kind = q.word(a.Kind)
			}
			l := fmt.Sprintf("- %s %d by %s", kind, a.ID, q.inline("@"+a.Author, 64))
			if a.ThreadID > 0 {
				l += fmt.Sprintf(", in thread %d", a.ThreadID)
			}
			return l + "\n"
		})
	}
	line(true, func() string {
		return fmt.Sprintf("\n**Left out** (%d): their text never reached the agent.\n\n", len(rd.LeftOut)+rd.LeftOutOmitted)
	})
	for _, l := range rd.LeftOut {
		line(false, func() string {
			who := q.inline("@"+l.Author, 64)
			if l.Association != "" {
				who += " (" + q.word(strings.ToLower(l.Association)) + ")"
			}
			why, ok := leftOutWhy[l.Reason]
			if !ok {
				why = q.inline(l.Reason, mdName)
			}
			return fmt.Sprintf("- comment %d by %s: %s\n", l.ID, who, why)
		})
	}
	if rd.LeftOutOmitted > 0 {
		line(true, func() string {
			return fmt.Sprintf("- …and %s more, only counted\n", commas(int64(rd.LeftOutOmitted)))
		})
	}
	rp := rd.Replies
	if rp == nil || rp.Status != evidence.RepliesOK {
		return s
	}
	line(true, func() string {
		return fmt.Sprintf("\n**Replies** (%d), posted as the App, the agent's text shown as code:\n\n", len(rp.Posted))
	})
	for _, p := range rp.Posted {
		line(false, func() string {
			l := fmt.Sprintf("- thread %d: ", p.ThreadID)
			if p.Changed {
				l += "changed"
			} else {
				l += "not changed"
			}
			if p.CommentID > 0 {
				return l + fmt.Sprintf(", reply %d\n", p.CommentID)
			}
			return l + ", **not posted**: " + q.inline(p.Error, mdText) + "\n"
		})
	}
	return s
}

// upperFirst capitalizes the first letter of an ASCII string this package wrote.
func upperFirst(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}
