package gates

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// Status is what the diff did to a file.
type Status string

// The statuses.
const (
	StatusAdded    Status = "added"
	StatusModified Status = "modified"
	StatusDeleted  Status = "deleted"
	StatusRenamed  Status = "renamed"
)

// Line is an added line and its number in the new file.
type Line struct {
	N    int
	Text string
}

// File is one file of the diff.
type File struct {
	// Path is the file's name after the change; OldPath its name before, when it was
	// renamed or deleted (a deleted file's Path is its old name too).
	Path    string
	OldPath string
	Status  Status
	// Symlink is set when the new file is a symbolic link: its one added line is the
	// link's target.
	Symlink bool
	Added   []Line
}

// DiffArgs are the arguments of `git diff` whose output ParseDiff reads, before the
// range (base...head) and "--": renames found, no context, the usual prefixes. Names git
// quotes (a tab, a non-ASCII byte) are unquoted by ParseDiff. --text: a file git would
// call binary (a NUL byte, a binary or -diff attribute) is diffed as text, so that its
// lines are read too; a secret behind one NUL byte is still a secret.
var DiffArgs = []string{"diff", "--text", "--no-ext-diff", "--no-textconv", "--no-color", "-M", "--unified=0", "--src-prefix=a/", "--dst-prefix=b/"}

