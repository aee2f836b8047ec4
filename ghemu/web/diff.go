package web

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/bumperdev/bumper/ghemu/gitserver"
)

// The web view shows pull request and commit diffs as GitHub's "Files changed" tab
// does: one box per file with its path and what happened to it, then the hunks, line by
// line, with the old and new line numbers. git writes the diff (gitserver.Diff and
// CommitDiff); parseDiff reads its unified format into that shape.

// maxDiffLines bounds what one page shows: beyond it the page says the diff was cut and
// points at the .diff URL, as GitHub stops rendering large diffs.
const maxDiffLines = 20000

// diff is a parsed unified diff.
type diff struct {
	Files     []*diffFile
	Additions int
	Deletions int
	// Truncated is set when the diff had more than maxDiffLines lines.
	Truncated bool
}

// diffFile is one file of a diff.
type diffFile struct {
	OldPath, NewPath string
	// Status is added, deleted, renamed, modified or mode (only the mode changed).
	Status    string
	Binary    bool
	Additions int
	Deletions int
	// Notes are the header lines worth showing (mode changes, similarity).
	Notes []string
	Lines []diffLine
}

// Path is the file's name as the page titles it.
func (f *diffFile) Path() string {
	if f.Status == "deleted" {
		return f.OldPath
	}
	return f.NewPath
}

// diffLine is one line of a hunk, or a hunk header. Kind is the CSS class suffix:
// add, del, ctx, hunk or note ("\ No newline at end of file"). Old and New are the
// line numbers, 0 where the line has none on that side.
type diffLine struct {
	Kind     string
	Old, New int
	Text     string
	// Target names the line for an inline comment ("FILE:R:LINE", the file's index in
	// the diff, the side, the line on that side), "" where none can be made; Open marks
	// the line whose comment form is shown.
	Target string
	Open   bool
}

// Side and Line are where an inline comment on the line lands: a removed line on the
// old file's side, any other on the new file's, as GitHub's diff view places them.
func (l diffLine) Side() string {
	if l.Kind == "del" {
		return "LEFT"
	}
	return "RIGHT"
}

// Line is the line's number on its Side.
func (l diffLine) Line() int {
	if l.Kind == "del" {
		return l.Old
	}
	return l.New
}

// commentable gives every line a comment can be made on its Target, and opens the
// form under the line open names.
func (d *diff) commentable(open string) {
	for i, f := range d.Files {
		for j := range f.Lines {
			l := &f.Lines[j]
			if l.Kind != "add" && l.Kind != "del" && l.Kind != "ctx" {
				continue
			}
			l.Target = strconv.Itoa(i) + ":" + l.Side()[:1] + ":" + strconv.Itoa(l.Line())
			l.Open = l.Target == open
		}
	}
}

// lineKinds names each kind of patchLine as the page's CSS does.
var lineKinds = map[byte]string{'@': "hunk", '+': "add", '-': "del", ' ': "ctx", '\\': "note"}

// parseDiff reads git's unified diff output (diff --git headers, ---/+++ lines, hunks).
// Each file's header lines say what happened to it; from its first hunk header on,
// its lines go to parseHunks, the parser the REST files and review comments use.
func parseDiff(raw []byte) *diff {
	d := &diff{}
	lines := 0
	for _, sec := range diffSections(strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")) {
		f := &diffFile{Status: "modified"}
		f.OldPath, f.NewPath = splitGitHeader(strings.TrimPrefix(sec[0], "diff --git "))
		d.Files = append(d.Files, f)
		// A file that starts past the limit is listed by its name only.
		if lines >= maxDiffLines {
			d.Truncated = true
			break
		}
		body := len(sec)
		for i, line := range sec[1:] {
			if strings.HasPrefix(line, "@@ ") {
				body = i + 1
				break
			}
			f.readHeader(line)
		}
		hunks := gitserver.ParseHunks(sec[body:])
		for i, pl := range hunks {
			if lines >= maxDiffLines {
				d.Truncated, hunks = true, hunks[:i]
				break
			}
			f.Lines = append(f.Lines, toLine(pl))
			if pl.Kind != '\\' {
				lines++
			}
		}
		f.Additions, f.Deletions = gitserver.CountChanges(hunks)
		if d.Truncated {
			break
		}
	}
	for _, f := range d.Files {
		if f.Status == "modified" && len(f.Lines) == 0 && !f.Binary && len(f.Notes) > 0 {
			f.Status = "mode"
		}
		d.Additions += f.Additions
		d.Deletions += f.Deletions
	}
	return d
}

