package attest

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/bumperdev/bumper/internal/revision"
)

// PredicateType names Bumper's predicate, version 1 (docs/evidence.md, "Attested
// evidence"). It is an identifier, not a page to fetch; a change a v1 reader would
// misread gets a new version.
const PredicateType = "https://bumper.dev/evidence/v1"

// Predicate is what serve attests of a run, besides its subjects (the head commit and
// evidence.json). The fields outside RunnerClaims come from serve's own record of the
// work item (what serve checked itself); RunnerClaims is what the runner on the host
// reported under the run's token, which serve signs as the runner's claims, not as facts
// it checked. Verification decodes the predicate strictly: an unknown field is refused.
type Predicate struct {
	// WorkItem is "owner/repo#issue"; the commit subject is of that repository.
	WorkItem string `json:"work_item"`
	// Stage is what the run was dispatched to do (implement, fix, revise, update, …).
	Stage   string `json:"stage"`
	Attempt int    `json:"attempt"`
	// Approval is the approval the run was dispatched under.
	Approval Approval `json:"approval"`
	// PolicyVersion is the revision of .github/bumper.yml at the base commit ("default"
	// when the repository has none).
	PolicyVersion string `json:"policy_version"`
	BaseCommit    string `json:"base_commit"`
	// RunnerClaims are the runner's, named so: serve cannot check them.
	RunnerClaims Claims `json:"runner_claims"`
	// AttestedAt is when serve signed, in UTC, whole seconds.
	AttestedAt time.Time `json:"attested_at"`
}

// Approval is the approved revision (issue text, plan, base commit and policy, bound
// together) and who approved it.
type Approval struct {
	Revision  string     `json:"revision"`
	Approvers []Approver `json:"approvers"`
}

// Approver is one writer's /approve of the revision.
type Approver struct {
	Login     string    `json:"login"`
	At        time.Time `json:"at"`
	CommentID int64     `json:"comment_id"`
}

// Claims is what the runner reported of its run: the image it booted, the harness, the
// verification of the head, the gates over what it published, and the firewall's
// metered cost.
type Claims struct {
	ImageDigest string `json:"image_digest"`
	// EnvironmentDigest is the key of the repository's environment (the digest of what
	// its image is made from); "" when the repository declares none.
	EnvironmentDigest string  `json:"environment_digest"`
	Harness           Harness `json:"harness"`
	// Verification is passed, failed or not_run.
	Verification string `json:"verification"`
	// Gates are the output gates' results (docs/attestation.md). Optional: empty while
	// the runner reports none, which says that no gate ran, never that the gates passed.
	Gates        []Gate `json:"gates,omitempty"`
	CostMicroUSD int64  `json:"cost_micro_usd"`
}

// Harness is the agent adapter and its pinned release ("" for the command harness); its
// name is empty when no agent round ran.
type Harness struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Gate is one output gate's result over what the run published.
type Gate struct {
	// Gate names it: secrets, protected_paths, dependencies, outbound_links, …
	Gate string `json:"gate"`
	// Result is pass, review (published; a person must look), block (nothing was
	// published) or unavailable (the gate could not decide, say OSV out of reach).
	Result   string `json:"result"`
	Findings int    `json:"findings"`
}

// The verification outcomes and gate results a predicate may hold.
var (
	Verifications = []string{"passed", "failed", "not_run"}
	GateResults   = []string{"pass", "review", "block", "unavailable"}
)

// Bounds of a predicate, which keep an envelope far below MaxEnvelopeBytes.
const (
	maxApprovers = 100
	maxGates     = 32
	maxFindings  = 1_000_000
	// maxCost keeps the cost exact through the Statement's JSON numbers (doubles).
	maxCost = 1 << 53
)

var (
	workItemRE = regexp.MustCompile(`^([A-Za-z0-9-]{1,39}/[A-Za-z0-9._-]{1,100})#([1-9][0-9]{0,9})$`)
	loginRE    = regexp.MustCompile(`^[A-Za-z0-9-]{1,39}(\[bot\])?$`)
	wordRE     = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,63}$`)
	versionRE  = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z.+-]{0,63}$`)
)

