package gitserver

import (
	"strconv"
	"strings"
)

// One parser reads the hunks of git's unified diff for every consumer: the pull request
// files route counts additions and deletions with it, review comments find their line
// and position in it, and the web view numbers the lines it shows. They must agree, or
// a comment would land on a line the page numbers differently.

// PatchLine is one line of a file's patch with where it sits on each side.
type PatchLine struct {
	// Kind is '@' for a hunk header, '+', '-', ' ', or '\\' (no newline at end of file).
	Kind byte
	Text string
	Old  int // line number on the LEFT side, 0 when not there
	New  int // line number on the RIGHT side, 0 when not there
	Hunk int // index of the hunk
}

// ParsePatch splits a file's patch (FileDiff.Patch) into lines. Index i of the result
// is GitHub's "position" i: the first hunk header is position 0, the line below it 1,
// and later hunk headers count too.
func ParsePatch(patch string) []PatchLine {
	if patch == "" {
		return nil
	}
	return ParseHunks(strings.Split(patch, "\n"))
}

// ParseHunks is ParsePatch on a patch already split into lines: the web view's parser
// hands it each file's lines from the first hunk header on.
func ParseHunks(lines []string) []PatchLine {
	out := make([]PatchLine, 0, len(lines))
	oldN, newN, hunk := 0, 0, -1
	for _, l := range lines {
		pl := PatchLine{Text: l, Hunk: hunk}
		switch {
		case strings.HasPrefix(l, "@@ "):
			hunk++
			pl.Kind, pl.Hunk = '@', hunk
			oldN, newN = hunkStarts(l)
		case strings.HasPrefix(l, "+"):
			pl.Kind, pl.New = '+', newN
			newN++
		case strings.HasPrefix(l, "-"):
			pl.Kind, pl.Old = '-', oldN
			oldN++
		case strings.HasPrefix(l, `\`):
			pl.Kind = '\\'
		default:
			pl.Kind, pl.Old, pl.New = ' ', oldN, newN
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

// CountChanges counts the added and removed lines of a parsed patch.
func CountChanges(lines []PatchLine) (adds, dels int) {
	for _, pl := range lines {
		switch pl.Kind {
		case '+':
			adds++
		case '-':
			dels++
		}
	}
	return adds, dels
}
