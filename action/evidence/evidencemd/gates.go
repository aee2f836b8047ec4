package evidencemd

import (
	"fmt"
	"strings"

	"github.com/bumperdev/bumper/action/evidence"
)

// gatesSection lists the output gates' findings, blocking first, and the dependencies
// the diff adds, with OSV's answer. File names, messages and dependency names are the
// agent's text (a path, a host, a package name) and are quoted as such. A run whose
// gates did not run has no section.
func (r *renderer) gatesSection() *section {
	g := r.e.Gates
	if g == nil {
		return nil
	}
	q := r.q
	s := r.newSection(section{name: "gates", weight: 2, noun: "findings", trimNote: "messages shortened",
		title: fmt.Sprintf("Output gates (%d blocking, %d for review)", len(g.Blocking()), len(g.ForReview()))})
	var intro strings.Builder
	if len(g.Findings) == 0 {
		intro.WriteString("No findings: no secret, no protected path, no dependency with an advisory, no outbound link.\n")
	} else {
		intro.WriteString("**block**: nothing was pushed. **review**: pushed; `bumper/gates` fails until a writer approves this head.\n\n")
	}
	switch {
	case g.OSV == nil:
	case g.OSV.Checked:
		fmt.Fprintf(&intro, "Dependencies: %d added or changed, checked against OSV (%s).\n\n", len(g.Dependencies), q.inline(g.OSV.URL, mdName))
	default:
		fmt.Fprintf(&intro, "Dependencies: %d added or changed, **not checked**: %s\n\n", len(g.Dependencies), q.inline(g.OSV.Error, mdText))
	}
	if g.OmittedFindings > 0 || g.OmittedDependencies > 0 {
		fmt.Fprintf(&intro, "%s more findings and %s more dependencies are not in the evidence.\n\n", commas(int64(g.OmittedFindings)), commas(int64(g.OmittedDependencies)))
	}
	s.intro = intro.String()
	for _, f := range g.Findings {
		if !s.more("") {
			continue
		}
		s.items = append(s.items, r.track(func() (string, string) {
			where := q.inline(f.File, mdName)
			if f.Line > 0 {
				where += fmt.Sprintf(" line %d", f.Line)
			}
			short := fmt.Sprintf("- **%s** %s at %s", f.Action, q.word(string(f.Gate)), where)
			return short + ": " + q.inline(f.Message, mdText) + "\n", short + "\n"
		}))
	}
	for _, d := range g.Dependencies {
		if !s.more("dependencies") {
			continue
		}
		s.items = append(s.items, r.track(func() (string, string) {
			line := fmt.Sprintf("- dependency %s %s", q.word(strings.ToLower(d.Ecosystem)), q.inline(d.Name, mdName))
			if d.Version != "" {
				line += " " + q.inline(d.Version, 40)
			}
			line += " in " + q.inline(d.File, mdName) + fmt.Sprintf(" line %d", d.Line)
			if len(d.Advisories) > 0 {
				line += ": advisories " + q.inline(strings.Join(d.Advisories, ", "), mdText)
			}
			return line + "\n", ""
		}))
	}
	return s
}

// Gates renders the output gates' section of e alone, within limit bytes, for the
// bumper/gates check run's summary; "" when the gates did not run.
func Gates(e *evidence.Evidence, limit int) string {
	if e == nil || e.Gates == nil || limit <= 0 {
		return ""
	}
	r := newRenderer(e, limit)
	s := r.gatesSection()
	text, _ := s.render(min(limit, s.size()))
	// The check run is about the gates alone: their section shows open.
	return strings.Replace(text, "<details>", "<details open>", 1)
}
