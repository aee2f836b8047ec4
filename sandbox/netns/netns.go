// Package netns builds a run's network: a named network namespace, a veth pair to the
// host, a TAP device for QEMU inside the namespace, and an nftables table that lets the
// guest reach exactly one host-side address and port (the proxy) and nothing else.
//
// The guest always sees the same addresses (guest 10.0.2.15/24, proxy 10.0.2.2:3128), so
// a VM snapshot stays valid across runs; the namespace maps them to the run's own: a DNAT
// sends 10.0.2.2:3128 to the proxy's listener on the host end of this run's veth, and a
// masquerade makes the traffic come from the namespace's end of it. Each run gets its
// own /30 out of 10.201.0.0/16, reserved by a lock file, so runs never collide.
package netns

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// Fixed addresses inside the namespace (guest side).
const (
	// TAPName is the TAP device inside every run's namespace.
	TAPName = "tap0"
	// PeerName is the namespace's end of the veth pair.
	PeerName = "veth0"
	// Gateway is the namespace's address on the TAP: the guest's gateway, where it dials
	// the proxy.
	Gateway = "10.0.2.2"
	// GatewayPrefix is Gateway with the TAP subnet's prefix length.
	GatewayPrefix = Gateway + "/24"
	// ProxyPort is the port the guest dials on the gateway to reach the proxy.
	ProxyPort = 3128
)

// pool is where each run's /30 link comes from: 16384 runs at once.
var pool = netip.MustParsePrefix("10.201.0.0/16")

// DefaultLeaseDir holds the address reservations of every run on the host.
const DefaultLeaseDir = "/run/bumper/net"

// Config says which run the network is for.
type Config struct {
	// ID names the run; it must be 1–8 characters of [a-z0-9] so interface names fit.
	ID string
	// StateDir is the run's state directory (default /run/bumper).
	StateDir string
	// LeaseDir holds the address reservations (default DefaultLeaseDir). It is one
	// directory for the whole host whatever StateDir says: two runs with different
	// state directories (a runner and a test, two tests) must never share an address,
	// or the second proxy cannot listen.
	LeaseDir string
}

// Net is one run's network. Close removes all of it.
type Net struct {
	// Name is the namespace's name (under /run/netns).
	Name string
	// HostVeth is the host end of the veth pair.
	HostVeth string
	// HostAddr is the host end's address: start the proxy's listener here.
	HostAddr netip.Addr
	// PeerAddr is the namespace end's address (the source the proxy sees).
	PeerAddr netip.Addr
	// TAP is the open TAP device to hand to QEMU; closing it (and QEMU's copy) removes
	// the device.
	TAP *os.File

	lease string
}

// Names returns the namespace and host veth names for a run ID.
func Names(id string) (ns, hostVeth string) { return "bumper-" + id, "bmp" + id + "h" }

func validID(id string) bool {
	if len(id) == 0 || len(id) > 8 {
		return false
	}
	for _, c := range id {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// Create builds the namespace, links, addresses and firewall for a run whose proxy will
// listen on HostAddr:proxyPort. On error nothing is left behind.
func Create(cfg Config, proxyPort int) (_ *Net, err error) {
	if !validID(cfg.ID) {
		return nil, fmt.Errorf("network ID %q must be 1-8 characters of a-z and 0-9", cfg.ID)
	}
	if proxyPort < 1 || proxyPort > 65535 {
		return nil, fmt.Errorf("proxy port %d out of range 1-65535", proxyPort)
	}
	if cfg.StateDir == "" {
		cfg.StateDir = "/run/bumper"
	}
	n := &Net{}
	n.Name, n.HostVeth = Names(cfg.ID)
	defer func() {
		if err != nil {
			err = errors.Join(err, n.Close())
		}
	}()
	if cfg.LeaseDir == "" {
		cfg.LeaseDir = DefaultLeaseDir
	}
	n.lease, n.HostAddr, n.PeerAddr, err = reserve(cfg.LeaseDir, cfg.ID)
	if err != nil {
		return n, err
	}
	if err := createNamespace(n.Name); err != nil {
		return n, err
	}
	ns, err := netns.GetFromName(n.Name)
	if err != nil {
		return n, fmt.Errorf("failed to open namespace %s: %w", n.Name, err)
	}
	defer ns.Close()
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: n.HostVeth}, PeerName: PeerName, PeerNamespace: netlink.NsFd(ns)}
	if err := netlink.LinkAdd(veth); err != nil {
		return n, fmt.Errorf("failed to create veth %s: %w", n.HostVeth, err)
	}
	host, err := netlink.LinkByName(n.HostVeth)
	if err != nil {
		return n, fmt.Errorf("failed to find veth %s: %w", n.HostVeth, err)
	}
	if err := netlink.AddrAdd(host, &netlink.Addr{IPNet: ipNet(n.HostAddr, 30)}); err != nil {
		return n, fmt.Errorf("failed to address %s: %w", n.HostVeth, err)
	}
	if err := netlink.LinkSetUp(host); err != nil {
		return n, fmt.Errorf("failed to bring up %s: %w", n.HostVeth, err)
	}
	if err := inNamespace(ns, func() error { return n.setupInside(proxyPort) }); err != nil {
		return n, err
	}
	return n, nil
}

