package policycache

import (
	"fmt"
	"testing"
	"time"

	"github.com/bumperdev/bumper/internal/repoconfig"
)

func TestPolicies(t *testing.T) {
	const commit = "0123456789abcdef0123456789abcdef01234567"
	var c Policies
	p := repoconfig.Default()
	p.Paused = true
	c.Put("Owner/Repo", commit, p)
	c.Put("owner/repo", "main", p)
	c.Put("owner/repo", "", p)
	tests := []struct {
		name, repo, ref string
		want            bool
	}{
		{"the commit, any case of the repository", "owner/REPO", commit, true},
		{"another repository", "owner/other", commit, false},
		{"a branch is never cached", "owner/repo", "main", false},
		{"nor the default branch", "owner/repo", "", false},
	}
	for _, tt := range tests {
		got, ok := c.Get(tt.repo, tt.ref)
		if ok != tt.want || ok && !got.Paused {
			t.Errorf("%s: Get = %+v, %v; want found %v", tt.name, got, ok, tt.want)
		}
	}
	t.Run("full, it starts over", func(t *testing.T) {
		var c Policies
		for i := range maxPolicies + 1 {
			c.Put("owner/repo", fmt.Sprintf("%040x", i), p)
		}
		if n := len(c.m); n != 1 {
			t.Fatalf("the cache holds %d policies past %d, want 1: it starts over", n, maxPolicies)
		}
	})
}

func TestPauses(t *testing.T) {
	t0 := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	var c Pauses
	c.Put("o/paused", true, t0)
	c.Put("o/open", false, t0)
	tests := []struct {
		name, repo   string
		at           time.Duration
		paused, fast bool
	}{
		{"paused, just read", "o/paused", 0, true, true},
		{"not paused, just read", "o/open", PauseTTL - time.Nanosecond, false, true},
		{"read a PauseTTL ago: read it again", "o/paused", PauseTTL, false, false},
		{"never read", "o/other", 0, false, false},
	}
	for _, tt := range tests {
		paused, ok := c.Get(tt.repo, t0.Add(tt.at))
		if paused != tt.paused || ok != tt.fast {
			t.Errorf("%s: Get = %v, %v; want %v, %v", tt.name, paused, ok, tt.paused, tt.fast)
		}
	}
}
