// Package policycache is what serve remembers of repositories' .github/bumper.yml between
// reads: the policy at a commit, which never changes (an approval's policy is read at its
// base commit several times), and each repository's paused flag, which a run's
// should-stop poll, every few seconds from every run, trusts for a minute. Both are safe
// for concurrent use, and their zero values are empty caches.
package policycache

import (
	"strings"
	"sync"
	"time"

	"github.com/bumperdev/bumper/internal/repoconfig"
	"github.com/bumperdev/bumper/internal/revision"
)

// maxPolicies bounds the policy cache; past it, the cache starts over.
const maxPolicies = 1024

// Policies caches policies by repository and commit. Only a full commit ID is cached: a
// branch or an empty ref (the default branch) moves.
type Policies struct {
	mu sync.Mutex
	m  map[string]repoconfig.Config
}

func policyKey(repo, ref string) string { return strings.ToLower(repo) + "@" + ref }

// Get returns the policy of repo at ref, when ref is a commit and it was Put.
func (c *Policies) Get(repo, ref string) (repoconfig.Config, bool) {
	if !revision.IsCommitID(ref) {
		return repoconfig.Config{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.m[policyKey(repo, ref)]
	return p, ok
}

// Put remembers p as the policy of repo at ref; it does nothing when ref is not a commit.
func (c *Policies) Put(repo, ref string, p repoconfig.Config) {
	if !revision.IsCommitID(ref) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxPolicies {
		c.m = map[string]repoconfig.Config{}
	}
	c.m[policyKey(repo, ref)] = p
}

// PauseTTL is how long a should-stop poll trusts the repository's paused flag it read:
// polls come every few seconds from every run, and a pause is seen within it.
const PauseTTL = time.Minute

type pause struct {
	paused bool
	at     time.Time
}

// Pauses remembers each repository's paused flag for should-stop polls.
type Pauses struct {
	mu sync.Mutex
	m  map[string]pause
}

// Put remembers repo's paused flag as read at at.
func (c *Pauses) Put(repo string, paused bool, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]pause{}
	}
	c.m[repo] = pause{paused: paused, at: at}
}

// Get returns repo's paused flag; ok is false when it was not read within PauseTTL
// before now, and must be read again.
func (c *Pauses) Get(repo string, now time.Time) (paused, ok bool) {
	c.mu.Lock()
	p, found := c.m[repo]
	c.mu.Unlock()
	if !found || now.Sub(p.at) >= PauseTTL {
		return false, false
	}
	return p.paused, true
}
