package harness

import (
	"fmt"

	"github.com/bumperdev/bumper/internal/release"
	"github.com/bumperdev/bumper/internal/repoconfig"
)

// CLI is an agent CLI a VM image carries for a harness: what the image builder installs
// from npm and what the adapter runs.
type CLI struct {
	// Harness is the harness's name in .github/bumper.yml.
	Harness string
	// Package is the npm package the CLI comes from.
	Package string
	// Version is the release this build's adapter was checked against: its argv, its
	// environment and its event stream.
	Version string
	// Checked is the day that check was made (YYYY-MM-DD).
	Checked string
	// Binary is the program the adapter runs, found on the VM's PATH.
	Binary string
}

// The agent CLIs' programs, as the image installs them on the VM's PATH
// (/usr/local/bin).
const (
	ClaudeCodeBinary = "claude"
	CodexBinary      = "codex"
)

// The default releases, in one place: the image builder installs these when a
// repository pins nothing else, and the adapters' flags, environment and parsers were
// checked against exactly these (real CLIs against a loopback model server; see
// TestRealClaudeCode and TestRealCodex). Their stream formats change between releases,
// so moving a version means checking again and updating the date.
const (
	// DefaultClaudeCodeVersion is @anthropic-ai/claude-code, checked 2026-12-01.
	DefaultClaudeCodeVersion = "2.1.328"
	// DefaultCodexVersion is @openai/codex, checked 2026-12-01.
	DefaultCodexVersion = "0.171.0"

	checkedClaudeCode = "2026-12-01"
	checkedCodex      = "2026-12-01"
)

// DefaultCLIs lists the agent CLIs with their default releases, for the image builder.
func DefaultCLIs() []CLI {
	return []CLI{
		{Harness: repoconfig.HarnessClaudeCode, Package: "@anthropic-ai/claude-code", Version: DefaultClaudeCodeVersion, Checked: checkedClaudeCode, Binary: ClaudeCodeBinary},
		{Harness: repoconfig.HarnessCodex, Package: "@openai/codex", Version: DefaultCodexVersion, Checked: checkedCodex, Binary: CodexBinary},
	}
}

// DefaultCLI is the agent CLI of a harness with its default release; false for a
// harness that runs no packaged CLI (command) or an unknown one.
func DefaultCLI(harness string) (CLI, bool) {
	for _, c := range DefaultCLIs() {
		if c.Harness == harness {
			return c, true
		}
	}
	return CLI{}, false
}

// checkPinned refuses a CLI harness whose version is not one exact release: a range,
// a tag or nothing would let the CLI, and its stream format, change under an approved
// policy.
func checkPinned(cfg repoconfig.Harness, def CLI) error {
	switch {
	case cfg.Command != "":
		return fmt.Errorf("harness.command is set for the %s harness; it is only for `name: %s`", cfg.Name, repoconfig.HarnessCommand)
	case cfg.Version == "":
		return fmt.Errorf("the %s harness needs its exact release pinned: set harness.version in %s (this build was checked with `version: %s`)",
			cfg.Name, repoconfig.Path, def.Version)
	case !release.IsExact(cfg.Version):
		return fmt.Errorf("harness.version %q of the %s harness is not an exact release: pin one, e.g. `version: %s` (a range or a tag lets its stream format change)",
			cfg.Version, cfg.Name, def.Version)
	}
	return nil
}

// pinned is what .github/bumper.yml pins of a CLI harness: its release and, optionally,
// the model it asks for.
type pinned struct {
	version string
	// model is harness.model: the CLI's default when empty.
	model string
}

// Version is the pinned release of the CLI.
func (p pinned) Version() string { return p.version }
