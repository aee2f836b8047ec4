// Package repoconfig reads a repository's .github/bumper.yml: who may approve, plans,
// bounds, the harness, the allowlist, the agent's GitHub API, verification and the
// reviewer. The App and the runner read the same file with this one parser, always at
// the approved base commit, so the two can never disagree on what it says.
package repoconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

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
	Version   int  `yaml:"version"`
	Plan      bool `yaml:"plan"`
	Approvers struct {
		MinPermission         string `yaml:"min_permission"`
		DistinctFromRequester bool   `yaml:"distinct_from_requester"`
	} `yaml:"approvers"`
	AllowedBots []string `yaml:"allowed_bots"`
	Bounds      struct {
		Attempts           int           `yaml:"attempts"`
		VerificationRounds int           `yaml:"verification_rounds"`
		FixRounds          int           `yaml:"fix_rounds"`
		WallTime           time.Duration `yaml:"wall_time"`
		CostPerRunUSD      float64       `yaml:"cost_per_run_usd"`
		CostPerItemUSD     float64       `yaml:"cost_per_item_usd"`
	} `yaml:"bounds"`
	Harness struct {
		Name    string `yaml:"name"`
		Version string `yaml:"version"`
	} `yaml:"harness"`
	Allowlist []string `yaml:"allowlist"`
	// GitHubAPI opts the agent in to read-only GitHub API calls through the firewall's
	// gateway ("GET /repos/*/*/pulls"). Empty, the default: the agent gets no GitHub API.
	// Comments, reviews and other text strangers write are refused by the firewall
	// whatever is listed here.
	GitHubAPI    []string `yaml:"github_api"`
	Verification []string `yaml:"verification"`
	Reviewer     *bool    `yaml:"reviewer"`

	// Revision identifies the file's content ("default" when absent); approvals bind to it.
	Revision string `yaml:"-"`
}

// ReviewerOn reports whether a review run must judge the pull request before humans
// get it (the default).
func (p Config) ReviewerOn() bool { return p.Reviewer == nil || *p.Reviewer }

// Default is what a repository without .github/bumper.yml gets: writers approve,
// no bots, three attempts, no plan run.
func Default() Config {
	var p Config
	p.Version = Schema
	p.Approvers.MinPermission = "write"
	p.Bounds.Attempts = 3
	p.Bounds.VerificationRounds = 2
	p.Bounds.FixRounds = 2
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
	if p.Bounds.VerificationRounds < 0 || p.Bounds.FixRounds < 0 || p.Bounds.WallTime < 0 ||
		p.Bounds.CostPerRunUSD < 0 || p.Bounds.CostPerItemUSD < 0 {
		return Config{}, fmt.Errorf("%s: bounds must not be negative", Path)
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
	p.Revision = revision.Of(raw)
	return p, nil
}
