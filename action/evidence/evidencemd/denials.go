package evidencemd

import (
	"fmt"
	"strings"

	"github.com/bumperdev/bumper/action/evidence"
)

// mdPatchBytes bounds the patch shown in the Markdown; a longer one is only in
// evidence.json (the rendering says so).
const mdPatchBytes = 16 << 10

// denialsText shows the destinations a firewall refused and the suggested change to the
// policy: each host quoted as others' text (the VM chose it), the patch as a fenced
// diff block. short is the same without the patch, for when space is tight.
func (r *renderer) denialsText(d *evidence.Denials, indent string) (full, short string) {
	q := r.q
	var b strings.Builder
	fmt.Fprintf(&b, "%s**Denied hosts (%d):** refused for where they went", indent, d.DeniedHostCount())
	if d.OmittedHosts > 0 {
		fmt.Fprintf(&b, "; the %d refused after the first %d are only counted", d.OmittedHosts, len(d.Hosts))
	}
	b.WriteString("\n\n")
	for _, h := range d.Hosts {
		fmt.Fprintf(&b, "%s- %s port %d, %s: %s, first at %s", indent, q.inline(h.Host, mdName), h.Port, q.word(h.Kind),
			plural(h.Count, "request"), stamp(h.First))
		if h.Entry == "" {
			b.WriteString("; no allowlist entry lets it through (the firewall never dials such addresses)")
		}
		b.WriteString("\n")
	}
	short = b.String()
	switch {
	case d.Patch != "":
		block := q.diffBlock(d.Patch, mdPatchBytes)
		if block == "" {
			fmt.Fprintf(&b, "\n%sA suggested change to `%s:` is in `evidence.json` (too long to show here).\n", indent, d.Key)
			break
		}
		fmt.Fprintf(&b, "\n%sA suggested change to `%s:` in `.github/bumper.yml` (it applies to the base commit; why each host is needed is for a person to say before merging it):\n\n", indent, d.Key)
		for _, l := range strings.SplitAfter(block, "\n") {
			if l != "" {
				b.WriteString(indent + l)
			}
		}
	case d.PatchProblem != "":
		fmt.Fprintf(&b, "\n%sNo change to `%s:` is suggested: %s\n", indent, d.Key, q.inline(d.PatchProblem, mdText))
	}
	return b.String(), short
}
