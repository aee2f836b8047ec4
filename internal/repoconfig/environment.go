package repoconfig

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/bumperdev/bumper/internal/hostpattern"
)

// AgentHome is the home directory of the VM's unprivileged user, the one the setup
// script and the agent run as (sandbox/image creates it, sandbox/guest sets HOME to it;
// sandbox/image's tests check that the three agree). cache_paths live under it.
const AgentHome = "/home/agent"

// Bounds of the environment section.
const (
	MaxEnvironmentPackages   = 100
	MaxEnvironmentInputs     = 50
	MaxEnvironmentAllow      = 50
	MaxEnvironmentCachePaths = 20
	// MaxEnvironmentPathBytes bounds one path or pattern of the section.
	MaxEnvironmentPathBytes = 1024
)

// Environment is a repository's toolchain: Debian packages and a setup script, built
// once into an image derived from the base image and addressed by the digest of its
// inputs (internal/environment computes it). Parse returns it normalised: paths
// cleaned, cache paths absolute under AgentHome, hosts lower-cased.
type Environment struct {
	// Packages are Debian package names installed into the image (no versions: the
	// base image's suite decides; pin a toolchain through the setup, e.g. GOTOOLCHAIN).
	Packages []string `yaml:"packages"`
	// Setup is a script in the repository, a relative path inside the tree, run once
	// with `sh` as the VM's unprivileged user at the base commit, in the workspace.
	Setup string `yaml:"setup"`
	// Inputs are files (paths, or patterns with *, ? and [...] inside one path
	// component) whose content is part of the environment's identity: what the setup
	// reads, such as go.sum or package-lock.json. The setup script always counts.
	Inputs []string `yaml:"inputs"`
	// Allow are the hosts the setup may reach, in the allowlist's syntax (name,
	// *.suffix or IP literal, optionally :port[,port]). The run's own allowlist is
	// separate: these hosts are open to the setup only.
	Allow []string `yaml:"allow"`
	// CachePaths are directories the setup fills that later runs reuse (the module
	// cache): absolute under AgentHome, written in the file as /home/agent/… or ~/….
	CachePaths []string `yaml:"cache_paths"`
}

