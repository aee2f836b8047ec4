package gates

import (
	"path"
	"regexp"
	"strings"
)

// The OSV ecosystems of the manifests read.
const (
	ecoGo    = "Go"
	ecoNPM   = "npm"
	ecoPyPI  = "PyPI"
	ecoCrate = "crates.io"
)

var (
	// goRequire is a go.mod require or replace line (in a block or alone: a replace
	// block's lines have no keyword).
	goRequire = regexp.MustCompile(`^\s*(?:require\s+|(?:replace\s+)?[^\s]+(?:\s+v[^\s]+)?\s*=>\s*)?([A-Za-z0-9][A-Za-z0-9._~/-]*\.[A-Za-z0-9._~/-]+)\s+(v[0-9][^\s/]*)`)
	// jsonDep is a "name": "version" pair of package.json.
	jsonDep = regexp.MustCompile(`"((?:@[a-z0-9][\w.-]*/)?[a-z0-9][\w.-]*)"\s*:\s*"([~^=v]*[0-9][^"]*|[a-z]+:[^"]+)"`)
	// pyDep is a requirement: name, extras, and an exact or lower-bound version.
	pyDep = regexp.MustCompile(`^\s*["']?([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*(?:(==|===|>=|~=|>|!=|<=|<)\s*([0-9][A-Za-z0-9._*+!-]*))?`)
	// poetryDep is pyproject's poetry form, name = "^1.2".
	poetryDep = regexp.MustCompile(`^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*=\s*(?:"([~^=<>!]*\s*[0-9][^"]*)"|\{.*\bversion\s*=\s*"([~^=<>!]*\s*[0-9][^"]*)")`)
	// cargoDep is Cargo.toml's name = "1.2" or name = { version = "1.2", … }.
	cargoDep = regexp.MustCompile(`^\s*([A-Za-z0-9][A-Za-z0-9_-]*)\s*=\s*(?:"([~^=<>]*\s*[0-9][^"]*)"|\{.*\bversion\s*=\s*"([~^=<>]*\s*[0-9][^"]*)")`)
	// tomlArray is a TOML key given an array on its line (PEP 621's dependencies = [...]),
	// and quoted is each string in it.
	tomlArray = regexp.MustCompile(`^\s*[A-Za-z0-9_.-]+\s*=\s*\[`)
	quoted    = regexp.MustCompile(`"[^"]*"|'[^']*'`)
	// leadingVersion is the first version of a range: its lowest.
	leadingVersion = regexp.MustCompile(`[0-9]+(?:\.[0-9A-Za-z*+-]+)*`)
)

// ownKeys are the keys of a package.json, pyproject.toml or Cargo.toml that are not
// dependencies although written like them.
var ownKeys = map[string]bool{
	"version": true, "name": true, "node": true, "npm": true, "yarn": true, "pnpm": true, "engines": true, "edition": true,
	"rust-version": true, "python": true, "requires-python": true, "lockfileversion": true, "resolver": true, "license": true,
	"packagemanager": true, "description": true, "readme": true, "homepage": true, "repository": true,
}

