// Package repoconfig reads a repository's .github/bumper.yml: who may approve, plans,
// bounds, the harness, the allowlist, the agent's GitHub API, verification, the
// reviewer and the output gates' protected paths. The App and the runner read the same
// file with this one parser, always at the approved base commit, so the two can never
// disagree on what it says.
package repoconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/bumperdev/bumper/internal/hostpattern"
	"github.com/bumperdev/bumper/internal/release"
	"github.com/bumperdev/bumper/internal/revision"
)

// Path is where a repository keeps its Bumper configuration.
const Path = ".github/bumper.yml"

// Schema is the version of .github/bumper.yml this code reads.
const Schema = 1

// DefaultRevision is the revision of a repository without the file.
const DefaultRevision = "default"

// Config is a repository's .github/bumper.yml. The App reads who may approve, plans and
// bounds; the runner side reads the rest from the same file.
type Config struct {
	Version int  `yaml:"version"`
	Plan    bool `yaml:"plan"`
	// Paused, on the default branch, stops Bumper starting anything in the repository:
	// no dispatch, exchanges refused, runs in flight stopped (docs/operating.md#pausing-everything).
	Paused    bool `yaml:"paused"`
	Approvers struct {
		MinPermission         string `yaml:"min_permission"`
		DistinctFromRequester bool   `yaml:"distinct_from_requester"`
	} `yaml:"approvers"`
	AllowedBots []string `yaml:"allowed_bots"`
	Bounds      struct {
		Attempts           int `yaml:"attempts"`
		VerificationRounds int `yaml:"verification_rounds"`
		FixRounds          int `yaml:"fix_rounds"`
		// ReviewRounds bounds the revise rounds on one pull request (a writer's review,
		// /revise, or the reviewer's findings); UpdateRounds the update rounds (the base
		// branch merged in to resolve conflicts).
		ReviewRounds   int           `yaml:"review_rounds"`
		UpdateRounds   int           `yaml:"update_rounds"`
		WallTime       time.Duration `yaml:"wall_time"`
		CostPerRunUSD  float64       `yaml:"cost_per_run_usd"`
		CostPerItemUSD float64       `yaml:"cost_per_item_usd"`
	} `yaml:"bounds"`
	Harness   Harness  `yaml:"harness"`
	Allowlist []string `yaml:"allowlist"`
	// GitHubAPI opts the agent in to read-only GitHub API calls through the firewall's
	// gateway ("GET /repos/*/*/pulls"). Empty, the default: the agent gets no GitHub API.
	// Comments, reviews and other text strangers write are refused by the firewall
	// whatever is listed here.
	GitHubAPI []string `yaml:"github_api"`
	// Credentials names the runner host's credentials the run and the environment's
	// setup ask for (docs/credentials.md): the runner host declares each, where it may
	// be sent and which repositories may ask; the firewall adds it toward those hosts,
	// the VM holds a placeholder at most. One the runner host does not grant this
	// repository fails the run at its exchange.
	Credentials []string `yaml:"credentials"`
	// Verification are shell command lines the runner runs in the repository after the
	// agent, each with `sh -c`, to check its work.
	Verification []string `yaml:"verification"`
	// Reviewer is the review run that judges each pull request before humans get it:
	// `reviewer: false` turns it off; a mapping chooses its harness and threshold.
	Reviewer Reviewer `yaml:"reviewer"`
	// Environment is the repository's toolchain, built into an image derived from the
	// base image (issue #12); nil when the file declares none.
	Environment *Environment `yaml:"environment"`
	// ProtectedPaths are the output gates' protected-path rules; nil (the key absent)
	// keeps their defaults (docs/gates.md), an empty list protects nothing.
	ProtectedPaths []ProtectedPath `yaml:"protected_paths"`
	// Gates sets what the other output gates' findings do (docs/gates.md).
	Gates GateActions `yaml:"gates"`
	// Dependencies are other repositories of the owner the run may fetch, read-only
	// (docs/usage.md, "Dependencies").
	Dependencies Dependencies `yaml:"dependencies"`

	// Revision identifies the file's content ("default" when absent); approvals bind to it.
	Revision string `yaml:"-"`
}

