package evidence

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/bumperdev/bumper/internal/hostpattern"
	"github.com/bumperdev/bumper/internal/repoconfig"
)

// The policy keys a suggested change extends.
const (
	PolicyKeyAllowlist        = "allowlist"
	PolicyKeyEnvironmentAllow = "environment.allow"
)

// whyComment is what each added entry carries: the reason a host is needed is a
// person's to write, not the firewall's to guess.
const whyComment = " # why is this host needed? (say so before merging)"

// AllowlistPatch returns a unified diff of .github/bumper.yml (file; nil when the base
// commit has none) that adds entries to key, keeping every other line and comment: a
// block list gets items at its own indentation, a one-line flow list ([a, b]) the
// entries appended, a file or mapping without the key gets it. Entries are checked as
// allowlist entries and written double-quoted. A key in a shape this line editor cannot
// extend safely (a multi-line flow list, an anchor, a scalar) is an error saying so.
func AllowlistPatch(file []byte, key string, entries []string) (string, error) {
	if len(entries) == 0 {
		return "", errors.New("no entries to add")
	}
	quoted := make([]string, len(entries))
	for i, e := range entries {
		if _, err := hostpattern.Parse(e); err != nil || strings.ContainsAny(e, "\"\\#'\n") {
			return "", fmt.Errorf("%q is not an allowlist entry", e)
		}
		quoted[i] = strconv.Quote(e)
	}
	old := splitLines(string(file))
	start := old
	if file == nil {
		// A new file needs the version the parser insists on.
		start = []string{"version: " + strconv.Itoa(repoconfig.Schema) + "\n"}
	}
	var neu []string
	var err error
	switch key {
	case PolicyKeyAllowlist:
		neu, err = addTopLevel(start, "allowlist", quoted)
	case PolicyKeyEnvironmentAllow:
		neu, err = addEnvironmentAllow(start, quoted)
	default:
		return "", fmt.Errorf("unknown policy key %q", key)
	}
	if err != nil {
		return "", err
	}
	return unifiedDiff(repoconfig.Path, file == nil, old, neu), nil
}

