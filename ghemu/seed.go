package ghemu

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/bumperdev/bumper/ghemu/state"
)

// Seed is the starting world of an emulator: accounts, repositories and the App's
// installations. DefaultSeed gives one organisation with one repository; a YAML file in
// the same shape replaces it (bumper emulator --seed FILE).
type Seed struct {
	App           SeedApp            `yaml:"app"`
	Users         []SeedUser         `yaml:"users"`
	Organizations []string           `yaml:"organizations"`
	Repositories  []SeedRepository   `yaml:"repositories"`
	Installations []SeedInstallation `yaml:"installations"`
}

// SeedApp names the GitHub App the emulator hosts.
type SeedApp struct {
	ID          int64             `yaml:"id"`
	Slug        string            `yaml:"slug"`
	Name        string            `yaml:"name"`
	Owner       string            `yaml:"owner"`
	Permissions map[string]string `yaml:"permissions"`
	Events      []string          `yaml:"events"`
}

// SeedUser is a person with a personal access token. Token may be left empty: one is
// generated and printed at start.
type SeedUser struct {
	Login string `yaml:"login"`
	Name  string `yaml:"name"`
	Email string `yaml:"email"`
	Token string `yaml:"token"`
	// Bot makes the account another App's bot user (type Bot), whose login ends in
	// "[bot]", such as "renovate[bot]".
	Bot bool `yaml:"bot"`
}

// SeedRepository is a repository with a real git history of one commit holding Files.
type SeedRepository struct {
	Owner         string            `yaml:"owner"`
	Name          string            `yaml:"name"`
	Private       bool              `yaml:"private"`
	Description   string            `yaml:"description"`
	DefaultBranch string            `yaml:"default_branch"`
	Protected     []SeedProtection  `yaml:"protected_branches"`
	Collaborators map[string]string `yaml:"collaborators"` // login -> read|triage|write|maintain|admin
	Labels        []SeedLabel       `yaml:"labels"`
	Files         map[string]string `yaml:"files"`
}

// SeedProtection protects one branch: no direct pushes, and merges need the checks and
// the approving reviews. It is also what SetBranchProtection takes at run time.
type SeedProtection struct {
	Branch          string   `yaml:"branch" json:"branch"`
	RequiredChecks  []string `yaml:"required_checks" json:"required_checks"`
	RequiredReviews int      `yaml:"required_reviews" json:"required_reviews"`
	// EnforceAdmins makes the protection bind administrators too.
	EnforceAdmins bool `yaml:"enforce_admins" json:"enforce_admins"`
	// BypassApps are slugs of Apps that may merge without the approving reviews
	// (GitHub's bypass_pull_request_allowances.apps): the emulator's App, or another
	// App whose bot user ("<slug>[bot]") the seed lists. Required checks still bind them.
	BypassApps []string `yaml:"bypass_apps" json:"bypass_apps"`
	// RequiredCheckApps pins required checks to an App, context -> App slug: GitHub's
	// required_status_checks.checks[].app_id, the branch settings' "expected source".
	// Only check runs that App created satisfy a pinned check; a check left out is
	// satisfied by any check run or commit status of its name. Each context must be in
	// RequiredChecks and each App the emulator's App or another App whose bot user the
	// seed lists, as for BypassApps.
	RequiredCheckApps map[string]string `yaml:"required_check_apps" json:"required_check_apps"`
	// Strict is "Require branches to be up to date before merging"
	// (required_status_checks.strict): a pull request whose head lacks commits of the
	// branch is "behind" and cannot merge until updated. As on GitHub it binds only
	// with at least one required check.
	Strict bool `yaml:"strict" json:"strict"`
	// RequiredSignatures is "Require signed commits" (required_signatures): a pull
	// request with a commit that is not verified cannot merge into the branch, and a
	// push or ref update to an unverified commit is refused.
	RequiredSignatures bool `yaml:"required_signatures" json:"required_signatures"`
}

// maxRequiredReviews is GitHub's upper bound on required_approving_review_count.
const maxRequiredReviews = 6