// The harness names Bumper knows (Harness.Name).
const (
	// HarnessCommand runs a repository's own program (Harness.Command).
	HarnessCommand = "command"
	// HarnessClaudeCode runs Anthropic's Claude Code CLI.
	HarnessClaudeCode = "claude-code"
	// HarnessCodex runs OpenAI's Codex CLI.
	HarnessCodex = "codex"
)

// MaxCredentials bounds the credentials: list.
const MaxCredentials = 20

// credentialName is a credential's name, as the runner host's file writes it.
var credentialName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// MaxCommandBytes bounds a command line of the file (harness.command and each
// verification entry), as the evidence bundle bounds a command.
const MaxCommandBytes = 4096

// MaxCostUSD bounds bounds.cost_per_run_usd and bounds.cost_per_item_usd. The evidence
// bundle records a cap in whole micro-dollars (an int64): a cap it cannot hold, or one
// that is not a number (.nan, .inf), would pass here and fail the run at its end.
const MaxCostUSD = 1_000_000

// MaxVerificationCommands bounds the verification list, and MaxVerificationRounds the
// rounds: together they keep a run's test records within what the evidence holds (100).
const (
	MaxVerificationCommands = 20
	MaxVerificationRounds   = 5
)

// Harness is the agent the runner starts in the VM. The zero value (no harness
// section) names none: the App has no use for it, and the runner refuses to run
// without one.
type Harness struct {
	// Name is one of HarnessCommand, HarnessClaudeCode, HarnessCodex.
	Name string `yaml:"name"`
	// Version pins the agent CLI's exact release (their stream formats change between
	// releases); required for claude-code and codex, refused for command.
	Version string `yaml:"version"`
	// Command is the command harness's program: a shell command line run with `sh -c`
	// in the repository. Only for command.
	Command string `yaml:"command"`
	// Model is the model the agent CLI asks for (its --model / -m); empty leaves the
	// CLI's default. Only for claude-code and codex. The firewall meters whatever it is.
	Model string `yaml:"model"`
}

