package gates

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/bumperdev/bumper/internal/textcut"
)

// Gate names one of the four checks.
type Gate string

// The gates.
const (
	GateSecrets        Gate = "secrets"
	GateProtectedPaths Gate = "protected_paths"
	GateDependencies   Gate = "dependencies"
	GateLinks          Gate = "links"
)

// Action is what a finding does to the run.
type Action string

// The actions.
const (
	// ActionBlock: nothing is pushed and the run fails.
	ActionBlock Action = "block"
	// ActionReview: the work is pushed and bumper/gates fails until a person approves.
	ActionReview Action = "review"
)

// Valid reports whether a is block or review.
func (a Action) Valid() bool { return a == ActionBlock || a == ActionReview }

// Finding is one thing a gate found. Message never holds a secret: it is masked.
type Finding struct {
	Gate Gate `json:"gate"`
	// File is the repository path, or for a text Bumper would post its name
	// ("commit message 1a2b3c4d5e6f", "decisions.json", "replies.json").
	File string `json:"file"`
	// Line is 1-based in the new file (or the text); 0 when the finding is the file itself.
	Line    int    `json:"line"`
	Action  Action `json:"action"`
	Message string `json:"message"`
}

// Where is the finding's place as people read it: file:line.
func (f Finding) Where() string {
	if f.Line > 0 {
		return fmt.Sprintf("%s:%d", f.File, f.Line)
	}
	return f.File
}

// Dependency is an added or changed dependency of a manifest or lock file.
type Dependency struct {
	// Ecosystem is OSV's name for it: Go, npm, PyPI, crates.io.
	Ecosystem string `json:"ecosystem"`
	Name      string `json:"name"`
	// Version is the version OSV was asked about: the exact one, or a range's lowest;
	// empty when the line names none (then OSV is not asked).
	Version string `json:"version,omitempty"`
	File    string `json:"file"`
	Line    int    `json:"line"`
	// Advisories are OSV's ids for it (GHSA-…, GO-…), when OSV was reached.
	Advisories []string `json:"advisories,omitempty"`
}

// OSV says how the dependencies were checked.
type OSV struct {
	URL string `json:"url"`
	// Checked is true when OSV answered for every dependency with a version.
	Checked bool `json:"checked"`
	// Error says why not, when it did not.
	Error string `json:"error,omitempty"`
}

// Result is what the gates found over one run's output: what the evidence and the
// attestation carry, and what the runner acts on.
type Result struct {
	Findings     []Finding    `json:"findings"`
	Dependencies []Dependency `json:"dependencies"`
	// OSV is nil when there was no dependency to look up.
	OSV *OSV `json:"osv,omitempty"`
	// Omitted counts the findings and dependencies left out past MaxFindings and
	// MaxDependencies (blocking findings are kept first).
	OmittedFindings     int `json:"omitted_findings,omitempty"`
	OmittedDependencies int `json:"omitted_dependencies,omitempty"`

	// secrets are the secrets the secrets gate found, as found: never in the evidence.
	secrets []string
}

// Secrets are the secrets the secrets gate found, each once, in full: what the caller
// must mask wherever it writes (MaskFound) and never write itself.
func (r *Result) Secrets() []string { return r.secrets }

// Bounds of a Result, as the evidence holds it; a message is at most MaxMessage bytes.
const (
	MaxFindings     = 500
	MaxDependencies = 1000
	MaxMessage      = 1000
	// MaxName bounds a file's or a dependency's name.
	MaxName = 4096
)

// Blocking are the findings whose action is block.
func (r *Result) Blocking() []Finding { return r.with(ActionBlock) }

// ForReview are the findings whose action is review.
func (r *Result) ForReview() []Finding { return r.with(ActionReview) }

func (r *Result) with(a Action) []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.Action == a {
			out = append(out, f)
		}
	}
	return out
}

