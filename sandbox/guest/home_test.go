package guest

import (
	"testing"

	"github.com/bumperdev/bumper/internal/repoconfig"
)

// TestAgentHome: the home every command gets is the one .github/bumper.yml's
// environment.cache_paths are checked against, and the home's bin directories are on
// PATH ahead of the system's, where an environment's setup installs its toolchain.
func TestAgentHome(t *testing.T) {
	if AgentHome != repoconfig.AgentHome {
		t.Fatalf("the guest's HOME is %s, repoconfig.AgentHome %s", AgentHome, repoconfig.AgentHome)
	}
	if want := repoconfig.AgentHome + "/.local/bin:" + repoconfig.AgentHome + "/bin:"; len(AgentPath) < len(want) || AgentPath[:len(want)] != want {
		t.Fatalf("PATH %s does not start with the agent's own bin directories", AgentPath)
	}
}