// splitLines splits s into lines that keep their "\n"; the last may lack it.
func splitLines(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

var keyLine = regexp.MustCompile(`^( *)([A-Za-z_][A-Za-z0-9_-]*) *:(.*)$`)

// addTopLevel adds quoted entries to the top-level list key of lines.
func addTopLevel(lines []string, key string, quoted []string) ([]string, error) {
	for i, l := range lines {
		if m := keyLine.FindStringSubmatch(strings.TrimRight(l, "\r\n")); m != nil && m[1] == "" && m[2] == key {
			return addToList(lines, i, 0, m[3], quoted, key)
		}
	}
	add := []string{key + ":\n"}
	for _, q := range quoted {
		add = append(add, "  - "+q+whyComment+"\n")
	}
	return appendLines(lines, add), nil
}

// addEnvironmentAllow adds quoted entries to environment.allow.
func addEnvironmentAllow(lines []string, quoted []string) ([]string, error) {
	env := -1
	for i, l := range lines {
		if m := keyLine.FindStringSubmatch(strings.TrimRight(l, "\r\n")); m != nil && m[1] == "" && m[2] == "environment" {
			if strings.TrimSpace(stripComment(m[3])) != "" {
				return nil, errors.New("environment: is not a block mapping; add the entries to environment.allow by hand")
			}
			env = i
			break
		}
	}
	if env < 0 {
		add := []string{"environment:\n", "  allow:\n"}
		for _, q := range quoted {
			add = append(add, "    - "+q+whyComment+"\n")
		}
		return appendLines(lines, add), nil
	}
	indent := -1
	for j := env + 1; j < len(lines); j++ {
		t := strings.TrimRight(lines[j], "\r\n")
		if isBlankOrComment(t) {
			continue
		}
		n := len(t) - len(strings.TrimLeft(t, " "))
		if n == 0 {
			break
		}
		if indent < 0 {
			indent = n
		}
		if m := keyLine.FindStringSubmatch(t); m != nil && len(m[1]) == indent && m[2] == "allow" {
			return addToList(lines, j, indent, m[3], quoted, "environment.allow")
		}
	}
	if indent < 0 {
		indent = 2
	}
	pad := strings.Repeat(" ", indent)
	add := []string{pad + "allow:\n"}
	for _, q := range quoted {
		add = append(add, pad+"  - "+q+whyComment+"\n")
	}
	return insertLines(lines, env+1, add), nil
}

// addToList extends the list whose key is on line at (indented by indent; rest is what
// follows its colon).
func addToList(lines []string, at, indent int, rest string, quoted []string, name string) ([]string, error) {
	value := strings.TrimSpace(stripComment(rest))
	switch {
	case value == "":
		return addToBlock(lines, at, indent, quoted), nil
	case strings.HasPrefix(value, "[") && strings.HasSuffix(value, "]"):
		inner := strings.TrimSpace(value[1 : len(value)-1])
		joined := strings.Join(quoted, ", ")
		if inner != "" {
			joined = inner + ", " + joined
		}
		l := lines[at]
		i := strings.Index(l, value)
		nl := l[:i] + "[" + joined + "]" + l[i+len(value):]
		out := insertLines(lines, at, []string{strings.Repeat(" ", indent) + "# why is each added host needed? (say so before merging)\n"})
		out[at+1] = nl
		return out, nil
	}
	return nil, fmt.Errorf("%s: is neither a block list nor a one-line [flow] list; add %s by hand", name, strings.Join(quoted, ", "))
}

// addToBlock appends items after the last item of the block list under line at.
func addToBlock(lines []string, at, indent int, quoted []string) []string {
	last, itemPad := at, ""
	found := false
	for j := at + 1; j < len(lines); j++ {
		t := strings.TrimRight(lines[j], "\r\n")
		if isBlankOrComment(t) {
			continue
		}
		n := len(t) - len(strings.TrimLeft(t, " "))
		if n < indent || (n == indent && !strings.HasPrefix(t[n:], "- ") && t[n:] != "-") {
			break
		}
		if !found {
			itemPad, found = t[:n], true
		}
		last = j
	}
	if !found {
		itemPad = strings.Repeat(" ", indent+2)
	}
	add := make([]string, len(quoted))
	for i, q := range quoted {
		add[i] = itemPad + "- " + q + whyComment + "\n"
	}
	return insertLines(lines, last+1, add)
}

func isBlankOrComment(t string) bool {
	s := strings.TrimSpace(t)
	return s == "" || strings.HasPrefix(s, "#")
}

// stripComment drops a trailing " # comment" (a '#' after a space starts one in YAML).
func stripComment(s string) string {
	if strings.HasPrefix(strings.TrimSpace(s), "#") {
		return ""
	}
	if i := strings.Index(s, " #"); i >= 0 {
		return s[:i]
	}
	return s
}

// appendLines adds lines at the end, ending the file's last line first if it has no
// newline.
func appendLines(lines, add []string) []string {
	out := append([]string(nil), lines...)
	if n := len(out); n > 0 && !strings.HasSuffix(out[n-1], "\n") {
		out[n-1] += "\n"
	}
	return append(out, add...)
}

func insertLines(lines []string, at int, add []string) []string {
	out := make([]string, 0, len(lines)+len(add))
	out = append(out, lines[:at]...)
	if at > 0 && at == len(lines) && !strings.HasSuffix(out[at-1], "\n") {
		out[at-1] += "\n"
	}
	out = append(out, add...)
	return append(out, lines[at:]...)
}

// unifiedDiff is the git diff of path from old to neu, one hunk with three lines of
// context around the one region that changed.
func unifiedDiff(path string, created bool, old, neu []string) string {
	p := 0
	for p < len(old) && p < len(neu) && old[p] == neu[p] {
		p++
	}
	s := 0
	for s < len(old)-p && s < len(neu)-p && old[len(old)-1-s] == neu[len(neu)-1-s] {
		s++
	}
	const ctx = 3
	from := max(p-ctx, 0)
	oEnd, nEnd := min(len(old)-s+ctx, len(old)), min(len(neu)-s+ctx, len(neu))
	var b strings.Builder
	b.WriteString("diff --git a/" + path + " b/" + path + "\n")
	if created {
		b.WriteString("new file mode 100644\n--- /dev/null\n")
	} else {
		b.WriteString("--- a/" + path + "\n")
	}
	b.WriteString("+++ b/" + path + "\n")
	fmt.Fprintf(&b, "@@ -%s +%s @@\n", hunkRange(from, oEnd-from), hunkRange(from, nEnd-from))
	line := func(mark byte, l string) {
		b.WriteByte(mark)
		b.WriteString(l)
		if !strings.HasSuffix(l, "\n") {
			b.WriteString("\n\\ No newline at end of file\n")
		}
	}
	for i := from; i < p; i++ {
		line(' ', old[i])
	}
	for i := p; i < len(old)-s; i++ {
		line('-', old[i])
	}
	for i := p; i < len(neu)-s; i++ {
		line('+', neu[i])
	}
	for i := len(old) - s; i < oEnd; i++ {
		line(' ', old[i])
	}
	return b.String()
}

// hunkRange is a hunk's "start,count" (1-based; an empty range names the line before).
func hunkRange(from, n int) string {
	if n == 0 {
		return strconv.Itoa(from) + ",0"
	}
	return strconv.Itoa(from+1) + "," + strconv.Itoa(n)
}