// Summary is one line per finding, at most max of them, for a run's reason or a
// check run's text.
func Summary(fs []Finding, max int) string {
	var b strings.Builder
	for i, f := range fs {
		if i == max {
			fmt.Fprintf(&b, "; and %d more", len(fs)-max)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s at %s: %s", f.Gate, f.Where(), f.Message)
	}
	return b.String()
}

// Text is something Bumper would post for the agent: its name and body.
type Text struct {
	Name string
	Body string
}

// Commit is one commit the run would publish.
type Commit struct {
	SHA     string
	Message string
}

// Input is what would be published.
type Input struct {
	// Files is the diff, as ParseDiff reads it.
	Files []File
	// Commits are the commits to publish, with the messages they carry.
	Commits []Commit
	// Texts are what Bumper posts for the agent (its decision ledger, its replies).
	Texts []Text
	// Locks are the lock files the diff changes (IsLockFile), whole at base and head;
	// one the diff changes and Locks lacks is a finding: its pins were not checked.
	Locks []Lock
}

// Rule protects paths: a change to a file any of whose Paths matches is a finding
// with Action.
type Rule struct {
	Paths  []string
	Action Action
}

// DefaultOSVURL is OSV's public API.
const DefaultOSVURL = "https://api.osv.dev"

// Config is the repository's settings for the gates.
type Config struct {
	// Protected are the protected-path rules; nil means DefaultProtected. An empty,
	// non-nil list protects no path.
	Protected []Rule
	// Allowlist is the repository's allowlist (hostpattern entries): links to these
	// hosts are not findings. GitHubHost (github.com by default) is always allowed.
	Allowlist  []string
	GitHubHost string
	// OSVURL is OSV's base URL (DefaultOSVURL when empty); HTTPClient asks it.
	OSVURL     string
	HTTPClient *http.Client
	// Actions overrides a gate's default action (secrets block, dependencies review,
	// links review; protected paths take their rule's).
	Actions map[Gate]Action
}

// ActionOf is what gate g's findings do under c: its override, else the default.
func (c Config) ActionOf(g Gate) Action {
	if a, ok := c.Actions[g]; ok && a.Valid() {
		return a
	}
	if g == GateSecrets {
		return ActionBlock
	}
	return ActionReview
}

// Check runs the four gates over in. Only the OSV lookup can fail, and its failure is a
// finding (OSV.Error says why), never an error: what was not checked is said.
func Check(ctx context.Context, in Input, cfg Config) *Result {
	r := &Result{Findings: []Finding{}, Dependencies: []Dependency{}}
	found, secrets := scanSecrets(in, cfg.ActionOf(GateSecrets))
	r.Findings, r.secrets = append(r.Findings, found...), secrets
	r.Findings = append(r.Findings, protectedPaths(in.Files, cfg)...)
	r.Findings = append(r.Findings, outboundLinks(in, cfg)...)
	var unread []Finding
	r.Dependencies, unread = dependencies(in.Files, in.Locks, cfg.ActionOf(GateDependencies))
	r.Findings = append(r.Findings, unread...)
	if len(r.Dependencies) > 0 {
		r.OSV, r.Findings = checkOSV(ctx, cfg, r.Dependencies, r.Findings)
	}
	sort.SliceStable(r.Findings, func(i, j int) bool {
		a, b := r.Findings[i], r.Findings[j]
		if a.Action != b.Action {
			return a.Action == ActionBlock
		}
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Line < b.Line
	})
	if n := len(r.Findings); n > MaxFindings {
		r.Findings, r.OmittedFindings = r.Findings[:MaxFindings], n-MaxFindings
	}
	if n := len(r.Dependencies); n > MaxDependencies {
		r.Dependencies, r.OmittedDependencies = r.Dependencies[:MaxDependencies], n-MaxDependencies
	}
	for i := range r.Findings {
		f := &r.Findings[i]
		// A file may be named with a secret: no finding quotes it.
		f.File, _ = MaskText(f.File)
		f.Message, f.File = textcut.Fit(f.Message, MaxMessage, textcut.Ellipsis), textcut.Fit(f.File, MaxName, textcut.Ellipsis)
	}
	for i := range r.Dependencies {
		d := &r.Dependencies[i]
		d.Name, d.Version, d.File = textcut.Fit(d.Name, MaxName, textcut.Ellipsis), textcut.Fit(d.Version, 200, textcut.Ellipsis), textcut.Fit(d.File, MaxName, textcut.Ellipsis)
	}
	return r
}
