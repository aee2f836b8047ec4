package render

import (
	"context"
	"sync"

	"github.com/bumperdev/bumper/ghemu/gitserver"
	"github.com/bumperdev/bumper/ghemu/state"
)

// Commits is what git says of commits, cached by repository and SHA: commits never
// change, and rendering a list of workflow runs or check runs would otherwise start one
// git process per item. Its lock guards the cache only; git runs without it.
type Commits struct {
	git *gitserver.Server
	mu  sync.Mutex
	m   map[string]*gitserver.CommitInfo
}

// NewCommits is an empty cache in front of git.
func NewCommits(git *gitserver.Server) *Commits {
	return &Commits{git: git, m: map[string]*gitserver.CommitInfo{}}
}

// Get returns what git says of a commit of rp: rev is a SHA, or a ref for a commit not
// yet cached (only full SHAs are cached). Callers may hold the state lock (Get never
// takes it); they read rp's owner and name, so they do.
func (c *Commits) Get(ctx context.Context, rp *state.Repo, rev string) (*gitserver.CommitInfo, error) {
	k := state.Key(rp.FullName()) + "@" + rev
	c.mu.Lock()
	ci, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return ci, nil
	}
	ci, err := c.git.Commit(ctx, rp.Owner, rp.Name, rev)
	if err != nil {
		return nil, err
	}
	if IsSHA(rev) {
		c.mu.Lock()
		c.m[k] = ci
		c.mu.Unlock()
	}
	return ci, nil
}

// IsSHA reports whether s is a full object name (SHA-1 or SHA-256, lower-case hex).
func IsSHA(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