// dependencies lists the dependencies the diff adds or changes: from the added lines of
// the manifests, and from the lock files read whole (lockDependencies, whose findings
// say which could not be read).
func dependencies(files []File, locks []Lock, action Action) ([]Dependency, []Finding) {
	out := []Dependency{}
	seen := map[string]bool{}
	add := func(d Dependency) {
		d.Version = lowest(d.Version)
		key := d.Ecosystem + "\x00" + strings.ToLower(d.Name) + "\x00" + d.Version
		if seen[key] {
			return
		}
		seen[key] = true
		out = append(out, d)
	}
	for _, f := range files {
		if f.Status == StatusDeleted {
			continue
		}
		base := path.Base(normPath(f.Path))
		switch {
		case base == "go.mod":
			for _, l := range f.Added {
				if m := goRequire.FindStringSubmatch(stripComment(l.Text, "//")); m != nil && !strings.HasPrefix(strings.TrimSpace(l.Text), "module") {
					add(Dependency{Ecosystem: ecoGo, Name: m[1], Version: m[2], File: f.Path, Line: l.N})
				}
			}
		case base == "package.json":
			for _, l := range f.Added {
				// Every pair of the line: a package.json on one line holds them all.
				for _, m := range jsonDep.FindAllStringSubmatch(l.Text, -1) {
					if !ownKeys[strings.ToLower(m[1])] {
						add(Dependency{Ecosystem: ecoNPM, Name: m[1], Version: m[2], File: f.Path, Line: l.N})
					}
				}
			}
		case (strings.HasPrefix(base, "requirements") || path.Base(path.Dir(normPath(f.Path))) == "requirements") &&
			(strings.HasSuffix(base, ".txt") || strings.HasSuffix(base, ".in")):
			for _, l := range f.Added {
				t := stripComment(l.Text, "#")
				if strings.HasPrefix(strings.TrimSpace(t), "-") {
					continue
				}
				if m := pyDep.FindStringSubmatch(t); m != nil {
					add(Dependency{Ecosystem: ecoPyPI, Name: m[1], Version: pyVersion(m[2], m[3]), File: f.Path, Line: l.N})
				}
			}
		case base == "pyproject.toml":
			for _, l := range f.Added {
				t := stripComment(l.Text, "#")
				if m := poetryDep.FindStringSubmatch(t); m != nil && !ownKeys[strings.ToLower(m[1])] {
					add(Dependency{Ecosystem: ecoPyPI, Name: m[1], Version: m[2] + m[3], File: f.Path, Line: l.N})
					continue
				}
				// PEP 621: "name>=1.0", in a list, or the whole list on its key's line.
				if tomlArray.MatchString(t) {
					for _, q := range quoted.FindAllString(t, -1) {
						if m := pyDep.FindStringSubmatch(q); m != nil {
							add(Dependency{Ecosystem: ecoPyPI, Name: m[1], Version: pyVersion(m[2], m[3]), File: f.Path, Line: l.N})
						}
					}
					continue
				}
				if q := strings.TrimSpace(t); strings.HasPrefix(q, `"`) || strings.HasPrefix(q, `'`) {
					if m := pyDep.FindStringSubmatch(q); m != nil {
						add(Dependency{Ecosystem: ecoPyPI, Name: m[1], Version: pyVersion(m[2], m[3]), File: f.Path, Line: l.N})
					}
				}
			}
		case base == "cargo.toml":
			for _, l := range f.Added {
				if m := cargoDep.FindStringSubmatch(stripComment(l.Text, "#")); m != nil && !ownKeys[strings.ToLower(m[1])] {
					add(Dependency{Ecosystem: ecoCrate, Name: m[1], Version: m[2] + m[3], File: f.Path, Line: l.N})
				}
			}
		}
	}
	locked, findings := lockDependencies(files, locks, action)
	for _, d := range locked {
		add(d)
	}
	return out, findings
}

// pyVersion is the version to ask OSV about for a requirement's operator: an exact or
// lower-bound one; none for an upper bound or an exclusion.
func pyVersion(op, v string) string {
	switch op {
	case "==", "===", ">=", "~=":
		return v
	}
	return ""
}

// lowest is a version range's first version (^1.2.3 → 1.2.3); empty when it names none
// (a git URL, a tag, *).
func lowest(v string) string {
	v = strings.TrimSpace(v)
	if strings.Contains(v, ":") || strings.Contains(v, "*") {
		return ""
	}
	if strings.HasPrefix(v, "v") && strings.Count(v, ".") >= 1 && len(v) > 1 && v[1] >= '0' && v[1] <= '9' {
		// Go's versions keep their v.
		return v
	}
	return leadingVersion.FindString(v)
}

func stripComment(s, mark string) string {
	if i := strings.Index(s, mark); i >= 0 {
		return s[:i]
	}
	return s
}