// debianPackage is Debian policy's package name: lower-case letters, digits, '+', '-'
// and '.', at least two characters, starting with a letter or digit.
var debianPackage = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]+$`)

// pinned is the package name of an apt pin (name=version, name:arch, name/release),
// or "".
func pinned(p string) string {
	if i := strings.IndexAny(p, "=:/"); i > 0 && debianPackage.MatchString(p[:i]) {
		return p[:i]
	}
	return ""
}

// check validates the section and returns it normalised, naming every problem with
// what to write instead.
func (e Environment) check() (Environment, error) {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: environment."+format, append([]any{Path}, args...)...))
	}
	if len(e.Packages) == 0 && e.Setup == "" {
		bad("declares neither packages nor a setup script; add `packages: [golang-go]` or `setup: scripts/setup.sh`, or remove environment:")
	}
	if e.Setup == "" {
		for _, f := range []struct {
			name string
			n    int
		}{{"inputs", len(e.Inputs)}, {"allow", len(e.Allow)}, {"cache_paths", len(e.CachePaths)}} {
			if f.n > 0 {
				bad("%s is set but there is no setup script to use it; add `setup: scripts/setup.sh` or remove %s", f.name, f.name)
			}
		}
	}
	out := Environment{}

	if len(e.Packages) > MaxEnvironmentPackages {
		bad("packages lists %d packages; at most %d are allowed (a metapackage or the setup script can install the rest)", len(e.Packages), MaxEnvironmentPackages)
	}
	seen := map[string]bool{}
	for i, p := range e.Packages {
		switch {
		case pinned(p) != "":
			bad("packages[%d] %q pins a version, architecture or release; write the package name alone (%q): the base image's Debian suite decides the version", i, p, pinned(p))
		case !debianPackage.MatchString(p):
			bad("packages[%d] %q is not a Debian package name; use lower-case letters, digits, '+', '-' and '.', at least two characters, starting with a letter or digit (e.g. golang-go)", i, p)
		case seen[p]:
			bad("packages lists %q twice; remove one", p)
		}
		seen[p] = true
		out.Packages = append(out.Packages, p)
	}

	if e.Setup != "" {
		s, why := repoPath(e.Setup, false)
		if why != "" {
			bad("setup %q %s", e.Setup, why)
		}
		out.Setup = s
	}

	if len(e.Inputs) > MaxEnvironmentInputs {
		bad("inputs lists %d entries; at most %d are allowed (use a pattern such as cmd/*/go.sum)", len(e.Inputs), MaxEnvironmentInputs)
	}
	seenIn := map[string]bool{}
	for i, in := range e.Inputs {
		s, why := repoPath(in, true)
		switch {
		case why != "":
			bad("inputs[%d] %q %s", i, in, why)
		case seenIn[s]:
			bad("inputs lists %q twice; remove one", s)
		}
		seenIn[s] = true
		out.Inputs = append(out.Inputs, s)
	}

	if len(e.Allow) > MaxEnvironmentAllow {
		bad("allow lists %d hosts; at most %d are allowed (use a wildcard such as *.example.org)", len(e.Allow), MaxEnvironmentAllow)
	}
	for i, a := range e.Allow {
		h, err := hostpattern.Parse(a)
		if err != nil {
			bad("allow[%d] %q: %v; %s", i, a, err, hostFix(a))
		}
		out.Allow = append(out.Allow, h.String())
	}

	if len(e.CachePaths) > MaxEnvironmentCachePaths {
		bad("cache_paths lists %d directories; at most %d are allowed (a common parent such as ~/.cache counts as one)", len(e.CachePaths), MaxEnvironmentCachePaths)
	}
	seenCache := map[string]bool{}
	for i, c := range e.CachePaths {
		s, why := cachePath(c)
		switch {
		case why != "":
			bad("cache_paths[%d] %q %s", i, c, why)
		case seenCache[s]:
			bad("cache_paths lists %q twice (after ~ is expanded); remove one", s)
		}
		seenCache[s] = true
		out.CachePaths = append(out.CachePaths, s)
	}
	if err := errors.Join(errs...); err != nil {
		return Environment{}, err
	}
	return out, nil
}

// textProblem says why s cannot be a path of the file, or "".
func textProblem(s string) string {
	switch {
	case strings.TrimSpace(s) == "":
		return "is empty"
	case len(s) > MaxEnvironmentPathBytes:
		return fmt.Sprintf("is %d bytes; at most %d are allowed", len(s), MaxEnvironmentPathBytes)
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return "holds a control character (NUL, newline, tab…); write the path plainly"
	case strings.Contains(s, `\`):
		return "holds a backslash; separate directories with /"
	case s != strings.TrimSpace(s):
		return "has leading or trailing blanks; remove them"
	}
	return ""
}

// repoPath checks a path (or, with glob, a pattern) inside the repository's tree and
// returns it cleaned, or says why it is refused.
func repoPath(s string, glob bool) (string, string) {
	if why := textProblem(s); why != "" {
		return "", why
	}
	if strings.HasPrefix(s, "/") || strings.HasPrefix(s, "~") {
		return "", fmt.Sprintf("is not relative; write it from the repository's root, e.g. %q", strings.TrimLeft(strings.TrimPrefix(s, "~"), "/"))
	}
	if strings.HasSuffix(s, "/") {
		return "", "ends in /, naming a directory; name the files (e.g. dir/*.lock)"
	}
	for _, part := range strings.Split(s, "/") {
		switch {
		case part == "..":
			return "", "leaves the repository's tree with ..; write a path inside it, from its root"
		case strings.EqualFold(part, ".git"):
			return "", "names git's own directory; name files of the repository's tree"
		case !glob && strings.ContainsAny(part, "*?["):
			return "", "holds a pattern character (*, ? or [); the setup is one file: name it exactly"
		case glob && strings.Contains(part, "**"):
			return "", "uses **, which is not supported; use * within one directory level (e.g. cmd/*/go.sum), or list the files"
		}
	}
	c := path.Clean(s)
	if c == "." {
		return "", "names the repository's root; name a file"
	}
	if glob {
		if _, err := path.Match(c, ""); err != nil {
			return "", "is not a valid pattern (an unclosed [ or a trailing \\); use *, ? and [...] within one path component"
		}
	}
	return c, ""
}

// cachePath checks a cache directory and returns it absolute under AgentHome.
func cachePath(s string) (string, string) {
	if why := textProblem(s); why != "" {
		return "", why
	}
	p := s
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		p = AgentHome + strings.TrimPrefix(p, "~")
	case strings.HasPrefix(p, "~"):
		return "", fmt.Sprintf("names another user's home; write ~/… or %s/… (the VM's user is agent)", AgentHome)
	case !strings.HasPrefix(p, "/"):
		return "", fmt.Sprintf("is relative; write ~/%s or %s/%s: cache paths live in the VM user's home", s, AgentHome, s)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." || part == "." {
			return "", "holds a . or .. component; write the directory plainly, e.g. ~/go/pkg/mod"
		}
	}
	p = path.Clean(p)
	if !strings.HasPrefix(p, AgentHome+"/") {
		if p == AgentHome {
			return "", "is the whole home directory; name the directories the setup fills, e.g. ~/.cache/go-build"
		}
		return "", fmt.Sprintf("is outside %s; cache paths live in the VM user's home: write ~/… (e.g. ~/.npm)", AgentHome)
	}
	return p, ""
}

// hostFix says how to write an allowlist entry that did not parse.
func hostFix(s string) string {
	if _, rest, ok := strings.Cut(s, "://"); ok {
		host, _, _ := strings.Cut(rest, "/")
		return fmt.Sprintf("write the host alone, without a scheme or path (%q)", host)
	}
	return "write a host name (proxy.golang.org), a *.suffix or an IP address, optionally with :port"
}
