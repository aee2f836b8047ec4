package repoconfig

import (
	"fmt"
	"path"
	"strings"
)

// The actions of a protected_paths rule.
const (
	// ProtectBlock: a change to a matching file is not pushed; the run fails.
	ProtectBlock = "block"
	// ProtectReview: the change is pushed and the bumper/gates check fails until a
	// writer approves the head.
	ProtectReview = "review"
)

// Bounds of protected_paths.
const (
	MaxProtectedRules = 50
	MaxProtectedPaths = 100
)

// ProtectedPath is one rule of protected_paths: a change to a file matching any of
// Paths is a finding of the output gates' protected_paths gate with Action.
type ProtectedPath struct {
	// Paths are patterns from the repository's root: * and ? within a directory level,
	// [...] classes, and ** as a whole level for any number of directories.
	Paths  []string `yaml:"paths"`
	Action string   `yaml:"action"`
}

// checkProtected validates protected_paths; nil (the key absent) keeps the gates'
// defaults, an empty list protects nothing.
func checkProtected(rules []ProtectedPath) error {
	if len(rules) > MaxProtectedRules {
		return fmt.Errorf("%s: protected_paths has %d rules; at most %d are allowed", Path, len(rules), MaxProtectedRules)
	}
	for i, r := range rules {
		at := fmt.Sprintf("protected_paths[%d]", i)
		switch r.Action {
		case ProtectBlock, ProtectReview:
		case "":
			return fmt.Errorf("%s: %s.action is missing; use block (nothing is pushed) or review (pushed; a person approves)", Path, at)
		default:
			return fmt.Errorf("%s: %s.action %q is not block or review", Path, at, r.Action)
		}
		if len(r.Paths) == 0 {
			return fmt.Errorf("%s: %s.paths is empty; list the patterns it protects, e.g. [\"deploy/**\"]", Path, at)
		}
		if len(r.Paths) > MaxProtectedPaths {
			return fmt.Errorf("%s: %s.paths has %d patterns; at most %d are allowed", Path, at, len(r.Paths), MaxProtectedPaths)
		}
		for j, p := range r.Paths {
			if why := protectedPattern(p); why != "" {
				return fmt.Errorf("%s: %s.paths[%d] %q %s", Path, at, j, p, why)
			}
		}
	}
	return nil
}

// protectedPattern says why a protected_paths pattern is refused, or "".
func protectedPattern(s string) string {
	if why := textProblem(s); why != "" {
		return why
	}
	if strings.HasPrefix(s, "/") || strings.HasPrefix(s, "~") {
		return fmt.Sprintf("is not relative; write it from the repository's root, e.g. %q", strings.TrimLeft(strings.TrimPrefix(s, "~"), "/"))
	}
	if strings.HasSuffix(s, "/") {
		return fmt.Sprintf("ends in /, naming a directory; write %q for every file under it", s+"**")
	}
	for _, part := range strings.Split(s, "/") {
		switch {
		case part == "..":
			return "leaves the repository's tree with ..; write a pattern inside it, from its root"
		case part != "**" && strings.Contains(part, "**"):
			return "uses ** inside a level; ** stands alone between slashes (e.g. docs/**/*.md)"
		case part != "**":
			if _, err := path.Match(part, ""); err != nil {
				return "is not a valid pattern (an unclosed [ or a trailing \\); use *, ? and [...] within one level, ** for any levels"
			}
		}
	}
	if path.Clean(s) == "." {
		return "names the repository's root; use ** for every file"
	}
	return ""
}

// GateActions are what the findings of the output gates other than protected_paths do:
// block or review, nil for the gate's default (secrets block; a dependency with a known
// advisory and a link off the allowlist are for review).
type GateActions struct {
	Secrets      *string `yaml:"secrets"`
	Dependencies *string `yaml:"dependencies"`
	Links        *string `yaml:"links"`
}

// check refuses an action that is neither block nor review, an empty one included.
func (g GateActions) check() error {
	for _, a := range []struct {
		key string
		v   *string
	}{{"secrets", g.Secrets}, {"dependencies", g.Dependencies}, {"links", g.Links}} {
		if a.v == nil {
			continue
		}
		switch *a.v {
		case ProtectBlock, ProtectReview:
		default:
			return fmt.Errorf("%s: gates.%s %q is not block or review; block stops the push, review pushes and waits for a writer's approval", Path, a.key, *a.v)
		}
	}
	return nil
}
