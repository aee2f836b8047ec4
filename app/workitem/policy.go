package workitem

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/bumperdev/bumper/app/authz"
	"github.com/bumperdev/bumper/app/ledger"
)

// PolicyPath is where a repository keeps its Bumper configuration.
const PolicyPath = ".github/bumper.yml"

// PolicySchema is the version of .github/bumper.yml this code reads.
const PolicySchema = 1

// Policy is a repository's .github/bumper.yml. The App reads who may approve, plans and
// bounds; the runner side reads the rest from the same file.
type Policy struct {
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
func (p Policy) ReviewerOn() bool { return p.Reviewer == nil || *p.Reviewer }

// DefaultPolicy is what a repository without .github/bumper.yml gets: writers approve,
// no bots, three attempts, no plan run.
func DefaultPolicy() Policy {
	var p Policy
	p.Version = PolicySchema
	p.Approvers.MinPermission = "write"
	p.Bounds.Attempts = 3
	p.Bounds.VerificationRounds = 2
	p.Bounds.FixRounds = 2
	p.Revision = ledger.DefaultPolicyVersion
	return p
}

// ParsePolicy reads .github/bumper.yml strictly: an unknown key is an error (a typo in
// a security setting must not silently fall back to a default).
func ParsePolicy(raw []byte) (Policy, error) {
	p := DefaultPolicy()
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&p); err != nil && !errors.Is(err, io.EOF) {
		return Policy{}, fmt.Errorf("failed to parse %s: %w", PolicyPath, err)
	}
	if p.Version != PolicySchema {
		return Policy{}, fmt.Errorf("%s: version %d is not supported; set `version: %d`", PolicyPath, p.Version, PolicySchema)
	}
	lvl, err := authz.ParseLevel(p.Approvers.MinPermission)
	if err != nil {
		return Policy{}, fmt.Errorf("%s: approvers.min_permission: %w", PolicyPath, err)
	}
	if !authz.AtLeast(lvl, "write") {
		// DESIGN: only people with write (or higher) permission may give commands; a
		// repository may raise that bar, not lower it.
		return Policy{}, fmt.Errorf("%s: approvers.min_permission is %q; it can only raise the floor: use write, maintain or admin", PolicyPath, lvl)
	}
	p.Approvers.MinPermission = lvl
	if p.Bounds.Attempts < 1 || p.Bounds.Attempts > 20 {
		return Policy{}, fmt.Errorf("%s: bounds.attempts is %d; use 1 to 20", PolicyPath, p.Bounds.Attempts)
	}
	if p.Bounds.VerificationRounds < 0 || p.Bounds.FixRounds < 0 || p.Bounds.WallTime < 0 ||
		p.Bounds.CostPerRunUSD < 0 || p.Bounds.CostPerItemUSD < 0 {
		return Policy{}, fmt.Errorf("%s: bounds must not be negative", PolicyPath)
	}
	for _, rule := range p.GitHubAPI {
		method, path, ok := strings.Cut(strings.TrimSpace(rule), " ")
		switch {
		case !ok || !strings.HasPrefix(strings.TrimSpace(path), "/"):
			return Policy{}, fmt.Errorf("%s: github_api rule %q: want \"GET /path\" (segments may be * or a final **)", PolicyPath, rule)
		case method != "GET" && method != "HEAD":
			// Every write to GitHub is the runner's, on the host, from the run's results.
			return Policy{}, fmt.Errorf("%s: github_api rule %q: the agent's GitHub API is read-only; use GET or HEAD", PolicyPath, rule)
		}
	}
	p.Revision = ledger.ContentRevision(raw)
	return p, nil
}
