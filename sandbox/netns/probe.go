package netns

import (
	"errors"
	"fmt"
	"net/netip"
	"runtime"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// ProbeResult says which of the things Create needs this process can do here.
type ProbeResult struct {
	// Namespace is nil when a new network namespace could be made.
	Namespace error
	// TAP is nil when a TAP device could be created in it.
	TAP error
	// Firewall is nil when a run's nftables table (NAT, masquerade, reject, conntrack)
	// could be installed in it.
	Firewall error
}

// errNotTried marks a step the probe could not reach because an earlier one failed.
var errNotTried = errors.New("not tried: no network namespace to try it in")

// Probe checks, without touching the host's own network, that Create can work here: it
// makes an unnamed network namespace on a thread of its own, creates the run's TAP
// device in it and installs a run's nftables table with the same code Create uses. The
// namespace, and everything in it, goes with the thread when the probe returns.
func Probe() ProbeResult {
	done := make(chan ProbeResult, 1)
	go func() {
		// Never unlocked: the thread, inside the throwaway namespace, exits with the
		// goroutine and takes the namespace with it.
		runtime.LockOSThread()
		var r ProbeResult
		ns, err := netns.New()
		if err != nil {
			r.Namespace = fmt.Errorf("failed to create a network namespace: %w", err)
			r.TAP, r.Firewall = errNotTried, errNotTried
			done <- r
			return
		}
		ns.Close()
		if h, err := netlink.NewHandle(); err != nil {
			r.TAP = fmt.Errorf("failed to open netlink in the namespace: %w", err)
		} else {
			if tap, err := addTAP(h); err != nil {
				r.TAP = err
			} else {
				tap.Close()
			}
			h.Close()
		}
		// A documentation address (RFC 5737) stands in for the run's proxy.
		r.Firewall = applyFirewall(netip.MustParseAddr("192.0.2.1"), ProxyPort)
		done <- r
	}()
	return <-done
}