// validateProtection checks one branch's protection against the accounts the world has:
// appSlug is the emulator's App, bots the logins of other Apps' bot users.
func validateProtection(p SeedProtection, appSlug string, isBot func(login string) bool) error {
	if p.Branch == "" {
		return fmt.Errorf("protection without a branch")
	}
	if p.RequiredReviews < 0 || p.RequiredReviews > maxRequiredReviews {
		return fmt.Errorf("branch %s: required_reviews %d is outside GitHub's 0 to %d", p.Branch, p.RequiredReviews, maxRequiredReviews)
	}
	for _, slug := range p.BypassApps {
		if !strings.EqualFold(slug, appSlug) && !isBot(slug+"[bot]") {
			return fmt.Errorf("branch %s: bypass app %q is neither the App (%s) nor another App's listed bot user %q", p.Branch, slug, appSlug, slug+"[bot]")
		}
	}
	for check, slug := range p.RequiredCheckApps {
		if !slices.Contains(p.RequiredChecks, check) {
			return fmt.Errorf("branch %s: required_check_apps pins %q, which is not in required_checks", p.Branch, check)
		}
		if !strings.EqualFold(slug, appSlug) && !isBot(slug+"[bot]") {
			return fmt.Errorf("branch %s: check %q is pinned to app %q, neither the App (%s) nor another App's listed bot user %q", p.Branch, check, slug, appSlug, slug+"[bot]")
		}
	}
	return nil
}

// SeedLabel is a repository label.
type SeedLabel struct {
	Name        string `yaml:"name"`
	Color       string `yaml:"color"`
	Description string `yaml:"description"`
}

// SeedInstallation installs the App on an account, for some or all of its repositories.
type SeedInstallation struct {
	Account      string            `yaml:"account"`
	Repositories []string          `yaml:"repositories"` // empty: all
	Permissions  map[string]string `yaml:"permissions"`  // empty: the App's
}

// Names used by the default seed; tests and docs/emulator.md refer to them.
const (
	DefaultOrg        = "acme"
	DefaultRepo       = "widgets"
	DefaultMaintainer = "maintainer"
	DefaultReader     = "reader"
	DefaultAppID      = 4242
	DefaultAppSlug    = "bumper"
	DefaultWorkflow   = "bumper-run.yml"
)

// DefaultAppPermissions are what the Bumper App asks for when installed.
func DefaultAppPermissions() map[string]string {
	return map[string]string{
		"actions":        "write",
		"checks":         "write",
		"contents":       "write",
		"issues":         "write",
		"metadata":       "read",
		"pull_requests":  "write",
		"administration": "read",
		// Lets tests mint tokens with and without it: GitHub refuses a push touching
		// .github/workflows/ by a token without workflows: write.
		"workflows": "write",
	}
}

// DefaultSeed is one organisation, one private repository with a commit on a protected
// main branch (an approving review, and bumper/verdict from the App: pinned, as
// docs/install.md asks, so no one else's check run or status can stand in for the
// verdict), a maintainer with write permission and a reader with read permission, and
// the App installed on the organisation.
func DefaultSeed() *Seed {
	return &Seed{
		App: SeedApp{ID: DefaultAppID, Slug: DefaultAppSlug, Name: "Bumper", Owner: DefaultOrg},
		Users: []SeedUser{
			{Login: DefaultMaintainer, Name: "Mae Maintainer", Email: "maintainer@example.test"},
			{Login: DefaultReader, Name: "Rey Reader", Email: "reader@example.test"},
		},
		Organizations: []string{DefaultOrg},
		Repositories: []SeedRepository{{
			Owner: DefaultOrg, Name: DefaultRepo, Private: true,
			Description:   "A small project that Bumper's agents work on",
			DefaultBranch: "main",
			Protected: []SeedProtection{{Branch: "main", RequiredChecks: []string{"bumper/verdict"}, RequiredReviews: 1,
				RequiredCheckApps: map[string]string{"bumper/verdict": DefaultAppSlug}}},
			Collaborators: map[string]string{DefaultMaintainer: "write", DefaultReader: "read"},
			Labels: []SeedLabel{
				{Name: "agent:implement", Color: "5319e7", Description: "Ask Bumper to implement this issue"},
				{Name: "bug", Color: "d73a4a", Description: "Something isn't working"},
			},
			Files: map[string]string{
				"README.md":                            "# widgets\n\nA small project for Bumper's demo.\n",
				"widgets.sh":                           "#!/bin/sh\n# Prints the widget count.\necho 3\n",
				"test.sh":                              "#!/bin/sh\nset -e\n[ \"$(sh widgets.sh)\" = 3 ]\necho '1 passed, 0 failed'\n",
				".github/workflows/" + DefaultWorkflow: defaultWorkflowYAML,
			},
		}},
		Installations: []SeedInstallation{{Account: DefaultOrg}},
	}
}

