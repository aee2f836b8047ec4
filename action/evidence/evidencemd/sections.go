package evidencemd

import (
	"fmt"
	"strings"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/evidence/risk"
	"github.com/bumperdev/bumper/internal/revision"
)

// sections builds every collapsed part, items at their fixed bounds; a revise or
// update round's comes first.
func (r *renderer) sections() []*section {
	var secs []*section
	if g := r.gatesSection(); g != nil {
		secs = append(secs, g)
	}
	if r.e.Round != nil {
		secs = append(secs, r.roundSection())
	}
	secs = append(secs,
		r.phasesSection(), r.commandsSection(), r.testsSection(), r.filesSection(),
		r.egressSection(), r.decisionsSection(),
	)
	if st := r.steersSection(); st != nil {
		secs = append(secs, st)
	}
	return append(secs, r.sandboxSection(), r.approvalsSection(), r.auditSection(), r.revocationSection())
}

// track builds an item and marks it trimmed when the quoter cut something meanwhile.
func (r *renderer) track(build func() (full, short string)) item {
	before := r.q.cuts
	full, short := build()
	return item{full: full, short: short, trimmed: r.q.cuts > before}
}

func (r *renderer) phasesSection() *section {
	q := r.q
	s := r.newSection(section{name: "phases", title: fmt.Sprintf("Phases (%d)", len(r.e.Phases)), weight: 1,
		noun: "phases", shortNote: "shown without their detail", trimNote: "details shortened"})
	if len(r.e.Phases) == 0 {
		s.intro = "None recorded.\n"
		return s
	}
	s.intro = "| phase | round | outcome | duration | started (UTC) | detail |\n|---|---|---|---|---|---|\n"
	for _, p := range r.e.Phases {
		if !s.more("") {
			continue
		}
		round := ""
		if p.Round > 0 {
			round = fmt.Sprint(p.Round)
		}
		s.items = append(s.items, r.track(func() (string, string) {
			row := fmt.Sprintf("| %s | %s | %s | %s | %s |", q.word(string(p.Name)), round, q.word(string(p.Outcome)),
				duration(p.DurationMS), stamp(p.StartedAt))
			full := row + " "
			if p.Detail != "" {
				full += q.cell(p.Detail, mdText)
			}
			return full + " |\n", row + "  |\n"
		}))
	}
	return s
}

func (r *renderer) commandsSection() *section {
	q := r.q
	s := r.newSection(section{name: "commands", title: fmt.Sprintf("Commands (%d)", len(r.e.Commands)), weight: 1,
		noun: "commands", trimNote: "command lines shortened"})
	if len(r.e.Commands) == 0 {
		s.intro = "None recorded.\n"
		return s
	}
	for _, c := range r.e.Commands {
		if !s.more("") {
			continue
		}
		s.items = append(s.items, r.track(func() (string, string) {
			return fmt.Sprintf("- %s: exit **%d** after %s (%s)\n", q.inline(c.Command, mdText), c.ExitCode,
				duration(c.DurationMS), q.word(string(c.Phase))), ""
		}))
	}
	return s
}

