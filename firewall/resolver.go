package firewall

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"
)

// Resolver looks up the addresses of a name. *net.Resolver satisfies it; tests inject
// their own answers.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// cachingResolver keeps answers for a short time so a busy client does not cost a lookup
// per request. The cached addresses are still filtered on every use.
type cachingResolver struct {
	next Resolver
	ttl  time.Duration

	mu      sync.Mutex
	entries map[string]cacheEntry
}

type cacheEntry struct {
	addrs   []netip.Addr
	expires time.Time
}

// maxCacheEntries bounds the cache against a client that asks for many names.
const maxCacheEntries = 4096

func newCachingResolver(next Resolver, ttl time.Duration) *cachingResolver {
	return &cachingResolver{next: next, ttl: ttl, entries: map[string]cacheEntry{}}
}

func (c *cachingResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	now := time.Now()
	c.mu.Lock()
	e, ok := c.entries[host]
	c.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.addrs, nil
	}
	addrs, err := c.next.LookupNetIP(ctx, network, host)
	if err != nil {
		return nil, fmt.Errorf("failed to resolve %s: %w", host, err)
	}
	c.mu.Lock()
	if len(c.entries) >= maxCacheEntries {
		clear(c.entries)
	}
	c.entries[host] = cacheEntry{addrs: addrs, expires: now.Add(c.ttl)}
	c.mu.Unlock()
	return addrs, nil
}

// NetResolver returns the system resolver (pure Go, so /etc/hosts and resolv.conf are read
// the same way everywhere).
func NetResolver() Resolver {
	return &net.Resolver{PreferGo: true}
}
