package gates

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// DefaultProtected are the protected-path rules a repository gets unless its
// .github/bumper.yml says protected_paths: its workflows and settings, who owns what,
// the agents' own configuration (a committed .claude/settings.json can make the next
// agent run hooks or send its key elsewhere), and install-time hooks.
func DefaultProtected() []Rule {
	return []Rule{{Action: ActionReview, Paths: []string{
		".github/**", "CODEOWNERS", "docs/CODEOWNERS",
		"**/CLAUDE.md", "**/AGENTS.md", "**/.claude/**", "**/.mcp.json", "**/.cursor/**", "**/.codex/**", "**/.vscode/**",
		"**/setup.py", "**/build.rs", ".husky/**",
	}}}
}

// MatchPath reports whether the repository path p matches the pattern: segments as
// path.Match reads them, and a segment "**" for any number of directories. Both are
// compared cleaned and in lower case: a repository checked out on a case-insensitive
// file system reads .GitHub/workflows as .github/workflows.
func MatchPath(pattern, p string) bool {
	return matchSegs(strings.Split(strings.ToLower(path.Clean(pattern)), "/"), strings.Split(normPath(p), "/"))
}

// normPath is a repository path cleaned, without a leading ./ or /, in lower case.
func normPath(p string) string {
	p = strings.TrimLeft(path.Clean("/"+stripHidden(p)), "/")
	return strings.ToLower(p)
}

func matchSegs(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(segs); i++ {
				if matchSegs(pat[1:], segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if ok, err := path.Match(pat[0], segs[0]); err != nil || !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}

// hookScript is a package.json lifecycle script npm runs on install (prepack and
// postpack when it installs a git dependency), its colon on the line or the next; and
// npm's "dependencies" script, run after an install changes node_modules, which a
// string value tells from the dependencies object.
var hookScript = regexp.MustCompile(`"(preinstall|install|postinstall|prepare|prepublish|preprepare|postprepare|prepack|postpack)"\s*(?::|$)|"(dependencies)"\s*:\s*"`)

// jsonEscape is a \uXXXX escape or a one-character escape of a JSON string.
var jsonEscape = regexp.MustCompile(`\\u[0-9A-Fa-f]{4}|\\["\\/bfnrt]`)

// unescapeJSON reads a line's JSON escapes as npm's JSON.parse does ("post\u0069nstall"
// is postinstall); an escaped quote stays escaped, so that no string ends early.
func unescapeJSON(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	return jsonEscape.ReplaceAllStringFunc(s, func(e string) string {
		if e[1] == 'u' {
			n, err := strconv.ParseUint(e[2:], 16, 32)
			if err != nil || n == '"' || n == '\\' || n < 0x20 {
				return e
			}
			return string(rune(n))
		}
		if e[1] == '/' {
			return "/"
		}
		return e
	})
}

// protectedPaths runs the protected-paths gate: each changed file whose name (before or
// after, a symlink's target too) matches a rule, and each lifecycle script added to a
// package.json anywhere in the tree.
func protectedPaths(files []File, cfg Config) []Finding {
	rules := cfg.Protected
	if rules == nil {
		rules = DefaultProtected()
	}
	var out []Finding
	for _, f := range files {
		if a, pat, name, ok := protectedBy(rules, f); ok {
			out = append(out, Finding{Gate: GateProtectedPaths, File: f.Path, Action: a,
				Message: fmt.Sprintf("%s %s, which %s protects", describe(f), name, pat)})
		}
		if path.Base(normPath(f.Path)) != "package.json" {
			continue
		}
		for _, l := range f.Added {
			if m := hookScript.FindStringSubmatch(unescapeJSON(l.Text)); m != nil {
				out = append(out, Finding{Gate: GateProtectedPaths, File: f.Path, Line: l.N, Action: ActionReview,
					Message: fmt.Sprintf("adds the install-time script %q, which npm runs on install", m[1]+m[2])})
			}
		}
	}
	return out
}

// protectedBy finds the strictest rule that matches one of the file's names.
func protectedBy(rules []Rule, f File) (Action, string, string, bool) {
	names := []string{f.Path}
	if f.OldPath != "" && f.OldPath != f.Path {
		names = append(names, f.OldPath)
	}
	if f.Symlink {
		for _, l := range f.Added {
			// A link's target is read from its directory; one that leaves the tree is
			// named as the tree's root would see it.
			names = append(names, path.Join(path.Dir(f.Path), l.Text))
		}
	}
	var found Action
	var pat, name string
	for _, n := range names {
		for _, r := range rules {
			for _, p := range r.Paths {
				if MatchPath(p, n) && (found == "" || r.Action == ActionBlock && found != ActionBlock) {
					found, pat, name = r.Action, p, n
				}
			}
		}
	}
	return found, pat, name, found != ""
}

// describe says what the diff did to the file.
func describe(f File) string {
	switch {
	case f.Symlink:
		return "adds a symbolic link to"
	case f.Status == StatusRenamed:
		return fmt.Sprintf("renames %s to %s, touching", f.OldPath, f.Path)
	case f.Status == StatusAdded:
		return "adds"
	case f.Status == StatusDeleted:
		return "deletes"
	}
	return "changes"
}
