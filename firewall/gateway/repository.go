package gateway

import (
	"fmt"
)

// The installation token reads every public repository, forks included, and the API
// answers with other users' and organisations' profiles and repository lists: all text
// and code strangers write. So the GitHub API gateway serves only the run's own
// repository (Config.Repository, and /repositories/{id} for Config.RepositoryID), and
// outside any repository only the few global reads below, which carry nobody's text.
// It is checked after the refusal table (hostonly.go), which names what it refuses more
// narrowly, and before the rules: "* /**" means "every read the table allows, of the
// run's repository".

// globalReads are the first path segments, outside /repos/, that the API gateway
// forwards at all: the caller's rate limit, GitHub's own metadata, and the license,
// .gitignore and code-of-conduct templates GitHub maintains.
var globalReads = map[string]bool{
	"rate_limit": true, "meta": true, "versions": true, "zen": true, "octocat": true, "emojis": true,
	"licenses": true, "gitignore": true, "codes_of_conduct": true,
}

// repositoryScope says why path (escaped, below /api/github) is outside what the API
// gateway serves, naming the refusal, or returns "", "" when it is the run's repository
// or a global read.
func (g *Gateway) repositoryScope(path string) (name, why string) {
	segs := baseSegments(path)
	run := g.owner + "/" + g.repo
	switch {
	case segs[0] == "repos":
		if len(segs) >= 3 && segs[1] == g.owner && segs[2] == g.repo {
			return "", ""
		}
		return "other-repository", fmt.Sprintf("the API gateway serves only the run's repository, %s: another repository (a stranger's fork, any public one) is code and text strangers write", run)
	case segs[0] == "repositories":
		if g.repoID != "" && len(segs) >= 2 && segs[1] == g.repoID {
			return "", ""
		}
		if g.repoID == "" {
			return "other-repository", fmt.Sprintf("the API gateway serves only the run's repository, %s, by name: its numeric id is not configured (gateways.repository_id), so no /repositories/{id} path is served", run)
		}
		return "other-repository", fmt.Sprintf("the API gateway serves only the run's repository, %s (id %s): another repository (a stranger's fork, any public one) is code and text strangers write", run, g.repoID)
	case globalReads[segs[0]]:
		return "", ""
	}
	return "outside-the-repository", fmt.Sprintf("the API gateway serves only the run's repository, %s (/repos/%s/…), and GitHub's own metadata (/rate_limit, /meta, license and .gitignore templates); users, organisations and everything else are other people's text", run, run)
}
