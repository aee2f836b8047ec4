package ledger

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/revision"
)

// SchemaVersion is the version of the machine record this code writes. Decoding accepts
// only this version: version 1 records were unsigned and kept 64-bit hashes, so they are
// not trusted (see Sealer.Decode).
const SchemaVersion = 2

// Record is the machine record of one work item, kept in the issue's status comment.
type Record struct {
	Schema     int    `json:"schema"`
	Revision   int64  `json:"revision"` // incremented on every write
	Repository string `json:"repository"`
	Issue      int    `json:"issue"`
	State      State  `json:"state"`
	Requester  string `json:"requester"`
	// SpecRevision is the hash of the issue's title and body (see SpecRevision).
	SpecRevision string `json:"spec_revision"`
	// SpecNotice tells the approver what the rendered issue hides from them but not
	// from the agent (HTML comments, invisible characters, misleading links), escaped
	// for display; empty when nothing is hidden. It is computed with SpecRevision. The
	// status comment holds it once, in its human part just above the record, whose JSON
	// names it by length and digest (see Sealer.Encode).
	SpecNotice string `json:"-"`
	// SpecChange says when the title or body last changed after the item was requested,
	// by whom and what changed: a bare /approve soon after it is refused.
	SpecChange *SpecChange `json:"spec_change,omitempty"`
	BaseBranch string      `json:"base_branch"`
	BaseCommit string      `json:"base_commit"`
	// PlanRevision is the hash of the plan the plan run posted; empty without plans.
	PlanRevision string `json:"plan_revision,omitempty"`
	// PlanComment is the bot's comment that holds the plan, re-read when credentials
	// are minted.
	PlanComment   int64      `json:"plan_comment,omitempty"`
	PolicyVersion string     `json:"policy_version"`
	Approvals     []Approval `json:"approvals"`
	Attempts      []Attempt  `json:"attempts"`
	PullRequest   int        `json:"pull_request,omitempty"`
	// WorkBranch and PullHead are the pull request's branch and the head Bumper last
	// pushed to it (and checked): fix and review runs start from exactly that head.
	WorkBranch string `json:"work_branch,omitempty"`
	PullHead   string `json:"pull_head,omitempty"`
	// Verdict is the last review run's verdict, as posted.
	Verdict *Verdict `json:"verdict,omitempty"`
	// HumanPush is set once someone other than Bumper pushed to the work branch: Bumper
	// pushes there again only once a writer comments /revise, which takes the branch
	// back at its new head.
	HumanPush *HumanPush `json:"human_push,omitempty"`
	// Pending are the writers' words (and, by choice, the reviewer's findings) waiting
	// for the next revise round, oldest first: they came while a run worked.
	Pending []Input `json:"pending,omitempty"`
	// Steers are the writers' /steer words no run has reported delivered yet.
	Steers []SteerRef `json:"steers,omitempty"`
	// BaseMoved is the base branch's head a push brought while a run worked: once the
	// pull request is back in review, the App looks at whether it still merges.
	BaseMoved string `json:"base_moved,omitempty"`
	// Updating is GitHub's update of the branch the App asked for, until its new head
	// comes back.
	Updating *BranchUpdate `json:"updating,omitempty"`
	// BranchUpdates counts the App's updates of the pull request's branch through
	// GitHub's update-branch: they count against bounds.update_rounds with the update
	// rounds.
	BranchUpdates int `json:"branch_updates,omitempty"`
	// Protection says what the base branch's protection does not enforce (no required
	// review, or the App may bypass it); empty when it does, or was not checked.
	Protection string `json:"protection,omitempty"`
	AuditHead  string `json:"audit_head,omitempty"`
	// Queue is where the item's dispatched run waits for a runner, while it does.
	Queue *QueuePlace `json:"queue,omitempty"`
	// SlotWait says the current attempt's run waits for a VM slot on its runner host,
	// since when: until the run says it no longer does or reports its next step.
	SlotWait *SlotWait `json:"slot_wait,omitempty"`
	// Paused names what paused the item's run (serve's configuration, the repository's
	// file): the item waits, its approval kept, and starts again once unpaused. Empty
	// when nothing holds it.
	Paused string `json:"paused,omitempty"`
	// Reason says why the item is failed, stopped, in error or was sent back.
	Reason    string    `json:"reason,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
	// Deliveries are the last webhook deliveries that changed the record, so a delivery
	// redelivered after a restart (when the in-memory index is empty) changes nothing.
	Deliveries []string `json:"deliveries,omitempty"`
}

// Verdict is a review run's verdict as the App posted it.
type Verdict struct {
	Attempt int `json:"attempt"`
	// Head is the commit the review judged.
	Head string `json:"head"`
	// Verdict and Confidence are the reviewer's; empty when its verdict was invalid or
	// missing (Problem says why).
	Verdict    string  `json:"verdict,omitempty"`
	Confidence float64 `json:"confidence,omitempty"`
	Findings   int     `json:"findings,omitempty"`
	// Digest is the SHA-256 of verdict.json as the reviewer wrote it.
	Digest  string `json:"digest,omitempty"`
	Problem string `json:"problem,omitempty"`
	// Passed is the bumper/verdict check's conclusion: success or not.
	Passed     bool  `json:"passed"`
	CheckRunID int64 `json:"check_run_id,omitempty"`
	ReviewID   int64 `json:"review_id,omitempty"`
}

// HumanPush is a push to the work branch by someone other than Bumper.
type HumanPush struct {
	By   string    `json:"by"`
	At   time.Time `json:"at"`
	Head string    `json:"head"`
}

// SpecChange is the last edit of an issue's title or body that the App saw.
type SpecChange struct {
	At time.Time `json:"at"`
	By string    `json:"by"`
	// What names what changed: "title", "body" or "title and body".
	What string `json:"what"`
	// From is the revision before the change.
	From string `json:"from"`
}

// maxDeliveries bounds Deliveries.
const maxDeliveries = 16

// Handled reports whether a delivery already changed the record.
func (r *Record) Handled(delivery string) bool {
	for _, d := range r.Deliveries {
		if d == delivery && d != "" {
			return true
		}
	}
	return false
}

// NoteDelivery remembers that a delivery changed the record.
func (r *Record) NoteDelivery(delivery string) {
	if delivery == "" || r.Handled(delivery) {
		return
	}
	r.Deliveries = append(r.Deliveries, delivery)
	if n := len(r.Deliveries); n > maxDeliveries {
		r.Deliveries = append([]string(nil), r.Deliveries[n-maxDeliveries:]...)
	}
}

// Approval is one /approve that the App accepted: the approval as a run is dispatched
// under it (wire.Approval, whose Revision is the ApprovalRevision it authorizes, and
// which the runner and the evidence show), and whether it still holds. Its JSON is
// wire.Approval's fields and "voided".
type Approval struct {
	wire.Approval
	// Voided says why the approval no longer holds; empty while it does.
	Voided string `json:"voided,omitempty"`
}

// Attempt is one dispatched run of the work item.
type Attempt struct {
	Number int        `json:"number"`
	Stage  wire.Stage `json:"stage"`
	// Revision is the approval revision the run was dispatched for.
	Revision string `json:"revision"`
	// NonceHash is the SHA-256 of the single-use nonce; the nonce itself is never stored.
	NonceHash string `json:"nonce_hash"`
	NonceUsed bool   `json:"nonce_used,omitempty"`
	RunID     int64  `json:"run_id,omitempty"`
	Runner    string `json:"runner,omitempty"`
	// RunnerAt is when a runner took the run (its workflow run in progress): the run's
	// duration, for the queue's estimates, is from here to EndedAt.
	RunnerAt     time.Time `json:"runner_at,omitzero"`
	ImageDigest  string    `json:"image_digest,omitempty"`
	StartedAt    time.Time `json:"started_at"`
	EndedAt      time.Time `json:"ended_at,omitzero"`
	Outcome      string    `json:"outcome,omitempty"`
	CostMicroUSD int64     `json:"cost_micro_usd,omitempty"`
	// ReservedMicroUSD is the model budget the run was granted at its exchange: what
	// it counts against the work item's budget until its runner reports its cost, and
	// for good when it never does (a crash: the proxy may have spent all of it).
	ReservedMicroUSD int64 `json:"reserved_micro_usd,omitempty"`
	// SpendDay is the UTC day (2006-01-02) whose counters hold the run's grant, when
	// serve's daily limits are on: its cost settles there, whenever it ends.
	SpendDay       string `json:"spend_day,omitempty"`
	EvidenceDigest string `json:"evidence_digest,omitempty"`
	// HeadCommit is the commit the run pushed to its work branch, as the runner
	// reported it; the work item's pull request must have exactly this head.
	HeadCommit string `json:"head_commit,omitempty"`
	// RunOutcome and RunReason are how the runner says the run ended, and why: the
	// reason a failed attempt gives when its workflow run completes.
	RunOutcome string `json:"run_outcome,omitempty"`
	RunReason  string `json:"run_reason,omitempty"`
	// FixChecks are, for a fix run, the required checks that failed on the head it
	// starts from: its task.
	FixChecks []string `json:"fix_checks,omitempty"`
	// Inputs are, for a revise run, what it answers; the record keeps them for the
	// latest attempt only (the run's evidence keeps them for good).
	Inputs []Input `json:"inputs,omitempty"`
	// UpdateTo is, for an update run, the base branch's head it merges.
	UpdateTo string `json:"update_to,omitempty"`
}

// ID names a work item: "owner/repo#issue" (wire.WorkItem's String, the one way it is
// written).
func ID(repository string, issue int) string {
	return wire.WorkItem{Repository: repository, Issue: issue}.String()
}

// ID is the work item's name.
func (r *Record) ID() string { return ID(r.Repository, r.Issue) }

// WorkItem is the work item the record is of.
func (r *Record) WorkItem() wire.WorkItem {
	return wire.WorkItem{Repository: r.Repository, Issue: r.Issue}
}

// SpecRevision is the hash of what the requester asked for. Title and body are
// length-prefixed so that moving text between them changes the hash.
func SpecRevision(title, body string) string {
	body = normalizeNewlines(body)
	return ContentRevision(fmt.Appendf(nil, "title %d\n%s\nbody %d\n%s", len(title), title, len(body), body))
}

// TextRevision is the revision of what an approver reads: the issue's title and body,
// and the plan when there is one. Its short form (Sealer.ShortID) is the id that
// `/approve ID` names.
func (r *Record) TextRevision() string {
	return ContentRevision(fmt.Appendf(nil, "spec %s\nplan %s\n", r.SpecRevision, r.PlanRevision))
}

// ApprovalRevision is what an /approve binds to: the spec, the plan, the base commit
// and the repository's policy. A change to any of them voids the approval.
func (r *Record) ApprovalRevision() string {
	return ContentRevision(fmt.Appendf(nil, "spec %s\nplan %s\nbase %s\npolicy %s\n",
		r.SpecRevision, r.PlanRevision, r.BaseCommit, r.PolicyVersion))
}

// ContentRevision is the form every revision in the record takes (see
// internal/revision): full-length, never truncated.
func ContentRevision(content []byte) string { return revision.Of(content) }

// IsRevision reports whether s is a full-length revision as ContentRevision makes it.
func IsRevision(s string) bool { return revision.Valid(s) }

// normalizeNewlines keeps a browser's CRLF from voiding an approval on a no-op edit.
func normalizeNewlines(s string) string { return strings.ReplaceAll(s, "\r\n", "\n") }

// ActiveApproval is the approval that holds for the current revision, if any.
func (r *Record) ActiveApproval() *Approval {
	rev := r.ApprovalRevision()
	for i := len(r.Approvals) - 1; i >= 0; i-- {
		a := &r.Approvals[i]
		if a.Voided == "" && a.Revision == rev {
			return a
		}
	}
	return nil
}

// VoidApprovals marks every holding approval void with the reason and reports whether
// any was.
func (r *Record) VoidApprovals(reason string) bool {
	voided := false
	for i := range r.Approvals {
		if r.Approvals[i].Voided == "" {
			r.Approvals[i].Voided = reason
			voided = true
		}
	}
	return voided
}

// CurrentAttempt is the latest attempt, or nil before the first dispatch.
func (r *Record) CurrentAttempt() *Attempt {
	if len(r.Attempts) == 0 {
		return nil
	}
	return &r.Attempts[len(r.Attempts)-1]
}

// AttemptsOfStage counts the attempts of one stage: the bound on attempts applies to
// implementation runs, not to plans.
func (r *Record) AttemptsOfStage(stage wire.Stage) int {
	n := 0
	for _, a := range r.Attempts {
		if a.Stage == stage {
			n++
		}
	}
	return n
}

// MoveTo changes the state through the transition table and records the reason.
func (r *Record) MoveTo(to State, reason string) error {
	if err := Transition(r.State, to); err != nil {
		return fmt.Errorf("failed to move %s: %w", r.ID(), err)
	}
	r.State, r.Reason = to, reason
	return nil
}

// Clone returns a deep copy, so callers can change a record and keep the original
// until the write to GitHub succeeds.
func (r *Record) Clone() *Record {
	c := *r
	c.Approvals = slices.Clone(r.Approvals)
	c.Attempts = slices.Clone(r.Attempts)
	c.Deliveries = slices.Clone(r.Deliveries)
	if r.SpecChange != nil {
		sc := *r.SpecChange
		c.SpecChange = &sc
	}
	for i := range c.Attempts {
		c.Attempts[i].FixChecks = slices.Clone(r.Attempts[i].FixChecks)
		c.Attempts[i].Inputs = slices.Clone(r.Attempts[i].Inputs)
	}
	c.Pending = slices.Clone(r.Pending)
	c.Steers = slices.Clone(r.Steers)
	if r.Updating != nil {
		u := *r.Updating
		c.Updating = &u
	}
	if r.Verdict != nil {
		v := *r.Verdict
		c.Verdict = &v
	}
	if r.HumanPush != nil {
		h := *r.HumanPush
		c.HumanPush = &h
	}
	return &c
}

// SlotWait is a run waiting for a VM slot on its runner host: which attempt's, and
// since when (serve's clock).
type SlotWait struct {
	Attempt int       `json:"attempt"`
	Since   time.Time `json:"since"`
}

// QueuePlace is a dispatched run's place among the repository's Bumper runs waiting for
// a runner, and when it may start.
type QueuePlace struct {
	Position int `json:"position"` // 1: next
	Of       int `json:"of"`
	// Estimate is how long until it starts, from the repository's recent run
	// durations (zero: no run to go by yet); At is when the place was worked out.
	Estimate time.Duration `json:"estimate_ns,omitempty"`
	At       time.Time     `json:"at"`
}