// ParseDiff reads the output of `git diff` run with DiffArgs. The output is the agent's
// work: a line it cannot read is an error, never skipped.
func ParseDiff(data []byte) ([]File, error) {
	var files []File
	var cur *File
	newLine := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	inHeader := false
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "diff --git "):
			files = append(files, File{Status: StatusModified})
			cur = &files[len(files)-1]
			old, nw, err := splitGitLine(strings.TrimPrefix(l, "diff --git "))
			if err != nil {
				return nil, fmt.Errorf("failed to read the diff's line %d: %w", n, err)
			}
			cur.OldPath, cur.Path = old, nw
			inHeader = true
		case cur == nil:
			return nil, fmt.Errorf("failed to read the diff's line %d: %q comes before any file", n, cut(l))
		case inHeader && strings.HasPrefix(l, "new file mode "):
			cur.Status = StatusAdded
			cur.Symlink = strings.HasSuffix(l, " 120000")
		case inHeader && strings.HasPrefix(l, "new mode "):
			cur.Symlink = strings.HasSuffix(l, " 120000")
		case inHeader && strings.HasPrefix(l, "deleted file mode "):
			cur.Status = StatusDeleted
		case inHeader && strings.HasPrefix(l, "rename from "):
			p, err := unquote(strings.TrimPrefix(l, "rename from "))
			if err != nil {
				return nil, fmt.Errorf("failed to read the diff's line %d: %w", n, err)
			}
			cur.OldPath, cur.Status = p, StatusRenamed
		case inHeader && strings.HasPrefix(l, "rename to "):
			p, err := unquote(strings.TrimPrefix(l, "rename to "))
			if err != nil {
				return nil, fmt.Errorf("failed to read the diff's line %d: %w", n, err)
			}
			cur.Path, cur.Status = p, StatusRenamed
		case inHeader && (strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "+++ ") || strings.HasPrefix(l, "index ") ||
			strings.HasPrefix(l, "old mode ") || strings.HasPrefix(l, "similarity index ") || strings.HasPrefix(l, "dissimilarity index ") ||
			strings.HasPrefix(l, "copy from ") || strings.HasPrefix(l, "copy to ") || strings.HasPrefix(l, "Binary files ")):
			// The names were read from the diff --git line and the rename lines.
		case strings.HasPrefix(l, "@@ "):
			inHeader = false
			start, err := hunkStart(l)
			if err != nil {
				return nil, fmt.Errorf("failed to read the diff's line %d: %w", n, err)
			}
			newLine = start
		case !inHeader && strings.HasPrefix(l, "+"):
			cur.Added = append(cur.Added, Line{N: newLine, Text: l[1:]})
			newLine++
		case !inHeader && strings.HasPrefix(l, " "):
			newLine++
		case !inHeader && (strings.HasPrefix(l, "-") || strings.HasPrefix(l, `\`)):
		default:
			return nil, fmt.Errorf("failed to read the diff's line %d: %q is not a line of a diff", n, cut(l))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("failed to read the diff: %w", err)
	}
	for i := range files {
		f := &files[i]
		switch f.Status {
		case StatusModified, StatusAdded:
			if f.OldPath == f.Path || f.Status == StatusAdded {
				f.OldPath = ""
			}
		case StatusDeleted:
			f.Path = f.OldPath
		}
	}
	return files, nil
}

// splitGitLine reads the two names of a "diff --git a/X b/Y" line. Unquoted, with no
// rename, the names are the same, which finds the split even when they hold " b/".
func splitGitLine(s string) (string, string, error) {
	if strings.HasPrefix(s, `"`) || strings.HasSuffix(s, `"`) {
		return splitQuoted(s)
	}
	if len(s) >= 5 && (len(s)-5)%2 == 0 {
		n := (len(s) - 5) / 2
		if a, b := s[:2+n], s[2+n:]; strings.HasPrefix(a, "a/") && strings.HasPrefix(b, " b/") && a[2:] == b[3:] {
			return a[2:], b[3:], nil
		}
	}
	// A rename: the rename lines name both; keep what splits at the first " b/".
	i := strings.Index(s, " b/")
	if !strings.HasPrefix(s, "a/") || i < 0 {
		return "", "", fmt.Errorf("%q does not name a/… and b/…", cut(s))
	}
	return s[2:i], s[i+3:], nil
}

func splitQuoted(s string) (string, string, error) {
	var names []string
	for s != "" {
		s = strings.TrimLeft(s, " ")
		var tok string
		if strings.HasPrefix(s, `"`) {
			end := 1
			for end < len(s) && s[end] != '"' {
				if s[end] == '\\' {
					end++
				}
				end++
			}
			if end >= len(s) {
				return "", "", fmt.Errorf("%q has an unterminated name", cut(s))
			}
			tok, s = s[:end+1], s[end+1:]
		} else {
			i := strings.IndexByte(s, ' ')
			if i < 0 {
				i = len(s)
			}
			tok, s = s[:i], s[i:]
		}
		name, err := unquote(tok)
		if err != nil {
			return "", "", err
		}
		names = append(names, name)
	}
	if len(names) != 2 || !strings.HasPrefix(names[0], "a/") || !strings.HasPrefix(names[1], "b/") {
		return "", "", fmt.Errorf("%q does not name a/… and b/…", cut(s))
	}
	return names[0][2:], names[1][2:], nil
}

// unquote reads a name git C-quoted ("a\tb", "\303\251"), or returns it as it is.
func unquote(s string) (string, error) {
	if !strings.HasPrefix(s, `"`) {
		return s, nil
	}
	u, err := strconv.Unquote(s)
	if err != nil {
		return "", fmt.Errorf("failed to read the quoted name %q: %w", cut(s), err)
	}
	return u, nil
}

// hunkStart reads the new file's first line from "@@ -a,b +c,d @@".
func hunkStart(l string) (int, error) {
	i := strings.Index(l, " +")
	if i < 0 {
		return 0, fmt.Errorf("%q is not a hunk header", cut(l))
	}
	rest := l[i+2:]
	end := strings.IndexAny(rest, ", ")
	if end < 0 {
		return 0, fmt.Errorf("%q is not a hunk header", cut(l))
	}
	n, err := strconv.Atoi(rest[:end])
	if err != nil {
		return 0, fmt.Errorf("%q is not a hunk header: %w", cut(l), err)
	}
	return n, nil
}

// cut keeps an error's quote of the agent's text short.
func cut(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
