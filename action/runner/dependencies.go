package runner

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/repoconfig"
)

// checkDependencies holds serve's grant of dependency repositories to the policy the
// runner read itself at the base commit: exactly the repositories it lists (none for a
// plan run), each with the token, or none at all. A grant of anything else is refused
// before the firewall holds its token.
func checkDependencies(cfg Config, pol repoconfig.Config, resp wire.ExchangeResponse) error {
	want, err := pol.DependenciesOf(cfg.WorkItem.Repository)
	if err != nil {
		return err
	}
	if cfg.Stage == wire.StagePlan {
		want = nil
	}
	lower := func(s []string) []string {
		out := make([]string, len(s))
		for i, r := range s {
			out[i] = strings.ToLower(r)
		}
		slices.Sort(out)
		return out
	}
	switch {
	case !slices.Equal(lower(want), lower(resp.Dependencies)):
		return fmt.Errorf("serve granted the dependencies %v, but %s at the base commit lists %v", resp.Dependencies, repoconfig.Path, want)
	case len(want) > 0 && resp.DependencyToken == "":
		return fmt.Errorf("serve granted the dependencies %v without their token", resp.Dependencies)
	case len(want) == 0 && resp.DependencyToken != "":
		return fmt.Errorf("serve granted a dependency token with no dependency")
	case resp.DependencyToken != "" && resp.DependencyToken == resp.InstallationToken:
		return fmt.Errorf("serve granted the run's own token for its dependencies")
	}
	return nil
}

// moduleHost is the host in the module paths and clone URLs of the git host's
// repositories: github.com for GitHub, a GitHub Enterprise Server's own name. The
// emulator, on a loopback address no module path can name, stands in for github.com.
func moduleHost(serverURL string) string {
	u, err := url.Parse(serverURL)
	if err != nil || u.Hostname() == "" {
		return "github.com"
	}
	if ip := net.ParseIP(u.Hostname()); u.Hostname() == "localhost" || ip != nil && ip.IsLoopback() {
		return "github.com"
	}
	return u.Host
}

// dependencyEnv is what a build in the VM needs to fetch the run's dependencies through
// the git gateway, with no secret: git rewrites their https URLs (as go, submodules and
// package managers write them) to the gateway, and Go treats them as private modules
// (GOPRIVATE: no checksum database, no public proxy). It is empty without dependencies.
// go needs nothing more (no GOINSECURE): it checks the scheme of the URL it hands git
// (https), and git, whose default protocol policy allows http, rewrites it to the
// gateway's plain http inside the VM (e2e TestRunWithPrivateGoModule).
func dependencyEnv(serverURL string, deps []string) []string {
	if len(deps) == 0 {
		return nil
	}
	host := moduleHost(serverURL)
	var env, private []string
	n := 0
	for _, d := range deps {
		to := guestGateway + "/git/" + d + ".git"
		// insteadOf matches prefixes, the longest first: the URL with .git (submodules)
		// and without (go's own for github.com).
		for _, from := range []string{"https://" + host + "/" + d + ".git", "https://" + host + "/" + d} {
			env = append(env, "GIT_CONFIG_KEY_"+strconv.Itoa(n)+"=url."+to+".insteadOf", "GIT_CONFIG_VALUE_"+strconv.Itoa(n)+"="+from)
			n++
		}
		private = append(private, host+"/"+d)
	}
	env = append(env, "GIT_CONFIG_COUNT="+strconv.Itoa(n), "GOPRIVATE="+strings.Join(private, ","), "GIT_TERMINAL_PROMPT=0")
	return env
}