// addTAP creates the run's TAP device in h's namespace and returns its open queue. The
// device goes when the last descriptor of it closes.
func addTAP(h *netlink.Handle) (*os.File, error) {
	tap := &netlink.Tuntap{
		LinkAttrs:  netlink.LinkAttrs{Name: TAPName},
		Mode:       netlink.TUNTAP_MODE_TAP,
		Flags:      netlink.TUNTAP_NO_PI | netlink.TUNTAP_VNET_HDR,
		Queues:     1,
		NonPersist: true,
	}
	if err := h.LinkAdd(tap); err != nil {
		return nil, fmt.Errorf("failed to create the TAP device: %w", err)
	}
	return tap.Fds[0], nil
}

// ProxyListenAddr is where the run's proxy must listen.
func (n *Net) ProxyListenAddr(port int) string {
	return net.JoinHostPort(n.HostAddr.String(), strconv.Itoa(port))
}

// setupInside runs on a thread inside the namespace.
func (n *Net) setupInside(proxyPort int) error {
	for _, s := range []struct{ path, value string }{
		{"/proc/sys/net/ipv4/ip_forward", "1"},
		{"/proc/sys/net/ipv6/conf/all/disable_ipv6", "1"},
		{"/proc/sys/net/ipv6/conf/default/disable_ipv6", "1"},
	} {
		if err := os.WriteFile(s.path, []byte(s.value), 0o644); err != nil {
			return fmt.Errorf("failed to set %s in the run namespace: %w", s.path, err)
		}
	}
	h, err := netlink.NewHandle()
	if err != nil {
		return fmt.Errorf("failed to open netlink in the run namespace: %w", err)
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("failed to find lo in the run namespace: %w", err)
	}
	if err := h.LinkSetUp(lo); err != nil {
		return fmt.Errorf("failed to bring up lo: %w", err)
	}
	peer, err := h.LinkByName(PeerName)
	if err != nil {
		return fmt.Errorf("failed to find %s in the run namespace: %w", PeerName, err)
	}
	if err := h.AddrAdd(peer, &netlink.Addr{IPNet: ipNet(n.PeerAddr, 30)}); err != nil {
		return fmt.Errorf("failed to address %s: %w", PeerName, err)
	}
	if err := h.LinkSetUp(peer); err != nil {
		return fmt.Errorf("failed to bring up %s: %w", PeerName, err)
	}
	tap, err := addTAP(h)
	if err != nil {
		return err
	}
	n.TAP = tap
	tl, err := h.LinkByName(TAPName)
	if err != nil {
		return fmt.Errorf("failed to find %s: %w", TAPName, err)
	}
	gw, err := netlink.ParseAddr(GatewayPrefix)
	if err != nil {
		return fmt.Errorf("failed to parse %s: %w", GatewayPrefix, err)
	}
	if err := h.AddrAdd(tl, gw); err != nil {
		return fmt.Errorf("failed to address %s: %w", TAPName, err)
	}
	if err := h.LinkSetUp(tl); err != nil {
		return fmt.Errorf("failed to bring up %s: %w", TAPName, err)
	}
	return applyFirewall(n.HostAddr, proxyPort)
}

