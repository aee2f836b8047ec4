package ghemu

import (
	"strconv"
	"strings"
)

// One parser reads the hunks of git's unified diff for every consumer: the files route
// counts additions and deletions with it, review comments find their line and position
// in it, and the web view numbers the lines it shows. They must agree, or a comment
// would land on a line the page numbers differently.

// patchLine is one line of a file's patch with where it sits on each side.
type patchLine struct {
	kind byte // '@' hunk header, '+', '-', ' ', '\\' (no newline at end of file)
	text string
	old  int // line number on the LEFT side, 0 when not there
	new  int // line number on the RIGHT side, 0 when not there
	hunk int // index of the hunk
}

// parsePatch splits a file's patch into lines. Index i of the result is GitHub's
// "position" i: the first hunk header is position 0, the line below it 1, and later
// hunk headers count too.
func parsePatch(patch string) []patchLine {
	if patch == "" {
		return nil
	}
	return parseHunks(strings.Split(patch, "\n"))
}

// parseHunks is parsePatch on a patch already split into lines: the web view's parser
// hands it each file's lines from the first hunk header on.
func parseHunks(lines []string) []patchLine {
	out := make([]patchLine, 0, len(lines))
	oldN, newN, hunk := 0, 0, -1
	for _, l := range lines {
		pl := patchLine{text: l, hunk: hunk}
		switch {
		case strings.HasPrefix(l, "@@ "):
			hunk++
			pl.kind, pl.hunk = '@', hunk
			oldN, newN = hunkStarts(l)
		case strings.HasPrefix(l, "+"):
			pl.kind, pl.new = '+', newN
			newN++
		case strings.HasPrefix(l, "-"):
			pl.kind, pl.old = '-', oldN
			oldN++
		case strings.HasPrefix(l, `\`):
			pl.kind = '\\'
		default:
			pl.kind, pl.old, pl.new = ' ', oldN, newN
			oldN++
			newN++
		}
		out = append(out, pl)
	}
	return out
}

// hunkStarts reads "@@ -a[,b] +c[,d] @@ …" into a and c.
func hunkStarts(header string) (int, int) {
	f := strings.Fields(header)
	if len(f) < 3 {
		return 0, 0
	}
	num := func(s string) int {
		s, _, _ = strings.Cut(s[1:], ",")
		n, _ := strconv.Atoi(s)
		return n
	}
	return num(f[1]), num(f[2])
}

// countChanges counts the added and removed lines of a parsed patch.
func countChanges(lines []patchLine) (adds, dels int) {
	for _, pl := range lines {
		switch pl.kind {
		case '+':
			adds++
		case '-':
			dels++
		}
	}
	return adds, dels
}