func (r *renderer) testsSection() *section {
	q := r.q
	failures := 0
	for _, t := range r.e.Tests {
		failures += len(t.Failures)
	}
	s := r.newSection(section{name: "tests", weight: 4, noun: "failures", shortNote: "shown without their output",
		trimNote: "names, commands or output excerpts cut (an excerpt to its first 40 lines or 2,000 bytes)",
		title:    fmt.Sprintf("Tests (%s, %s listed)", plural(int64(len(r.e.Tests)), "run"), plural(int64(failures), "failure"))})
	if len(r.e.Tests) == 0 {
		s.intro = "No tests ran.\n"
		return s
	}
	// The runs first, as a list; then the failures, each after a blank line (which
	// also ends the list).
	for _, t := range r.e.Tests {
		if !s.more("test runs") {
			continue
		}
		it := r.track(func() (string, string) {
			return fmt.Sprintf("- round %d: %s: exit **%d**, %s passed, %s failed, %s skipped in %s (counts from %s)\n",
				t.Round, q.inline(t.Command, mdText), t.ExitCode, commas(int64(t.Passed)), commas(int64(t.Failed)),
				commas(int64(t.Skipped)), duration(t.DurationMS), q.word(t.Format)), ""
		})
		it.noun = "test runs"
		s.items = append(s.items, it)
	}
	for _, t := range r.e.Tests {
		for _, f := range t.Failures {
			if !s.more("") {
				continue
			}
			before := q.cuts
			lead := fmt.Sprintf("\nFailed in round %d: %s", t.Round, q.inline(f.Name, mdName))
			block, cut := q.block(f.Excerpt, mdExcerptBytes, mdExcerptLines)
			full := lead + "\n\n" + block
			if cut {
				full += fmt.Sprintf("\n(cut from %s bytes: the whole excerpt is in %s)\n", commas(int64(len(f.Excerpt))), evidence.FileName)
			}
			s.items = append(s.items, item{full: full, short: lead + " (output in " + evidence.FileName + ")\n", trimmed: q.cuts > before})
		}
	}
	return s
}

func (r *renderer) filesSection() *section {
	q := r.q
	d := r.e.Diff
	s := r.newSection(section{name: "files", title: fmt.Sprintf("Changed files (%d)", len(d.Files)), weight: 1,
		noun: "files", trimNote: "paths shortened"})
	if len(d.Files) == 0 {
		s.intro = "None.\n"
		return s
	}
	flagged := map[string]risk.Category{}
	for _, f := range r.e.Risk {
		flagged[f.Path] = f.Category
	}
	for _, f := range d.Files {
		if !s.more("") {
			continue
		}
		s.items = append(s.items, r.track(func() (string, string) {
			line := "- " + q.inline(f.Path, mdName)
			if f.Binary {
				line += " (binary)"
			} else {
				line += fmt.Sprintf(" +%s −%s", commas(int64(f.Insertions)), commas(int64(f.Deletions)))
			}
			if c, ok := flagged[f.Path]; ok {
				line += ": **governs checks** (" + q.word(string(c)) + ")"
			}
			return line + "\n", ""
		}))
	}
	return s
}

func (r *renderer) egressSection() *section {
	q := r.q
	g := r.e.Egress
	s := r.newSection(section{name: "egress", weight: 1, noun: "destinations", trimNote: "names or reasons shortened",
		title: fmt.Sprintf("Egress (%s allowed, %s denied)", commas(g.AllowedRequests), commas(g.DeniedRequests))})
	list := func(label string, hosts []evidence.EgressHost, omitted int, denied bool) {
		// The blank line before the label ends the list above it.
		head := fmt.Sprintf("**%s:** %s", label, plural(int64(len(hosts)+omitted), "destination"))
		if omitted > 0 {
			head += fmt.Sprintf(" (the %s least requested are only counted)", commas(int64(omitted)))
		}
		if label != "Denied" {
			head = "\n" + head
		}
		s.items = append(s.items, item{full: head + "\n\n", must: true})
		for _, h := range hosts {
			if !s.more("") {
				continue
			}
			s.items = append(s.items, r.track(func() (string, string) {
				line := fmt.Sprintf("- %s via %s: %s", q.inline(h.Host, mdName), q.word(string(h.Via)), plural(h.Count, "request"))
				if h.BytesUp != 0 || h.BytesDown != 0 {
					line += fmt.Sprintf(", %s up, %s down", size(h.BytesUp), size(h.BytesDown))
				}
				if denied && len(h.Reasons) > 0 {
					reasons := make([]string, 0, len(h.Reasons))
					for _, why := range h.Reasons {
						reasons = append(reasons, q.inline(why, mdText))
					}
					line += "; refused: " + strings.Join(reasons, ", ")
				}
				return line + "\n", ""
			}))
		}
	}
	if g.Denials != nil {
		s.items = append(s.items, r.track(func() (string, string) {
			full, short := r.denialsText(g.Denials, "")
			return full + "\n", short + "\n"
		}))
	}
	list("Denied", g.Denied, g.OmittedDeniedHosts, true)
	list("Allowed", g.Allowed, g.OmittedAllowedHosts, false)
	return s
}