// Close removes the namespace (and with it the veth pair and TAP), and the address
// reservation. It is safe to call on a partly built Net and more than once.
func (n *Net) Close() error {
	var errs []error
	if n.TAP != nil {
		if err := n.TAP.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
			errs = append(errs, fmt.Errorf("failed to close the TAP: %w", err))
		}
	}
	if err := Remove(n.Name, n.HostVeth); err != nil {
		errs = append(errs, err)
	}
	if n.lease != "" {
		// Forget the lease once it is gone: another run may take the same number at once,
		// and a second Close must not release that run's lease.
		if err := os.Remove(n.lease); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("failed to release the address lease: %w", err))
		} else {
			n.lease = ""
		}
	}
	return errors.Join(errs...)
}

// Remove deletes a run's namespace and host veth by name, ignoring what is already gone.
// The reaper uses it for runs whose owner died.
func Remove(name, hostVeth string) error {
	var errs []error
	if l, err := netlink.LinkByName(hostVeth); hostVeth != "" && err == nil {
		if err := netlink.LinkDel(l); err != nil {
			errs = append(errs, fmt.Errorf("failed to delete veth %s: %w", hostVeth, err))
		}
	}
	if _, err := os.Stat(filepath.Join("/run/netns", name)); name != "" && err == nil {
		if err := netns.DeleteNamed(name); err != nil {
			errs = append(errs, fmt.Errorf("failed to delete namespace %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// createNamespace makes a named namespace from a locked thread that is thrown away after,
// so no goroutine ever runs in the wrong namespace.
func createNamespace(name string) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		ns, err := netns.NewNamed(name)
		if err != nil {
			errc <- fmt.Errorf("failed to create network namespace %s (needs root): %w", name, err)
			return
		}
		ns.Close()
		errc <- nil
	}()
	return <-errc
}

// inNamespace runs fn on a fresh locked thread inside ns; the thread is discarded after.
func inNamespace(ns netns.NsHandle, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		if err := netns.Set(ns); err != nil {
			errc <- fmt.Errorf("failed to enter the run namespace: %w", err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

func ipNet(a netip.Addr, bits int) *net.IPNet {
	return &net.IPNet{IP: net.IP(a.AsSlice()), Mask: net.CIDRMask(bits, 32)}
}

// reserve takes the first free /30 of the pool by creating its lease file exclusively.
func reserve(dir, id string) (lease string, host, peer netip.Addr, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", host, peer, fmt.Errorf("failed to create %s: %w", dir, err)
	}
	base := pool.Addr().As4()
	for i := 0; i < 1<<14; i++ {
		p := filepath.Join(dir, strconv.Itoa(i))
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return "", host, peer, fmt.Errorf("failed to reserve an address: %w", err)
		}
		_, werr := f.WriteString(id)
		if cerr := f.Close(); werr != nil || cerr != nil {
			os.Remove(p)
			return "", host, peer, fmt.Errorf("failed to write lease %s: %w", p, errors.Join(werr, cerr))
		}
		off := i * 4
		a := base
		a[2], a[3] = byte(off>>8), byte(off)
		net0 := netip.AddrFrom4(a)
		return p, net0.Next(), net0.Next().Next(), nil
	}
	return "", host, peer, fmt.Errorf("all %d run networks in %s are in use; reap stale runs", 1<<14, pool)
}

// ReleaseLeases removes the address leases held by run id from leaseDir ("":
// DefaultLeaseDir), for the reaper.
func ReleaseLeases(leaseDir, id string) error {
	dir := leaseDir
	if dir == "" {
		dir = DefaultLeaseDir
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("failed to list address leases: %w", err)
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if b, err := os.ReadFile(p); err == nil && string(b) == id {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("failed to release lease %s: %w", p, err)
			}
		}
	}
	return nil
}
