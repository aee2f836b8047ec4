package gates

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
	"gopkg.in/yaml.v3"
)

// Lock is a lock file the diff changes, whole at both ends. A version bump in a lock
// file changes one line whose package is named on an unchanged one, so the diff's added
// lines alone cannot say what a lock file changes: the two versions of the file can.
type Lock struct {
	// Path is the file's name after the change, as the diff names it.
	Path string
	// Base is the file at the diff's base, nil when the change adds it; Head is the
	// file at the head.
	Base, Head []byte
	// Err says why the file could not be read (too large, say): the gate then says
	// its dependencies were not checked.
	Err error
}

// locked is one package a lock file pins, with the line that names it.
type locked struct {
	eco, name, version string
	line               int
}

// lockReaders read the lock files by base name (lower case).
var lockReaders = map[string]func([]byte) ([]locked, error){
	"package-lock.json":   readNPMLock,
	"npm-shrinkwrap.json": readNPMLock,
	"yarn.lock":           readYarnLock,
	"pnpm-lock.yaml":      readPNPMLock,
	"cargo.lock":          readCargoLock,
	"poetry.lock":         readPoetryLock,
	"uv.lock":             readUVLock,
	"go.sum":              readGoSum,
}

// IsLockFile reports whether p names a lock file the dependencies gate reads whole
// (Input.Locks): package-lock.json, npm-shrinkwrap.json, yarn.lock, pnpm-lock.yaml,
// Cargo.lock, poetry.lock, uv.lock and go.sum.
func IsLockFile(p string) bool {
	_, ok := lockReaders[path.Base(normPath(p))]
	return ok
}

// lockDependencies lists what each lock file pins at its head and did not pin at its
// base, and a finding for each lock file of the diff that could not be read: its
// dependencies were not checked, which is said, never passed over.
func lockDependencies(files []File, locks []Lock, action Action) ([]Dependency, []Finding) {
	byPath := map[string]Lock{}
	for _, l := range locks {
		byPath[l.Path] = l
	}
	var deps []Dependency
	var findings []Finding
	unread := func(p string, err error) {
		findings = append(findings, Finding{Gate: GateDependencies, File: p, Action: action,
			Message: fmt.Sprintf("the lock file could not be read (%v): the dependencies it pins were not checked", err)})
	}
	for _, f := range files {
		if f.Status == StatusDeleted || !IsLockFile(f.Path) {
			continue
		}
		if f.Symlink {
			// The package manager follows the link to pins of a name no reader knows.
			unread(f.Path, fmt.Errorf("it is a symbolic link"))
			continue
		}
		l, ok := byPath[f.Path]
		switch {
		case !ok:
			unread(f.Path, fmt.Errorf("not given to the gate"))
			continue
		case l.Err != nil:
			unread(f.Path, l.Err)
			continue
		}
		read := lockReaders[path.Base(normPath(f.Path))]
		head, err := read(l.Head)
		if err != nil {
			unread(f.Path, err)
			continue
		}
		before := map[string]bool{}
		if l.Base != nil {
			// A base the reader cannot read pins nothing it knows of: every package at
			// the head is then new, which asks OSV more, never less.
			old, _ := read(l.Base)
			for _, p := range old {
				before[p.eco+"\x00"+p.name+"\x00"+p.version] = true
			}
		}
		for _, p := range head {
			if !before[p.eco+"\x00"+p.name+"\x00"+p.version] {
				deps = append(deps, Dependency{Ecosystem: p.eco, Name: p.name, Version: p.version, File: f.Path, Line: p.line})
			}
		}
	}
	return deps, findings
}

// lineOf is the 1-based line of needle's first place in data; 0 when it is not there.
func lineOf(data []byte, needle string) int {
	i := bytes.Index(data, []byte(needle))
	if i < 0 {
		return 0
	}
	return bytes.Count(data[:i], []byte("\n")) + 1
}

// sortLocked orders a reader's packages by line, then name: a JSON or TOML reader
// gets them out of a map or in file order.
func sortLocked(ps []locked) []locked {
	sort.SliceStable(ps, func(i, j int) bool {
		if ps[i].line != ps[j].line {
			return ps[i].line < ps[j].line
		}
		return ps[i].name+ps[i].version < ps[j].name+ps[j].version
	})
	return ps
}

