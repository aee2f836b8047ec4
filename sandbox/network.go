package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/bumperdev/bumper/sandbox/agentproto"
	"github.com/bumperdev/bumper/sandbox/netns"
)

// Fixed guest-side addresses. Every run sees the same ones, so a snapshot taken on one
// run stays valid on the next; the run's network namespace maps them to its own. The
// gateway is the one package netns addresses its TAP with and redirects to the proxy.
const (
	GuestAddress = "10.0.2.15/24"
	GuestGateway = netns.Gateway
)

// Network is the guest's NIC: an open TAP device (created by package netns inside the
// run's namespace) and what the guest is told about its addresses.
type Network struct {
	// TAP is the open TAP device; QEMU receives it as an inherited descriptor, so QEMU
	// itself needs no privilege and no access to the namespace.
	TAP *os.File
	// MAC is the guest NIC's address (default 52:54:00:12:34:56).
	MAC string
	// Guest is the guest's static configuration (default GuestAddress/GuestGateway).
	Guest agentproto.Network
	// ProxyURL is exported to the command as HTTP_PROXY and HTTPS_PROXY (and their
	// lower-case forms); empty means none.
	ProxyURL string
}

func (n *Network) validate() error {
	if n.TAP == nil {
		return errors.New("Network.TAP is nil: create the TAP with package netns, or set Network to nil for no NIC")
	}
	if n.MAC != "" {
		if _, err := net.ParseMAC(n.MAC); err != nil {
			return fmt.Errorf("Network.MAC %q is not a MAC address", n.MAC)
		}
	}
	if n.Guest.Address != "" {
		if err := n.Guest.Validate(); err != nil {
			return fmt.Errorf("Network.Guest: %w", err)
		}
	}
	return nil
}

func (n *Network) withDefaults() *Network {
	c := *n
	if c.MAC == "" {
		c.MAC = "52:54:00:12:34:56"
	}
	if c.Guest.Address == "" {
		c.Guest = agentproto.Network{Address: GuestAddress, Gateway: GuestGateway}
	}
	return &c
}

// guestProxyURL is where the guest reaches the proxy: the port netns redirects on the
// gateway.
func guestProxyURL() string {
	return "http://" + net.JoinHostPort(GuestGateway, strconv.Itoa(netns.ProxyPort))
}

// proxyEnv is the environment that points a command at the proxy.
func (n *Network) proxyEnv() []string {
	if n == nil || n.ProxyURL == "" {
		return nil
	}
	return []string{
		"HTTP_PROXY=" + n.ProxyURL, "HTTPS_PROXY=" + n.ProxyURL,
		"http_proxy=" + n.ProxyURL, "https_proxy=" + n.ProxyURL,
		"NO_PROXY=", "no_proxy=",
	}
}
