// Package risk flags the changed files of a run that govern the checks a reviewer
// relies on (tests and their data, test runner and linter configuration, CI workflows
// and scripts, build files, CODEOWNERS, repository settings, .github/bumper.yml), each
// with why it matters: the evidence bundle's risk note (action/evidence), which
// evidencemd shows in the summary.
package risk

import (
	"path"
	"regexp"
	"slices"
	"strings"
)

// Category is the kind of check a changed file governs (the evidence schema's
// risk_flag category).
type Category string

// The categories.
const (
	Tests        Category = "tests"
	TestConfig   Category = "test-config"
	CIWorkflow   Category = "ci-workflow"
	CIConfig     Category = "ci-config"
	BumperPolicy Category = "bumper-policy"
	Codeowners   Category = "codeowners"
	Build        Category = "build"
	LintConfig   Category = "lint-config"
	RepoSettings Category = "repo-settings"
)

// Flag is a changed file that governs the checks a reviewer relies on, and why it
// matters.
type Flag struct {
	Path     string   `json:"path"`
	Category Category `json:"category"`
	Reason   string   `json:"reason"`
}

// rule flags a path when match says so; the first matching rule wins.
type rule struct {
	category Category
	reason   string
	match    func(p pathParts) bool
}

// pathParts is a cleaned path in lower case, split for the rules.
type pathParts struct {
	full string   // a/b/c.go
	dirs []string // a, b
	base string   // c.go
	name string   // the base name as written
}

func (p pathParts) under(prefix string) bool { return strings.HasPrefix(p.full, prefix) }

func (p pathParts) inDir(names ...string) bool {
	for _, d := range p.dirs {
		if slices.Contains(names, d) {
			return true
		}
	}
	return false
}

func (p pathParts) is(paths ...string) bool { return slices.Contains(paths, p.full) }

func baseMatches(re *regexp.Regexp) func(pathParts) bool {
	return func(p pathParts) bool { return re.MatchString(p.base) }
}

var (
	testFileName = regexp.MustCompile(`(_test\.(go|py|rb|exs|rs|c|cc|cpp)|^test_.*\.py|\.(test|spec)\.[cm]?[jt]sx?|_spec\.rb)$`)
	// testClass is matched on the name as written: FooTest.java, but not Latest.java.
	testClass  = regexp.MustCompile(`(^|[a-z0-9_])Tests?\.(java|kt|kts|cs|scala|swift|php)$`)
	lintConfig = regexp.MustCompile(`^(\.golangci\.(ya?ml|toml|json)|\.eslintrc(\..*)?|eslint\.config\.[cm]?[jt]s|\.pylintrc|pylintrc|\.?ruff\.toml|\.flake8|\.rubocop\.ya?ml|\.pre-commit-config\.ya?ml|staticcheck\.conf|\.semgrep\.ya?ml|\.clang-tidy)$`)
	testConfig = regexp.MustCompile(`^(pytest\.ini|conftest\.py|tox\.ini|noxfile\.py|\.coveragerc|\.?codecov\.ya?ml|phpunit\.xml(\.dist)?|\.mocharc(\..*)?|(jest|vitest|karma|playwright|cypress)\.conf(ig)?\.[cm]?[jt]s(on)?)$`)
	buildFile  = regexp.MustCompile(`^(makefile|gnumakefile|.*\.mk|taskfile\.ya?ml|justfile|magefile\.go|rakefile|build\.gradle(\.kts)?|cmakelists\.txt)$`)
	ciScript   = regexp.MustCompile(`^ci[._-]|^cibuild`)
)

// rules are checked in order.
var rules = []rule{
	{BumperPolicy, "Bumper's policy for this repository (allowlist, budget, verification commands, approvers): runs read it at their approved base, but once merged it governs every later run",
		func(p pathParts) bool { return p.is(".github/bumper.yml", ".github/bumper.yaml") }},
	{Codeowners, "CODEOWNERS decides who must review changes",
		func(p pathParts) bool { return p.is("codeowners", ".github/codeowners", "docs/codeowners") }},
	{RepoSettings, "repository settings applied from the repository (branch protection, required checks)",
		func(p pathParts) bool {
			return p.is(".github/settings.yml", ".github/settings.yaml") || p.under(".github/rulesets/")
		}},
	{CIWorkflow, "a GitHub Actions workflow: decides which checks run and with what permissions",
		func(p pathParts) bool { return p.under(".github/workflows/") }},
	{CIWorkflow, "a local action the workflows run",
		func(p pathParts) bool { return p.under(".github/actions/") }},
	{CIConfig, "CI configuration: decides which checks run",
		func(p pathParts) bool {
			return p.is(".gitlab-ci.yml", ".travis.yml", "azure-pipelines.yml", "jenkinsfile", ".drone.yml",
				"bitbucket-pipelines.yml", "appveyor.yml", ".woodpecker.yml", "cloudbuild.yaml") ||
				p.under(".circleci/") || p.under(".buildkite/") || p.under(".woodpecker/") ||
				p.under(".ci/") || p.under("ci/")
		}},
	{CIConfig, "a CI script: the checks run through it",
		func(p pathParts) bool {
			return (p.under("scripts/") || p.under("script/")) && ciScript.MatchString(p.base)
		}},
	{LintConfig, "linter configuration: decides what the linters check", baseMatches(lintConfig)},
	{TestConfig, "test runner configuration: decides which tests run and how", baseMatches(testConfig)},
	{Build, "a build file: the checks run through it", baseMatches(buildFile)},
	{Tests, "a test file: changes what the tests check",
		func(p pathParts) bool { return testFileName.MatchString(p.base) || testClass.MatchString(p.name) }},
	{Tests, "under a test directory: changes what the tests check or the data they check against",
		func(p pathParts) bool {
			return p.inDir("test", "tests", "spec", "specs", "__tests__", "__snapshots__", "testdata", "e2e")
		}},
}

// Note flags the changed files that govern the checks a reviewer relies on: tests
// and test data, test runner and linter configuration, CI workflows and scripts,
// Makefiles and other build files, CODEOWNERS, repository settings and
// .github/bumper.yml, each with the reason. Names are matched without regard to case;
// each path is flagged once, and the flags are sorted by path.
func Note(changedFiles []string) []Flag {
	var out []Flag
	seen := map[string]bool{}
	for _, f := range changedFiles {
		clean := cleanPath(f)
		if clean == "" || seen[clean] {
			continue
		}
		seen[clean] = true
		parts := splitPath(strings.ToLower(clean))
		parts.name = path.Base(clean)
		for _, r := range rules {
			if r.match(parts) {
				out = append(out, Flag{Path: clean, Category: r.category, Reason: r.reason})
				break
			}
		}
	}
	slices.SortFunc(out, func(a, b Flag) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// Known reports whether reason is one of Note's own reasons: text this package wrote,
// which a rendering may show as it is (any other reason a bundle holds is quoted).
func Known(reason string) bool {
	for _, r := range rules {
		if r.reason == reason {
			return true
		}
	}
	return false
}

// cleanPath is a repository path with forward slashes and no leading "/" or "./".
func cleanPath(p string) string {
	p = strings.ReplaceAll(p, `\`, "/")
	if p == "" {
		return ""
	}
	p = strings.TrimLeft(path.Clean("/"+p), "/")
	if p == "." {
		return ""
	}
	return p
}

func splitPath(p string) pathParts {
	dir, base := path.Split(p)
	var dirs []string
	if dir != "" {
		dirs = strings.Split(strings.TrimSuffix(dir, "/"), "/")
	}
	return pathParts{full: p, dirs: dirs, base: base}
}