// npmV1 is lockfileVersion 1's nested dependencies.
type npmV1 struct {
	Version      string           `json:"version"`
	Dependencies map[string]npmV1 `json:"dependencies"`
}

// readNPMLock reads package-lock.json (lockfileVersion 2 and 3: "packages" keyed by
// their node_modules path; 1: nested "dependencies").
func readNPMLock(data []byte) ([]locked, error) {
	var doc struct {
		Packages map[string]struct {
			Version string `json:"version"`
			Link    bool   `json:"link"`
		} `json:"packages"`
		Dependencies map[string]npmV1 `json:"dependencies"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("not a package-lock.json: %w", err)
	}
	var out []locked
	if doc.Packages != nil {
		for key, p := range doc.Packages {
			i := strings.LastIndex(key, "node_modules/")
			if i < 0 || p.Link {
				// The root package or a workspace folder, or a link to one.
				continue
			}
			if v := lowest(p.Version); v != "" {
				out = append(out, locked{ecoNPM, key[i+len("node_modules/"):], v, lineOf(data, `"`+key+`"`)})
			}
		}
		return sortLocked(out), nil
	}
	var walk func(map[string]npmV1)
	walk = func(deps map[string]npmV1) {
		for name, d := range deps {
			if v := lowest(d.Version); v != "" {
				out = append(out, locked{ecoNPM, name, v, lineOf(data, `"`+name+`"`)})
			}
			walk(d.Dependencies)
		}
	}
	walk(doc.Dependencies)
	return sortLocked(out), nil
}

// readYarnLock reads yarn.lock, classic (`"a@^1.0.0", a@^1.1:` then `version "1.2.3"`)
// and Berry (`"a@npm:^1.0.0":` then `version: 1.2.3`). Workspace, link, portal, file
// and patch entries name no registry version.
func readYarnLock(data []byte) ([]locked, error) {
	var out []locked
	name := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		t := strings.TrimSpace(l)
		switch {
		case t == "" || strings.HasPrefix(t, "#"):
		case l[0] != ' ' && l[0] != '\t':
			name = ""
			if !strings.HasSuffix(t, ":") {
				return nil, fmt.Errorf("line %d is not an entry of yarn.lock", n)
			}
			spec, _, _ := strings.Cut(strings.TrimSuffix(t, ":"), ",")
			spec = strings.Trim(strings.TrimSpace(spec), `"`)
			if i := strings.LastIndex(spec, "@"); i > 0 && !strings.ContainsAny(spec[i:], "#") &&
				!hasAnyPrefix(spec[i+1:], "workspace:", "link:", "portal:", "file:", "patch:", "git", "http", "exec:") {
				name = spec[:i]
			}
		case name != "" && (strings.HasPrefix(t, "version ") || strings.HasPrefix(t, "version:")):
			v := strings.Trim(strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(t, "version"), ":")), `"'`)
			if v = lowest(v); v != "" {
				out = append(out, locked{ecoNPM, name, v, n})
			}
			name = ""
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("failed to read yarn.lock: %w", err)
	}
	return out, nil
}

