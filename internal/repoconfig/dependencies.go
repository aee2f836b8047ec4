package repoconfig

import (
	"fmt"
	"regexp"
	"strings"
)

// MaxDependencies bounds dependencies.repositories: each is one repository a run may
// read besides its own, and the list is one installation token's scope.
const MaxDependencies = 20

// Dependencies are other repositories of the run's owner the run may read (issue #26):
// the App mints a second installation token, contents: read and scoped to exactly
// these, and the firewall's git gateway serves them for fetching only.
type Dependencies struct {
	// Repositories are "owner/name", each once; no wildcard, never the run's own.
	Repositories []string `yaml:"repositories"`
}

// Dependency repository names as GitHub spells them: an owner of letters, digits and
// inner hyphens (at most 39), a name of letters, digits, '.', '_' and '-' (at most 100).
var (
	ownerName = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,37}[A-Za-z0-9])?$`)
	repoName  = regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`)
)

// check refuses a list the App could not mint a token for exactly: a malformed name, a
// pattern, a duplicate (GitHub compares names case-insensitively) or too many.
func (d Dependencies) check() error {
	if len(d.Repositories) > MaxDependencies {
		return fmt.Errorf("%s: dependencies.repositories lists %d repositories; at most %d are allowed", Path, len(d.Repositories), MaxDependencies)
	}
	seen := map[string]bool{}
	for i, r := range d.Repositories {
		field := fmt.Sprintf("dependencies.repositories[%d] %q", i, r)
		if strings.ContainsAny(r, "*?[") {
			// Fail closed: a pattern would grant repositories created after approval.
			return fmt.Errorf("%s: %s is a pattern; name each repository exactly (owner/name)", Path, field)
		}
		owner, name, ok := strings.Cut(r, "/")
		switch {
		case !ok || !ownerName.MatchString(owner) || !repoName.MatchString(name):
			return fmt.Errorf("%s: %s is not owner/name (e.g. acme/lib)", Path, field)
		case name == "." || name == "..":
			return fmt.Errorf("%s: %s is not a repository's name", Path, field)
		case strings.HasSuffix(strings.ToLower(name), ".git"):
			return fmt.Errorf("%s: %s ends in .git; name the repository without it (%s/%s)", Path, field, owner, name[:len(name)-4])
		}
		key := strings.ToLower(r)
		if seen[key] {
			return fmt.Errorf("%s: %s is listed twice (GitHub's names ignore case)", Path, field)
		}
		seen[key] = true
	}
	return nil
}

// DependenciesOf returns the dependency repositories of a run of repo, or an error
// saying what to change when the list names repo itself (the run's own token reads it;
// listing it would give the agent a second credential for it) or a repository of
// another owner (one installation token reaches one account's repositories only). The
// App refuses such a run at its token exchange, and the runner refuses such a grant.
func (p Config) DependenciesOf(repo string) ([]string, error) {
	owner, _, _ := strings.Cut(repo, "/")
	var out []string
	for _, r := range p.Dependencies.Repositories {
		o, _, _ := strings.Cut(r, "/")
		switch {
		case strings.EqualFold(r, repo):
			return nil, fmt.Errorf("%s: dependencies.repositories names %s, the run's own repository; remove it (the run reads its own repository already)", Path, r)
		case !strings.EqualFold(o, owner):
			return nil, fmt.Errorf("%s: dependencies.repositories names %s, which is not %s's; a run reads dependencies of its own owner only, where the App's installation is", Path, r, owner)
		}
		out = append(out, r)
	}
	return out, nil
}

// ValidOwner reports whether s is an account's login as GitHub allows it.
func ValidOwner(s string) bool { return ownerName.MatchString(s) }

// ValidRepoName reports whether s is a repository's name (without its owner) as GitHub
// allows it: letters, digits, '.', '_', '-', at most 100, not "." or "..".
func ValidRepoName(s string) bool { return s != "." && s != ".." && repoName.MatchString(s) }