const defaultWorkflowYAML = `name: bumper-run
run-name: "bumper ${{ inputs.work_item }} attempt ${{ inputs.attempt }} ${{ inputs.stage }}"
on:
  workflow_dispatch:
    inputs:
      work_item: {description: "owner/repo#issue", required: true}
      attempt: {description: "attempt number", required: true}
      nonce: {description: "single-use nonce for the token exchange", required: true}
      stage: {description: "plan, implement, fix or review", required: true}
permissions:
  id-token: write
  contents: read
jobs:
  run:
    runs-on: [self-hosted, bumper]
    steps:
      - uses: bumperdev/bumper@v0.4.2
        with:
          work_item: ${{ inputs.work_item }}
          attempt: ${{ inputs.attempt }}
          nonce: ${{ inputs.nonce }}
          stage: ${{ inputs.stage }}
`

// LoadSeed reads a seed YAML file strictly: unknown fields are errors, so a typo does not
// silently give a different world.
func LoadSeed(path string) (*Seed, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("failed to read seed file: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	var s Seed
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("failed to parse seed file %s: %w", path, err)
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("invalid seed file %s: %w", path, err)
	}
	return &s, nil
}

var loginRE = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,37}[A-Za-z0-9])?$`)
var repoNameRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`)

// Validate checks that every name is well formed and every reference resolves.
func (s *Seed) Validate() error {
	accounts := map[string]bool{}
	for _, u := range s.Users {
		name, isBot := strings.CutSuffix(u.Login, "[bot]")
		if !loginRE.MatchString(name) || isBot != u.Bot {
			return fmt.Errorf("user login %q is not a valid GitHub login (letters, digits, single hyphens; a bot's, and only a bot's, ends in [bot])", u.Login)
		}
		if accounts[state.Key(u.Login)] {
			return fmt.Errorf("account %q is listed twice", u.Login)
		}
		accounts[state.Key(u.Login)] = true
	}
	for _, o := range s.Organizations {
		if !loginRE.MatchString(o) {
			return fmt.Errorf("organization %q is not a valid GitHub login", o)
		}
		if accounts[state.Key(o)] {
			return fmt.Errorf("account %q is listed twice", o)
		}
		accounts[state.Key(o)] = true
	}
	repos := map[string]bool{}
	for _, r := range s.Repositories {
		if !accounts[state.Key(r.Owner)] {
			return fmt.Errorf("repository %s/%s: owner %q is not a listed user or organization", r.Owner, r.Name, r.Owner)
		}
		if !repoNameRE.MatchString(r.Name) || r.Name == "." || r.Name == ".." {
			return fmt.Errorf("repository name %q is not valid (letters, digits, '.', '-', '_')", r.Name)
		}
		for login, perm := range r.Collaborators {
			if !accounts[state.Key(login)] {
				return fmt.Errorf("repository %s/%s: collaborator %q is not a listed user", r.Owner, r.Name, login)
			}
			if !state.ValidRole(perm) {
				return fmt.Errorf("repository %s/%s: collaborator %q has permission %q; use read, triage, write, maintain or admin", r.Owner, r.Name, login, perm)
			}
		}
		slug := s.App.Slug
		if slug == "" {
			slug = DefaultAppSlug
		}
		for _, p := range r.Protected {
			if err := validateProtection(p, slug, func(login string) bool {
				for _, u := range s.Users {
					if u.Bot && strings.EqualFold(u.Login, login) {
						return true
					}
				}
				return false
			}); err != nil {
				return fmt.Errorf("repository %s/%s: %w", r.Owner, r.Name, err)
			}
		}
		repos[state.Key(r.Owner+"/"+r.Name)] = true
	}
	for _, in := range s.Installations {
		if !accounts[state.Key(in.Account)] {
			return fmt.Errorf("installation on %q: not a listed user or organization", in.Account)
		}
		for _, name := range in.Repositories {
			if !repos[state.Key(in.Account+"/"+name)] {
				return fmt.Errorf("installation on %q: repository %q is not listed under that owner", in.Account, name)
			}
		}
	}
	return nil
}