// toLine is a parsed patch line as the page shows it: the text without its +, - or
// space marker (the page draws its own), the "\ No newline" note without its backslash.
func toLine(pl gitserver.PatchLine) diffLine {
	l := diffLine{Kind: lineKinds[pl.Kind], Old: pl.Old, New: pl.New, Text: pl.Text}
	switch {
	case pl.Kind == '@':
		// The hunk header is shown whole.
	case pl.Kind == '\\':
		l.Text = strings.TrimSpace(pl.Text[1:])
	case pl.Text != "":
		// An empty line is a context line whose leading space an editor removed.
		l.Text = pl.Text[1:]
	}
	return l
}

// diffSections cuts a diff's lines into its files, each from its "diff --git" line;
// what comes before the first is not a file's.
func diffSections(lines []string) [][]string {
	var out [][]string
	start := -1
	for i, line := range lines {
		if !strings.HasPrefix(line, "diff --git ") {
			continue
		}
		if start >= 0 {
			out = append(out, lines[start:i])
		}
		start = i
	}
	if start >= 0 {
		out = append(out, lines[start:])
	}
	return out
}

// readHeader takes in one of a file's header lines, those above its first hunk.
func (f *diffFile) readHeader(line string) {
	switch {
	case strings.HasPrefix(line, "--- "):
		if p := diffPath(line[4:]); p != "" {
			f.OldPath = p
		}
	case strings.HasPrefix(line, "+++ "):
		if p := diffPath(line[4:]); p != "" {
			f.NewPath = p
		}
	case strings.HasPrefix(line, "new file mode "):
		f.Status = "added"
	case strings.HasPrefix(line, "deleted file mode "):
		f.Status = "deleted"
	case strings.HasPrefix(line, "rename from "):
		f.Status, f.OldPath = "renamed", unquoteGitPath(strings.TrimPrefix(line, "rename from "))
	case strings.HasPrefix(line, "rename to "):
		f.Status, f.NewPath = "renamed", unquoteGitPath(strings.TrimPrefix(line, "rename to "))
	case strings.HasPrefix(line, "old mode "), strings.HasPrefix(line, "new mode "):
		f.Notes = append(f.Notes, line)
	case strings.HasPrefix(line, "Binary files "):
		f.Binary = true
	}
}

// diffPath reads the path of a ---/+++ line: "a/x", "b/x" or /dev/null (""), quoted
// when git had to.
func diffPath(s string) string {
	s = unquoteGitPath(strings.TrimSuffix(s, "\t"))
	if s == "/dev/null" {
		return ""
	}
	if strings.HasPrefix(s, "a/") || strings.HasPrefix(s, "b/") {
		return s[2:]
	}
	return s
}

// splitGitHeader reads "a/X b/Y" from a diff --git line. The ---/+++ or rename lines
// correct it when present; it matters for binary files and mode changes, where the
// header is all there is. Unquoted, the two names are the same unless renamed, so the
// line is split in its middle.
func splitGitHeader(s string) (string, string) {
	if strings.HasPrefix(s, `"`) {
		// Quoted names: `"a/x y" "b/x y"`.
		if end := strings.Index(s[1:], `" `); end >= 0 {
			a := unquoteGitPath(s[:end+2])
			b := unquoteGitPath(s[end+3:])
			return strings.TrimPrefix(a, "a/"), strings.TrimPrefix(b, "b/")
		}
	}
	if len(s)%2 == 1 {
		half := len(s) / 2
		if s[half] == ' ' && strings.HasPrefix(s, "a/") && s[2:half] == strings.TrimPrefix(s[half+1:], "b/") {
			return s[2:half], s[2:half]
		}
	}
	a, b, _ := strings.Cut(s, " ")
	return strings.TrimPrefix(a, "a/"), strings.TrimPrefix(b, "b/")
}

// unquoteGitPath undoes git's C-style quoting of unusual file names ("caf\303\251").
func unquoteGitPath(s string) string {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return s
	}
	var out bytes.Buffer
	for i := 1; i < len(s)-1; i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s)-1 {
			out.WriteByte(c)
			continue
		}
		i++
		switch e := s[i]; e {
		case 'n':
			out.WriteByte('\n')
		case 't':
			out.WriteByte('\t')
		case '"', '\\':
			out.WriteByte(e)
		case 'a', 'b', 'f', 'r', 'v':
			out.WriteByte(map[byte]byte{'a': 7, 'b': 8, 'f': 12, 'r': 13, 'v': 11}[e])
		default:
			if i+2 < len(s)-1 {
				if n, err := strconv.ParseUint(s[i:i+3], 8, 8); err == nil {
					out.WriteByte(byte(n))
					i += 2
					continue
				}
			}
			out.WriteByte('\\')
			out.WriteByte(e)
		}
	}
	return out.String()
}
