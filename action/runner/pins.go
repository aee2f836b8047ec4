package runner

import (
	"fmt"
	"strings"

	"github.com/bumperdev/bumper/internal/hostpattern"
	"github.com/bumperdev/bumper/internal/repoconfig"
)

// pinnedPort is the one port a repository may reach a pinned host on: a runner host's
// pin (BUMPER_FIREWALL_RESOLVE) trusts an address the firewall would otherwise refuse,
// for a registry mirror served over HTTPS; which ports of it are reached must not be
// the repository's choice, or one pin would open every service on that address.
const pinnedPort = 443

// checkPins refuses a policy whose allowlist or environment.allow reaches a host the
// runner pins on any port but pinnedPort.
func checkPins(p repoconfig.Config, pins map[string]string) error {
	if len(pins) == 0 {
		return nil
	}
	lists := map[string][]string{"allowlist": p.Allowlist}
	if p.Environment != nil {
		lists["environment.allow"] = p.Environment.Allow
	}
	for field, entries := range lists {
		for _, raw := range entries {
			e, err := hostpattern.Parse(raw)
			if err != nil || e.Addr.IsValid() {
				continue // the parser refused it already; an address is never pinned
			}
			for host := range pins {
				host = strings.ToLower(strings.TrimSuffix(host, "."))
				if !(host == e.Name || e.Wildcard && strings.HasSuffix(host, "."+e.Name)) {
					continue
				}
				for _, port := range e.Ports {
					if port != pinnedPort {
						return fmt.Errorf("%s's %s entry %q reaches %s on port %d, but this runner host pins %s to a private address (BUMPER_FIREWALL_RESOLVE), which a repository may reach on port %d only: write %q",
							repoconfig.Path, field, raw, host, port, host, pinnedPort, e.Name)
					}
				}
			}
		}
	}
	return nil
}