func (r *renderer) decisionsSection() *section {
	q := r.q
	l := r.e.Ledger
	s := r.newSection(section{name: "decisions", title: fmt.Sprintf("Decisions (%d, least confident first)", len(l.Decisions)), weight: 2,
		noun: "decisions", shortNote: "shown without rationale and alternatives", trimNote: "decision texts shortened"})
	switch {
	case l.Status == evidence.LedgerInvalid:
		s.intro = "The agent's decision ledger was invalid: " + q.inline(l.Error, mdText) + "\n"
	case l.Status == evidence.LedgerAbsent:
		s.intro = "The agent wrote no decision ledger.\n"
	case len(l.Decisions) == 0:
		s.intro = "None.\n"
	}
	for _, d := range l.LeastConfidentFirst() {
		if !s.more("") {
			continue
		}
		s.items = append(s.items, r.track(func() (string, string) {
			short := fmt.Sprintf("- **%s** %s\n  - chose %s\n", confidence(d.Confidence), q.inline(d.Question, mdText), q.inline(d.Choice, mdText))
			full := short
			if d.Rationale != "" {
				full += "  - because " + q.inline(d.Rationale, mdText) + "\n"
			}
			if len(d.Alternatives) > 0 {
				alts := make([]string, 0, len(d.Alternatives))
				for _, a := range d.Alternatives {
					alts = append(alts, q.inline(a, mdName))
				}
				full += "  - rather than " + strings.Join(alts, ", ") + "\n"
			}
			if full == short {
				short = ""
			}
			return full, short
		}))
	}
	return s
}

func (r *renderer) sandboxSection() *section {
	q := r.q
	s := r.newSection(section{name: "sandbox", title: "Sandbox", weight: 1, noun: "lines", trimNote: "lines shortened"})
	sb := r.e.Sandbox
	if env := r.e.Environment; env != nil {
		s.items = append(s.items, r.track(func() (string, string) { return r.environmentLines(env), "" }))
	}
	if sb == nil {
		s.intro = "No VM was started.\n"
		return s
	}
	s.more("")
	s.items = append(s.items, r.track(func() (string, string) {
		var b strings.Builder
		fmt.Fprintf(&b, "- VMM %s, accelerator %s: %s\n", q.inline(sb.VMM, mdName), q.word(sb.Accel), q.inline(sb.AccelReason, mdText))
		fmt.Fprintf(&b, "- image %s\n", q.inline(sb.ImageDigest, 80))
		fmt.Fprintf(&b, "- %d vCPUs, %s MB of memory\n", sb.VCPUs, commas(int64(sb.MemoryMB)))
		if sb.Boot != "" {
			fmt.Fprintf(&b, "- %s boot", q.word(sb.Boot))
			if sb.BootReason != "" {
				b.WriteString(": " + q.inline(sb.BootReason, mdText))
			}
			b.WriteString("\n")
		}
		return b.String(), ""
	}))
	return s
}