func hasAnyPrefix(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// readPNPMLock reads pnpm-lock.yaml's packages: keys `/name/1.2.3_peer` (lockfile 5),
// `/name@1.2.3(peer)` (6) and `name@1.2.3` (9).
func readPNPMLock(data []byte) ([]locked, error) {
	var doc struct {
		LockfileVersion any            `yaml:"lockfileVersion"`
		Packages        map[string]any `yaml:"packages"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("not a pnpm-lock.yaml: %w", err)
	}
	// Before lockfile 6 a key's version follows a slash, and a peer's suffix an
	// underscore (which may hold an @ of its own).
	v5 := strings.HasPrefix(strings.TrimSpace(fmt.Sprint(doc.LockfileVersion)), "5")
	var out []locked
	for key := range doc.Packages {
		k, _, _ := strings.Cut(strings.TrimPrefix(key, "/"), "(")
		var name, v string
		if i := strings.LastIndex(k, "/"); v5 && i > 0 {
			name, v = k[:i], k[i+1:]
			v, _, _ = strings.Cut(v, "_")
		} else if i := strings.LastIndex(k, "@"); !v5 && i > 0 {
			name, v = k[:i], k[i+1:]
		}
		if strings.Contains(name, ":") || strings.Contains(v, ":") {
			// A tarball or git source: no registry version to ask about.
			continue
		}
		if v = lowest(v); name != "" && v != "" {
			line := lineOf(data, key+":")
			if line == 0 {
				// A quoted key ('@scope/p@1.0.0':).
				line = lineOf(data, key)
			}
			out = append(out, locked{ecoNPM, name, v, line})
		}
	}
	return sortLocked(out), nil
}

// tomlPackage is a [[package]] of Cargo.lock, poetry.lock or uv.lock.
type tomlPackage struct {
	Name    string `toml:"name"`
	Version string `toml:"version"`
	// Source is Cargo's string ("registry+…", "sparse+…", "git+…"), poetry's table
	// (type = "git", …) or uv's (registry = "…", git = "…", editable = "…").
	Source any `toml:"source"`
}

func readTOMLLock(data []byte, file string) ([]tomlPackage, error) {
	var doc struct {
		Package []tomlPackage `toml:"package"`
	}
	if _, err := toml.Decode(string(data), &doc); err != nil {
		return nil, fmt.Errorf("not a %s: %w", file, err)
	}
	return doc.Package, nil
}

// readCargoLock reads Cargo.lock: the packages from a registry (the workspace's own
// crates have no source; a git source has no registry version).
func readCargoLock(data []byte) ([]locked, error) {
	pkgs, err := readTOMLLock(data, "Cargo.lock")
	if err != nil {
		return nil, err
	}
	var out []locked
	for _, p := range pkgs {
		if s, _ := p.Source.(string); hasAnyPrefix(s, "registry+", "sparse+") && lowest(p.Version) != "" {
			out = append(out, locked{ecoCrate, p.Name, lowest(p.Version), lineOf(data, `name = "`+p.Name+`"`)})
		}
	}
	return out, nil
}

// readPoetryLock reads poetry.lock: every package but those from git, a folder, a file
// or a URL.
func readPoetryLock(data []byte) ([]locked, error) {
	pkgs, err := readTOMLLock(data, "poetry.lock")
	if err != nil {
		return nil, err
	}
	var out []locked
	for _, p := range pkgs {
		src, _ := p.Source.(map[string]any)
		switch t, _ := src["type"].(string); t {
		case "git", "directory", "file", "url":
			continue
		}
		if v := lowest(p.Version); v != "" {
			out = append(out, locked{ecoPyPI, p.Name, v, lineOf(data, `name = "`+p.Name+`"`)})
		}
	}
	return out, nil
}

// readUVLock reads uv.lock: the packages from a registry.
func readUVLock(data []byte) ([]locked, error) {
	pkgs, err := readTOMLLock(data, "uv.lock")
	if err != nil {
		return nil, err
	}
	var out []locked
	for _, p := range pkgs {
		src, _ := p.Source.(map[string]any)
		if _, ok := src["registry"]; ok && lowest(p.Version) != "" {
			out = append(out, locked{ecoPyPI, p.Name, lowest(p.Version), lineOf(data, `name = "`+p.Name+`"`)})
		}
	}
	return out, nil
}

// readGoSum reads go.sum: the modules whose code is summed (a "/go.mod" line sums only
// a module's go.mod, which builds nothing).
func readGoSum(data []byte) ([]locked, error) {
	var out []locked
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 0:
		case len(f) != 3 || !strings.HasPrefix(f[1], "v"):
			return nil, fmt.Errorf("line %d is not a line of go.sum", n)
		case !strings.HasSuffix(f[1], "/go.mod"):
			out = append(out, locked{ecoGo, f[0], f[1], n})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("failed to read go.sum: %w", err)
	}
	return out, nil
}