// modelName is a model as the providers name them: letters, digits, . _ - : and /,
// never starting with "-" (it is one argument of the CLI's command line).
var modelName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/-]{0,99}$`)

// check validates the harness section.
func (h Harness) check() error {
	switch h.Name {
	case "":
		if h.Version != "" || h.Command != "" || h.Model != "" {
			return fmt.Errorf("%s: harness.name is missing; use %s, %s or %s", Path, HarnessCommand, HarnessClaudeCode, HarnessCodex)
		}
		return nil
	case HarnessCommand:
		if h.Model != "" {
			return fmt.Errorf("%s: harness.model is set for the command harness, which asks for no model itself; remove it (your program chooses its model)", Path)
		}
		if h.Version != "" {
			return fmt.Errorf("%s: harness.version is set for the command harness, which has none; remove it (pin the program's tools in the repository or its environment)", Path)
		}
		if strings.TrimSpace(h.Command) == "" {
			return fmt.Errorf("%s: harness.command is empty; the command harness needs the program to run, e.g. `command: ./scripts/agent.sh`", Path)
		}
		return checkCommand("harness.command", h.Command)
	case HarnessClaudeCode, HarnessCodex:
		if h.Command != "" {
			return fmt.Errorf("%s: harness.command is set for the %s harness; it is only for `name: %s`", Path, h.Name, HarnessCommand)
		}
		switch {
		case h.Version == "":
			return fmt.Errorf("%s: harness.version is missing; the %s harness needs its exact release pinned, e.g. `version: 2.1.3`", Path, h.Name)
		case strings.EqualFold(h.Version, "latest"):
			return fmt.Errorf("%s: harness.version is %q; pin an exact release (e.g. 2.1.3): its stream format changes between releases", Path, h.Version)
		case !release.IsExact(h.Version):
			return fmt.Errorf("%s: harness.version %q is not an exact release; write MAJOR.MINOR.PATCH (e.g. 2.1.3), without a range or a leading v", Path, h.Version)
		case h.Model != "" && !modelName.MatchString(h.Model):
			return fmt.Errorf("%s: harness.model %q is not a model name (letters, digits, . _ - : /, at most 100, not starting with -), e.g. `model: claude-sonnet-4-5`", Path, h.Model)
		}
		return nil
	default:
		return fmt.Errorf("%s: harness.name %q is not one of %s, %s, %s", Path, h.Name, HarnessCommand, HarnessClaudeCode, HarnessCodex)
	}
}

// checkCommand refuses a command line the runner could not run or record as written.
func checkCommand(field, cmd string) error {
	switch {
	case strings.TrimSpace(cmd) == "":
		return fmt.Errorf("%s: %s is empty", Path, field)
	case len(cmd) > MaxCommandBytes:
		return fmt.Errorf("%s: %s is %d bytes; at most %d are allowed (put a longer script in a file of the repository)", Path, field, len(cmd), MaxCommandBytes)
	case strings.ContainsRune(cmd, 0):
		return fmt.Errorf("%s: %s holds a NUL byte, which no command line can carry", Path, field)
	case !utf8.ValidString(cmd):
		return fmt.Errorf("%s: %s is not valid UTF-8", Path, field)
	}
	return nil
}

// ReviewerOn reports whether a review run must judge the pull request before humans
// get it (the default).
func (p Config) ReviewerOn() bool { return !p.Reviewer.Off }

// ReviewerHarness is the agent the review run starts: the reviewer's own harness, or
// else the repository's (with a fresh context all the same).
func (p Config) ReviewerHarness() Harness {
	if p.Reviewer.Harness.Name != "" {
		return p.Reviewer.Harness
	}
	return p.Harness
}

// Default is what a repository without .github/bumper.yml gets: writers approve,
// no bots, three attempts, no plan run.
func Default() Config {
	var p Config
	p.Version = Schema
	p.Approvers.MinPermission = "write"
	p.Bounds.Attempts = 3
	p.Bounds.VerificationRounds = 2
	p.Bounds.FixRounds = 2
	p.Bounds.ReviewRounds = DefaultReviewRounds
	p.Bounds.UpdateRounds = DefaultUpdateRounds
	p.Reviewer.MinConfidence = DefaultMinConfidence
	p.Revision = DefaultRevision
	return p
}

// Parse reads .github/bumper.yml strictly: an unknown key is an error (a typo in
// a security setting must not silently fall back to a default).
func Parse(raw []byte) (Config, error) {
	p := Default()
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&p); err != nil && !errors.Is(err, io.EOF) {
		return Config{}, fmt.Errorf("failed to parse %s: %w", Path, err)
	}
	if p.Version != Schema {
		return Config{}, fmt.Errorf("%s: version %d is not supported; set `version: %d`", Path, p.Version, Schema)
	}
	lvl := strings.ToLower(strings.TrimSpace(p.Approvers.MinPermission))
	switch lvl {
	case "write", "maintain", "admin":
	case "none", "read", "triage":
		// DESIGN: only people with write (or higher) permission may give commands; a
		// repository may raise that bar, not lower it.
		return Config{}, fmt.Errorf("%s: approvers.min_permission is %q; it can only raise the floor: use write, maintain or admin", Path, lvl)
	default:
		return Config{}, fmt.Errorf("%s: approvers.min_permission: permission level %q is not one of write, maintain, admin", Path, lvl)
	}
	p.Approvers.MinPermission = lvl
	if p.Bounds.Attempts < 1 || p.Bounds.Attempts > 20 {
		return Config{}, fmt.Errorf("%s: bounds.attempts is %d; use 1 to 20", Path, p.Bounds.Attempts)
	}
	if p.Bounds.VerificationRounds < 0 || p.Bounds.FixRounds < 0 || p.Bounds.ReviewRounds < 0 || p.Bounds.UpdateRounds < 0 || p.Bounds.WallTime < 0 ||
		p.Bounds.CostPerRunUSD < 0 || p.Bounds.CostPerItemUSD < 0 {
		return Config{}, fmt.Errorf("%s: bounds must not be negative", Path)
	}
	for _, c := range []struct {
		key string
		usd float64
	}{{"cost_per_run_usd", p.Bounds.CostPerRunUSD}, {"cost_per_item_usd", p.Bounds.CostPerItemUSD}} {
		if math.IsNaN(c.usd) || c.usd > MaxCostUSD {
			return Config{}, fmt.Errorf("%s: bounds.%s is %v; use a number of dollars from 0 (no cap) to %d", Path, c.key, c.usd, MaxCostUSD)
		}
	}
	if err := p.Harness.check(); err != nil {
		return Config{}, err
	}
	if err := p.Reviewer.check(); err != nil {
		return Config{}, err
	}
	if p.Environment != nil {
		env, err := p.Environment.check()
		if err != nil {
			return Config{}, err
		}
		p.Environment = &env
	}
	if err := checkProtected(p.ProtectedPaths); err != nil {
		return Config{}, err
	}
	if err := p.Gates.check(); err != nil {
		return Config{}, err
	}
	if err := p.Dependencies.check(); err != nil {
		return Config{}, err
	}
	if p.Bounds.FixRounds > MaxFixRounds {
		return Config{}, fmt.Errorf("%s: bounds.fix_rounds is %d; at most %d fix rounds are allowed", Path, p.Bounds.FixRounds, MaxFixRounds)
	}
	if p.Bounds.ReviewRounds > MaxReviewRounds {
		return Config{}, fmt.Errorf("%s: bounds.review_rounds is %d; at most %d review rounds are allowed", Path, p.Bounds.ReviewRounds, MaxReviewRounds)
	}
	if p.Bounds.UpdateRounds > MaxUpdateRounds {
		return Config{}, fmt.Errorf("%s: bounds.update_rounds is %d; at most %d update rounds are allowed", Path, p.Bounds.UpdateRounds, MaxUpdateRounds)
	}
	if p.Bounds.VerificationRounds > MaxVerificationRounds {
		return Config{}, fmt.Errorf("%s: bounds.verification_rounds is %d; at most %d rounds are allowed", Path, p.Bounds.VerificationRounds, MaxVerificationRounds)
	}
	if len(p.Verification) > MaxVerificationCommands {
		return Config{}, fmt.Errorf("%s: verification lists %d commands; at most %d are allowed", Path, len(p.Verification), MaxVerificationCommands)
	}
	for i, cmd := range p.Verification {
		if err := checkCommand(fmt.Sprintf("verification[%d]", i), cmd); err != nil {
			return Config{}, err
		}
	}
	for i, a := range p.Allowlist {
		// The firewall parses the same entries when the run starts; refusing them here
		// lets the App say so before anyone approves.
		if _, err := hostpattern.Parse(a); err != nil {
			return Config{}, fmt.Errorf("%s: allowlist[%d] %q: %w; %s", Path, i, a, err, hostFix(a))
		}
	}
	for _, rule := range p.GitHubAPI {
		method, path, ok := strings.Cut(strings.TrimSpace(rule), " ")
		switch {
		case !ok || !strings.HasPrefix(strings.TrimSpace(path), "/"):
			return Config{}, fmt.Errorf("%s: github_api rule %q: want \"GET /path\" (segments may be * or a final **)", Path, rule)
		case method != "GET" && method != "HEAD":
			// Every write to GitHub is the runner's, on the host, from the run's results.
			return Config{}, fmt.Errorf("%s: github_api rule %q: the agent's GitHub API is read-only; use GET or HEAD", Path, rule)
		}
	}
	if err := checkCredentials(p.Credentials); err != nil {
		return Config{}, err
	}
	p.Revision = revision.Of(raw)
	return p, nil
}

// checkCredentials validates the credentials: list: names as the runner host writes
// them, each once, at most MaxCredentials.
func checkCredentials(names []string) error {
	if len(names) > MaxCredentials {
		return fmt.Errorf("%s: credentials lists %d names; at most %d are allowed", Path, len(names), MaxCredentials)
	}
	seen := map[string]bool{}
	for i, n := range names {
		if !credentialName.MatchString(n) {
			return fmt.Errorf("%s: credentials[%d] %q: a credential's name is lower-case letters, digits and '-' (at most 63), as the runner host's credentials file declares it", Path, i, n)
		}
		if seen[n] {
			return fmt.Errorf("%s: credentials lists %q twice", Path, n)
		}
		seen[n] = true
	}
	return nil
}
