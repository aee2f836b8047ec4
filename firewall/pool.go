package firewall

import (
	"bufio"
	"net"
	"net/netip"
	"sync"
	"time"
)

// upConn is a pooled upstream connection for plain HTTP.
type upConn struct {
	c    *net.TCPConn
	br   *bufio.Reader
	bw   *bufio.Writer
	addr netip.AddrPort
	idle time.Time
}

// maxIdlePerAddr bounds idle connections kept per upstream address.
const maxIdlePerAddr = 64

// pool keeps idle upstream connections keyed by the address dialed, so a reused
// connection always leads where the policy allowed.
type pool struct {
	idleTimeout time.Duration
	mu          sync.Mutex
	idle        map[netip.AddrPort][]*upConn
	closed      bool
}

func newPool(idleTimeout time.Duration) *pool {
	return &pool{idleTimeout: idleTimeout, idle: map[netip.AddrPort][]*upConn{}}
}

// get returns an idle connection to one of addrs, newest first, dropping stale ones.
func (p *pool) get(addrs []netip.AddrPort) *upConn {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, a := range addrs {
		list := p.idle[a]
		for len(list) > 0 {
			u := list[len(list)-1]
			list = list[:len(list)-1]
			if now.Sub(u.idle) < p.idleTimeout/2 {
				p.idle[a] = list
				return u
			}
			u.c.Close()
		}
		delete(p.idle, a)
	}
	return nil
}

func (p *pool) put(u *upConn) {
	u.idle = time.Now()
	p.mu.Lock()
	if p.closed || len(p.idle[u.addr]) >= maxIdlePerAddr {
		p.mu.Unlock()
		u.c.Close()
		return
	}
	p.idle[u.addr] = append(p.idle[u.addr], u)
	p.mu.Unlock()
}

func (p *pool) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for a, list := range p.idle {
		for _, u := range list {
			u.c.Close()
		}
		delete(p.idle, a)
	}
}