// environmentLines say which environment the VM booted and whether this run built it.
func (r *renderer) environmentLines(env *evidence.Environment) string {
	q := r.q
	var b strings.Builder
	fmt.Fprintf(&b, "- environment %s", q.inline(env.ID, 80))
	switch {
	case env.Built:
		fmt.Fprintf(&b, ", built by this run in %s (setup %s)", duration(env.DurationMS), duration(env.SetupMS))
	case env.ImageDigest == "":
		fmt.Fprintf(&b, ", whose setup failed after %s; nothing was cached", duration(env.SetupMS))
	default:
		fmt.Fprintf(&b, ", found in the runner's cache (%s)", duration(env.DurationMS))
	}
	b.WriteString("\n")
	if len(env.Packages) > 0 {
		words := make([]string, len(env.Packages))
		for i, p := range env.Packages {
			words[i] = q.word(p)
		}
		fmt.Fprintf(&b, "  - packages %s\n", strings.Join(words, ", "))
	}
	if env.Setup != "" {
		fmt.Fprintf(&b, "  - setup %s", q.inline(env.Setup, mdName))
		if env.Log != "" {
			fmt.Fprintf(&b, "; its output %s and its firewall's audit log %s are in the artifact", q.inline(env.Log, mdName), q.inline(env.AuditLog, mdName))
		}
		b.WriteString("\n")
	}
	if env.ImageDigest != "" {
		fmt.Fprintf(&b, "  - image %s on base %s\n", q.inline(env.ImageDigest, 80), q.inline(env.BaseImageDigest, 80))
	} else {
		fmt.Fprintf(&b, "  - no image: the setup failed; base %s\n", q.inline(env.BaseImageDigest, 80))
	}
	if env.Denials != nil {
		full, _ := r.denialsText(env.Denials, "  ")
		b.WriteString("\n" + full + "\n")
	}
	return b.String()
}

func (r *renderer) approvalsSection() *section {
	q := r.q
	e := r.e
	s := r.newSection(section{name: "approvals", title: fmt.Sprintf("Approvals (%d) and trigger", len(e.Approvals)), weight: 1,
		noun: "approvals", trimNote: "lines shortened"})
	s.intro = "Revision " + q.inline(e.Revision, 80) + fmt.Sprintf("; Actions run %d (attempt %d) of %s, event %s, actor %s",
		e.Trigger.RunID, e.Trigger.RunAttempt, q.inline(e.Trigger.WorkflowRef, mdText), q.word(e.Trigger.Event), q.inline(e.Trigger.Actor, 64))
	if e.Trigger.Runner != "" {
		s.intro += ", runner " + q.inline(e.Trigger.Runner, mdName)
	}
	s.intro += ".\n\n"
	if len(e.Approvals) == 0 {
		s.intro += "None (a plan run needs none).\n"
	}
	for _, a := range e.Approvals {
		if !s.more("") {
			continue
		}
		s.items = append(s.items, r.track(func() (string, string) {
			return fmt.Sprintf("- %s at %s, comment %d, for revision %s\n", q.inline(a.By, 64), stamp(a.At), a.CommentID,
				q.inline(a.Revision, 80)), ""
		}))
	}
	return s
}

func (r *renderer) auditSection() *section {
	s := r.newSection(section{name: "audit", title: "Audit log", weight: 1, noun: "lines"})
	a := r.e.Audit
	switch {
	case a == nil:
		s.intro = "The firewall did not start; there is no audit log.\n"
	case revision.Valid(a.Head):
		s.intro = fmt.Sprintf("The firewall's hash-chained audit log holds %s entries; its head is `%s`.\n", commas(a.Entries), a.Head)
	default:
		s.intro = fmt.Sprintf("The firewall's audit log holds %s entries; its head is %s (not a SHA-256).\n",
			commas(a.Entries), r.q.inline(a.Head, 80))
	}
	if len(r.e.Credentials) > 0 {
		s.intro += "\n"
	}
	for _, c := range r.e.Credentials {
		hosts := make([]string, len(c.Hosts))
		for i, h := range c.Hosts {
			hosts[i] = r.q.inline(h, 120)
		}
		s.intro += fmt.Sprintf("The firewall added the runner host's credential %s toward %s (the VM held a placeholder).\n", r.q.inline(c.Name, 64), strings.Join(hosts, ", "))
	}
	return s
}

func (r *renderer) revocationSection() *section {
	s := r.newSection(section{name: "revocation", title: "Token revocation", weight: 1, noun: "lines"})
	v := r.e.Revocation
	if v.Revoked {
		s.intro = "The run's installation token was revoked at " + stamp(v.At) + ".\n"
	} else {
		s.intro = "**The run's installation token was not revoked**"
		if v.Reason != "" {
			s.intro += ": " + r.q.inline(v.Reason, mdText)
		}
		s.intro += ". It expires within the hour it was minted for.\n"
	}
	return s
}