// Repository is the work item's repository, owner/repo ("" when the work item is not
// well formed).
func (p *Predicate) Repository() string {
	m := workItemRE.FindStringSubmatch(p.WorkItem)
	if m == nil {
		return ""
	}
	return m[1]
}

// Validate checks every field is one serve could have written: well-formed names, full
// hashes, known outcomes, bounds. Serve validates before it signs and the verifier after
// the signature holds.
func (p *Predicate) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if p.Repository() == "" {
		bad("work_item %q is not owner/repo#issue", cut(p.WorkItem))
	}
	if !wordRE.MatchString(p.Stage) {
		bad("stage %q is not a stage's name", cut(p.Stage))
	}
	if p.Attempt < 1 {
		bad("attempt is %d; attempts count from 1", p.Attempt)
	}
	if !revision.Valid(p.Approval.Revision) {
		bad("approval.revision %q is not a full sha256 revision", cut(p.Approval.Revision))
	}
	if len(p.Approval.Approvers) == 0 || len(p.Approval.Approvers) > maxApprovers {
		bad("approval.approvers holds %d approvers; an attested run has 1 to %d", len(p.Approval.Approvers), maxApprovers)
	}
	for i, a := range p.Approval.Approvers {
		if !loginRE.MatchString(a.Login) || a.CommentID < 1 || a.At.IsZero() {
			bad("approval.approvers[%d] needs a GitHub login, the time and the id of the /approve comment", i)
		}
	}
	if p.PolicyVersion != "default" && !revision.Valid(p.PolicyVersion) {
		bad("policy_version %q is neither a full sha256 revision nor \"default\"", cut(p.PolicyVersion))
	}
	if !revision.IsCommitID(p.BaseCommit) {
		bad("base_commit %q is not a full commit id", cut(p.BaseCommit))
	}
	if err := p.RunnerClaims.validate(); err != nil {
		errs = append(errs, err)
	}
	if p.AttestedAt.IsZero() {
		bad("attested_at is missing")
	}
	return errors.Join(errs...)
}

func (r *Claims) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !revision.Valid(r.ImageDigest) {
		bad("runner_claims.image_digest %q is not a full sha256 digest", cut(r.ImageDigest))
	}
	if r.EnvironmentDigest != "" && !revision.Valid(r.EnvironmentDigest) {
		bad("runner_claims.environment_digest %q is neither empty nor a full sha256 digest", cut(r.EnvironmentDigest))
	}
	if r.Harness.Name != "" && !wordRE.MatchString(r.Harness.Name) {
		bad("runner_claims.harness.name %q is not a harness's name", cut(r.Harness.Name))
	}
	if r.Harness.Version != "" && !versionRE.MatchString(r.Harness.Version) {
		bad("runner_claims.harness.version %q is not a release", cut(r.Harness.Version))
	}
	if !slices.Contains(Verifications, r.Verification) {
		bad("runner_claims.verification %q is not one of %v", cut(r.Verification), Verifications)
	}
	if len(r.Gates) > maxGates {
		bad("runner_claims.gates holds %d gates; at most %d", len(r.Gates), maxGates)
	}
	seen := map[string]bool{}
	for i, g := range r.Gates {
		switch {
		case !wordRE.MatchString(g.Gate):
			bad("runner_claims.gates[%d].gate %q is not a gate's name", i, cut(g.Gate))
		case seen[g.Gate]:
			bad("runner_claims.gates[%d]: gate %s twice", i, g.Gate)
		}
		seen[g.Gate] = true
		if !slices.Contains(GateResults, g.Result) {
			bad("runner_claims.gates[%d].result %q is not one of %v", i, cut(g.Result), GateResults)
		}
		if g.Findings < 0 || g.Findings > maxFindings {
			bad("runner_claims.gates[%d].findings is %d; 0 to %d", i, g.Findings, maxFindings)
		}
	}
	if r.CostMicroUSD < 0 || r.CostMicroUSD > maxCost {
		bad("runner_claims.cost_micro_usd is %d; 0 to %d", r.CostMicroUSD, int64(maxCost))
	}
	return errors.Join(errs...)
}
