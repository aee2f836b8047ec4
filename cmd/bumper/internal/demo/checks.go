package demo

import (
	"debug/elf"
	"fmt"
	"os/exec"
	"strings"
)

// requirement is a program the demo needs on the host, and the Debian package that has it.
type requirement struct{ program, pkg, why string }

var requirements = []requirement{
	{"qemu-system-x86_64", "qemu-system-x86", "boots the microVM"},
	{"qemu-img", "qemu-utils", "makes the VM's copy-on-write disk"},
	{"nft", "nftables", "the VM's default-deny network rules"},
	{"ip", "iproute2", "the run's network namespace"},
	{"git", "git", "the emulator's git server and the workspace"},
	{"debootstrap", "debootstrap", "builds the VM image on the first run"},
	{"mkfs.ext4", "e2fsprogs", "builds the VM's disks"},
}

// checkHost says, all at once, what this machine lacks for the demo: root, the
// programs, a static bumper binary (the same binary is the VM's guest agent).
func checkHost(binary string, euid int) error {
	var missing []string
	if euid != 0 {
		missing = append(missing, "root: each run makes a network namespace and nftables rules (run the demo with sudo, or as root)")
	}
	var pkgs []string
	for _, r := range requirements {
		if _, err := exec.LookPath(r.program); err != nil {
			missing = append(missing, fmt.Sprintf("%s (Debian package %s): %s", r.program, r.pkg, r.why))
			pkgs = append(pkgs, r.pkg)
		}
	}
	if err := staticBinary(binary); err != nil {
		missing = append(missing, err.Error())
	}
	if len(missing) == 0 {
		return nil
	}
	msg := "this machine cannot run the demo yet; missing:\n  - " + strings.Join(missing, "\n  - ")
	if len(pkgs) > 0 {
		msg += "\nscripts/install-deps.sh (as root) installs every package the demo and the tests need; or: apt-get install " + strings.Join(pkgs, " ")
	}
	return fmt.Errorf("%s", msg)
}

// staticBinary refuses a dynamically linked bumper: the image builder copies this binary
// into the VM as its init, where there is no C library to load.
func staticBinary(binary string) error {
	f, err := elf.Open(binary)
	if err != nil {
		return fmt.Errorf("failed to read this bumper binary (%s) to check it is static: %w", binary, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("a static bumper binary: %s is dynamically linked, and the same binary runs as the VM's guest agent; build it with `make build` (CGO_ENABLED=0) and run bin/bumper demo", binary)
		}
	}
	return nil
}

// checkFlags refuses flag combinations that cannot work, saying what to do instead.
func checkFlags(c *Config, getenv func(string) string) error {
	switch c.Agent {
	case AgentCommand, AgentClaudeCode, AgentCodex:
	default:
		return fmt.Errorf("--agent %q: want command, claude-code or codex", c.Agent)
	}
	if c.AgentCmd != "" && c.Agent != AgentCommand {
		return fmt.Errorf("--agent-cmd runs your program with the command harness; it does not go with --agent %s", c.Agent)
	}
	if c.ModelBaseURL != "" {
		if c.Agent == AgentCommand && c.RepoDir == "" {
			return fmt.Errorf("--model-base-url is for --agent claude-code or codex, the CLIs that call a model")
		}
		if !strings.HasPrefix(c.ModelBaseURL, "https://") && !strings.HasPrefix(c.ModelBaseURL, "http://") {
			return fmt.Errorf("--model-base-url %q: want an http(s) URL such as https://api.anthropic.com", c.ModelBaseURL)
		}
		if k := keyVar(c.Agent); getenv(k) == "" && c.RepoDir == "" {
			return fmt.Errorf("--model-base-url needs the API key in %s (only the runner's firewall will hold it; the VM sees a sentinel)", k)
		}
	}
	if c.RepoDir != "" {
		if c.IssueFile == "" {
			return fmt.Errorf("--repo needs --issue FILE: the task for your repository (Markdown, the title on the first line)")
		}
		if c.AgentCmd != "" || c.Agent != AgentCommand {
			return fmt.Errorf("with --repo your repository's %s chooses the agent; --agent and --agent-cmd change the sample only", policyPath)
		}
	}
	if c.IssueFile != "" && c.RepoDir == "" {
		return fmt.Errorf("--issue is the task for --repo DIR; the sample repository has its own issue")
	}
	return nil
}

// keyVar is the environment variable holding the model API key an agent's CLI uses.
func keyVar(agent string) string {
	if agent == AgentCodex {
		return "OPENAI_API_KEY"
	}
	return "ANTHROPIC_API_KEY"
}

// baseVar is the runner host's setting for the model API's address (see cmd/bumper run).
func baseVar(agent string) string {
	if agent == AgentCodex {
		return "BUMPER_OPENAI_BASE_URL"
	}
	return "BUMPER_ANTHROPIC_BASE_URL"
}
