package image

import (
	"testing"

	"github.com/bumperdev/bumper/internal/repoconfig"
)

// TestAgentHome: the home the image gives the VM's user is the one .github/bumper.yml's
// environment.cache_paths are checked against (repoconfig cannot import the sandbox).
func TestAgentHome(t *testing.T) {
	if got := "/home/" + guestUser; got != repoconfig.AgentHome {
		t.Fatalf("the image's agent home is %s, repoconfig.AgentHome %s", got, repoconfig.AgentHome)
	}
}
