package gateway

import (
	"fmt"
	"slices"
	"strings"
)

// MaxDependencies bounds Config.Dependencies, as .github/bumper.yml bounds its list.
const MaxDependencies = 20

// setDependencies checks and keeps the dependency repositories: each owner/name, once,
// not the run's own (its token would then have a second one beside it), with a token,
// on a git gateway.
func (g *Gateway) setDependencies(deps []string, token string) error {
	if len(deps) == 0 {
		return nil
	}
	switch {
	case g.git == nil:
		return fmt.Errorf("failed to configure gateway git: dependencies %v are set but the git gateway is off (no git base URL)", deps)
	case token == "":
		return fmt.Errorf("failed to configure gateway git: dependencies %v are set but no dependency token", deps)
	case token == g.cfg.Token:
		// Fail closed: the run's token reaches its repository with write; a dependency
		// must be read with the token minted for it alone.
		return fmt.Errorf("failed to configure gateway git: the dependency token is the run's token")
	case len(deps) > MaxDependencies:
		return fmt.Errorf("failed to configure gateway git: %d dependencies; at most %d", len(deps), MaxDependencies)
	}
	g.deps = map[string]string{}
	for _, d := range deps {
		owner, name, ok := strings.Cut(d, "/")
		if !ok || !validName(owner) || !validName(name) || strings.HasSuffix(strings.ToLower(name), ".git") {
			return fmt.Errorf("failed to configure gateway git: dependency %q is not owner/name", d)
		}
		key := strings.ToLower(d)
		if strings.ToLower(owner) == g.owner && strings.ToLower(name) == g.repo {
			return fmt.Errorf("failed to configure gateway git: dependency %s is the run's own repository", d)
		}
		if _, dup := g.deps[key]; dup {
			return fmt.Errorf("failed to configure gateway git: dependency %s is listed twice", d)
		}
		g.deps[key] = d
	}
	return nil
}

// dependency is the configured name of the dependency owner/name names, compared
// case-insensitively as GitHub does, and whether it is one.
func (g *Gateway) dependency(owner, name string) (string, bool) {
	d, ok := g.deps[strings.ToLower(owner+"/"+name)]
	return d, ok
}

// dependencyList says, for a refusal, which dependencies the gateway also serves.
func (g *Gateway) dependencyList() string {
	if len(g.deps) == 0 {
		return ""
	}
	names := make([]string, 0, len(g.deps))
	for _, d := range g.deps {
		names = append(names, d)
	}
	slices.Sort(names)
	return ", and for fetching its dependencies " + strings.Join(names, ", ") + " (.github/bumper.yml dependencies.repositories)"
}
