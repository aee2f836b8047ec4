package ghemu

import (
	"regexp"
	"strconv"
	"strings"
)

// closingRE finds GitHub's closing keywords in a pull request's body: close, closes,
// closed, fix, fixes, fixed, resolve, resolves, resolved, in any case, optionally
// followed by a colon, then "#N" or "owner/repo#N".
var closingRE = regexp.MustCompile(`(?i)(?:^|[^\w])(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?):?\s+(?:([\w.-]+/[\w.-]+))?#(\d+)\b`)

// closingReferences returns the numbers of this repository's issues that text closes,
// in order and without repeats. References to other repositories are left out: the
// emulator closes only what it holds in the same repository.
func closingReferences(rp *repo, text string) []int {
	var out []int
	seen := map[int]bool{}
	for _, m := range closingRE.FindAllStringSubmatch(text, -1) {
		if m[1] != "" && !strings.EqualFold(m[1], rp.fullName()) {
			continue
		}
		n, err := strconv.Atoi(m[2])
		if err != nil || seen[n] {
			continue
		}
		seen[n] = true
		out = append(out, n)
	}
	return out
}

// closeReferencedIssues closes the open issues a merged pull request's body names with a
// closing keyword, as GitHub does when the merge lands on the default branch: state
// reason completed, closed by the merger, an issues "closed" webhook each. Pull requests
// named that way are left alone (GitHub links only issues). Callers hold e.mu.
func (e *Emulator) closeReferencedIssues(rp *repo, pr *issue, p *pull, merger string) {
	if p.Base != rp.DefaultBranch {
		return
	}
	for _, n := range closingReferences(rp, pr.Body) {
		is := rp.Issues[n]
		if is == nil || is.IsPull || is.State != "open" {
			continue
		}
		now := e.timestamp()
		is.State, is.StateReason, is.ClosedAt, is.ClosedBy, is.UpdatedAt = "closed", "completed", &now, merger, now
		e.emitIssueEvent(rp, is, "closed", merger, nil)
	}
}
