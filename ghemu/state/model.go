package state

import (
	"slices"
	"strings"
	"time"
)

// The world's records: everything GitHub would keep. They are plain values with
// exported fields, read and written inside Store.Do (doc.go); the collections that hold
// them (a repository's issues, the world's users, …) are the World's and the Repo's,
// reached through their methods. The JSON tags are the state file's format: a state
// directory written by an older emulator must still load.

// App is the one GitHub App the emulator hosts.
type App struct {
	ID            int64             `json:"id"`
	Slug          string            `json:"slug"`
	Name          string            `json:"name"`
	Owner         string            `json:"owner"`
	ClientID      string            `json:"client_id"`
	WebhookURL    string            `json:"webhook_url"`
	WebhookSecret string            `json:"webhook_secret"`
	Permissions   map[string]string `json:"permissions"`
	Events        []string          `json:"events"`
	CreatedAt     time.Time         `json:"created_at"`
	// SetupURL is where GitHub sends the browser once the App is installed (the
	// manifest's setup_url), with installation_id and setup_action; empty: the
	// installation's settings page.
	SetupURL string `json:"setup_url,omitempty"`
	// Public Apps can be installed on any account; a private one (the default) only on
	// its owner's.
	Public bool `json:"public,omitempty"`
}

// User is a GitHub account: a person (type User), an organization, or an App's bot.
type User struct {
	ID    int64  `json:"id"`
	Login string `json:"login"`
	Type  string `json:"type"` // User, Organization, Bot
	Name  string `json:"name,omitempty"`
	Email string `json:"email,omitempty"`
	// Token is the user's personal access token; empty for organizations and bots.
	Token string `json:"token,omitempty"`
}

// Installation is the App installed on an account, for all or some of its repositories.
type Installation struct {
	ID          int64             `json:"id"`
	Account     string            `json:"account"`
	AllRepos    bool              `json:"all_repos"`
	RepoIDs     []int64           `json:"repo_ids"`
	Permissions map[string]string `json:"permissions"`
	Events      []string          `json:"events"`
	CreatedAt   time.Time         `json:"created_at"`
}

// Token is a one-hour installation access token as minted by
// POST /app/installations/{id}/access_tokens.
type Token struct {
	Value          string            `json:"value"`
	InstallationID int64             `json:"installation_id"`
	RepoIDs        []int64           `json:"repo_ids"` // nil: every repository of the installation
	Permissions    map[string]string `json:"permissions"`
	ExpiresAt      time.Time         `json:"expires_at"`
	Revoked        bool              `json:"revoked"`
}

// Protection is the subset of branch protection the emulator enforces: direct pushes
// to a protected branch are refused, and the listed status checks are required to merge.
type Protection struct {
	RequiredChecks  []string `json:"required_checks"`
	RequiredReviews int      `json:"required_reviews"`
	EnforceAdmins   bool     `json:"enforce_admins"`
	// BypassApps are the slugs of Apps allowed to merge without the approving reviews
	// (bypass_pull_request_allowances.apps); required checks still bind them.
	BypassApps []string `json:"bypass_apps,omitempty"`
	// CheckApps pins required checks to an App (context -> App ID), as GitHub's
	// required_status_checks.checks[].app_id does: only that App's check runs satisfy a
	// pinned check. A check without an entry is satisfied by any check run or commit
	// status of its name.
	CheckApps map[string]int64 `json:"check_apps,omitempty"`
	// Strict is required_status_checks.strict, "Require branches to be up to date before
	// merging": a pull request whose head lacks commits of the base cannot merge. As on
	// GitHub it binds only alongside a required check.
	Strict bool `json:"strict,omitempty"`
	// RequiredSignatures is required_signatures, "Require signed commits": a pull
	// request whose commits are not all verified cannot merge into the branch, and a
	// push that would move it to an unverified commit is refused.
	RequiredSignatures bool `json:"required_signatures,omitempty"`
}

// Verification is what GitHub says of a commit's signature (the verification object
// of a commit). The emulator records one for each commit it signs (created through
// the Git Data API with an installation token, no author or committer of the
// caller's); a commit without one is unsigned.
type Verification struct {
	Verified   bool      `json:"verified"`
	Reason     string    `json:"reason"`
	Signature  string    `json:"signature"`
	Payload    string    `json:"payload"`
	VerifiedAt time.Time `json:"verified_at"`
}

// RequiresUpToDate reports whether the protection holds pull requests to an up-to-date
// head: strict, with at least one required check (GitHub ignores strict without one).
func (p *Protection) RequiresUpToDate() bool {
	return p != nil && p.Strict && len(p.RequiredChecks) > 0
}

// Label is a repository label.
type Label struct {
	ID          int64  `json:"id"`
	Name        string `json:"name"`
	Color       string `json:"color"`
	Description string `json:"description"`
	Default     bool   `json:"default"`
}

// Issue is an issue, or the issue half of a pull request (IsPull).
type Issue struct {
	ID          int64      `json:"id"`
	Number      int        `json:"number"`
	Title       string     `json:"title"`
	Body        string     `json:"body"`
	User        string     `json:"user"`
	State       string     `json:"state"` // open, closed
	StateReason string     `json:"state_reason,omitempty"`
	Labels      []string   `json:"labels"` // lower-case label keys, in the order added
	Assignees   []string   `json:"assignees"`
	Locked      bool       `json:"locked"`
	Comments    int        `json:"comments"`
	IsPull      bool       `json:"is_pull"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	ClosedAt    *time.Time `json:"closed_at,omitempty"`
	ClosedBy    string     `json:"closed_by,omitempty"`
}

// HasLabel reports whether the issue carries the label with key k (Key of its name).
func (i *Issue) HasLabel(k string) bool { return slices.Contains(i.Labels, k) }

// Comment is an issue or pull request comment.
type Comment struct {
	ID          int64     `json:"id"`
	IssueNumber int       `json:"issue_number"`
	User        string    `json:"user"`
	Body        string    `json:"body"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	// ViaApp is set when the comment was made with an installation token: GitHub then
	// reports performed_via_github_app.
	ViaApp bool `json:"via_app"`
}

// Pull is the pull request half of an issue with IsPull set: same number.
type Pull struct {
	Number         int        `json:"number"`
	Head           string     `json:"head"` // branch in the same repository
	Base           string     `json:"base"`
	HeadSHA        string     `json:"head_sha"`
	BaseSHA        string     `json:"base_sha"`
	Draft          bool       `json:"draft"`
	Merged         bool       `json:"merged"`
	MergedAt       *time.Time `json:"merged_at,omitempty"`
	MergedBy       string     `json:"merged_by,omitempty"`
	MergeCommitSHA string     `json:"merge_commit_sha,omitempty"`
	MaintainerMod  bool       `json:"maintainer_can_modify"`
	// Check is the last real merge of the two commits: the pull request's mergeability.
	// Nil, or made for other commits than BaseSHA and HeadSHA, until it is computed
	// again: mergeable is then unknown, as on GitHub while its background job runs.
	Check *MergeCheck `json:"merge_check,omitempty"`
}

// MergeCheck is what merging a pull request's head into its base said.
type MergeCheck struct {
	Base, Head string
	// Conflict: the head does not merge cleanly (mergeable false, "dirty").
	Conflict bool `json:"conflict,omitempty"`
	// Behind: the base has commits the head lacks.
	Behind bool `json:"behind,omitempty"`
}

// Current reports whether the check was made for the pull request's commits now.
func (p *Pull) Current() *MergeCheck {
	if p.Check == nil || p.Check.Base != p.BaseSHA || p.Check.Head != p.HeadSHA {
		return nil
	}
	return p.Check
}

// Review is a pull request review.
type Review struct {
	ID          int64     `json:"id"`
	PullNumber  int       `json:"pull_number"`
	User        string    `json:"user"`
	Body        string    `json:"body"`
	State       string    `json:"state"` // APPROVED, CHANGES_REQUESTED, COMMENTED, PENDING, DISMISSED
	CommitID    string    `json:"commit_id"`
	SubmittedAt time.Time `json:"submitted_at"`
	ViaApp      bool      `json:"via_app"`
	// DismissedBy and DismissMessage say who dismissed the review and why.
	DismissedBy    string `json:"dismissed_by,omitempty"`
	DismissMessage string `json:"dismiss_message,omitempty"`
}

// ReviewComment is an inline comment of a pull request review, anchored on a line of
// the pull request's diff at the commit it was made on.
type ReviewComment struct {
	ID         int64     `json:"id"`
	ReviewID   int64     `json:"review_id"`
	PullNumber int       `json:"pull_number"`
	User       string    `json:"user"`
	Body       string    `json:"body"`
	Path       string    `json:"path"`
	Line       int       `json:"line"`
	Side       string    `json:"side"`                 // LEFT or RIGHT
	StartLine  int       `json:"start_line,omitempty"` // multi-line comments only
	StartSide  string    `json:"start_side,omitempty"`
	Position   int       `json:"position"` // in the file's diff, the first hunk header being 0
	DiffHunk   string    `json:"diff_hunk"`
	CommitID   string    `json:"commit_id"`
	CreatedAt  time.Time `json:"created_at"`
	// UpdatedAt is when the body was last edited; zero (states saved before edits
	// existed) reads as CreatedAt.
	UpdatedAt time.Time `json:"updated_at,omitzero"`
	// InReplyTo is, on a reply, the thread's first comment: a thread is a first comment
	// and the replies that name it.
	InReplyTo int64 `json:"in_reply_to,omitempty"`
	// Resolved and ResolvedBy are the thread's state, kept on its first comment.
	Resolved   bool   `json:"resolved,omitempty"`
	ResolvedBy string `json:"resolved_by,omitempty"`
}

// Updated is when the comment was last written.
func (c *ReviewComment) Updated() time.Time {
	if c.UpdatedAt.IsZero() {
		return c.CreatedAt
	}
	return c.UpdatedAt
}

// Root is the ID of the first comment of the comment's thread.
func (c *ReviewComment) Root() int64 {
	if c.InReplyTo != 0 {
		return c.InReplyTo
	}
	return c.ID
}

// CheckRun is a check run on a commit.
type CheckRun struct {
	ID          int64          `json:"id"`
	Name        string         `json:"name"`
	HeadSHA     string         `json:"head_sha"`
	Status      string         `json:"status"`
	Conclusion  string         `json:"conclusion,omitempty"`
	ExternalID  string         `json:"external_id"`
	DetailsURL  string         `json:"details_url"`
	StartedAt   time.Time      `json:"started_at"`
	CompletedAt *time.Time     `json:"completed_at,omitempty"`
	Output      CheckRunOutput `json:"output"`
	SuiteID     int64          `json:"suite_id"`
	// AppID and AppSlug are the App that created the run: the emulator's App for an
	// installation token, another App for its bot user's token. Zero only for runs
	// saved before the field existed or when people could create check runs (as
	// GitHub never let them): such a run never satisfies a check pinned to an App.
	AppID   int64  `json:"app_id,omitempty"`
	AppSlug string `json:"app_slug,omitempty"`
}

// CheckRunOutput is what a check run reports.
type CheckRunOutput struct {
	Title   string `json:"title"`
	Summary string `json:"summary"`
	Text    string `json:"text"`
}

// CommitStatus is one commit status (POST /repos/{o}/{r}/statuses/{sha}). Anyone with
// write access can post any context, which is why a required check pinned to an App
// ignores statuses.
type CommitStatus struct {
	ID          int64     `json:"id"`
	SHA         string    `json:"sha"`
	State       string    `json:"state"` // error, failure, pending, success
	Context     string    `json:"context"`
	Description string    `json:"description,omitempty"`
	TargetURL   string    `json:"target_url,omitempty"`
	Creator     string    `json:"creator"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// WorkflowRun is a run created by a workflow_dispatch. Without a local runner the
// emulator runs nothing: tests, the demo or an outside runner move it from queued to
// completed through the control API. With one, the runner executes it (package
// actions).
type WorkflowRun struct {
	ID           int64  `json:"id"`
	Number       int    `json:"number"`
	WorkflowID   int64  `json:"workflow_id"`
	WorkflowPath string `json:"workflow_path"`
	WorkflowName string `json:"workflow_name"`
	// Title is the run's display_title: its workflow's run-name, filled in.
	Title      string            `json:"title,omitempty"`
	Ref        string            `json:"ref"`
	HeadSHA    string            `json:"head_sha"`
	Event      string            `json:"event"`
	Actor      string            `json:"actor"`
	Inputs     map[string]string `json:"inputs"`
	Status     string            `json:"status"` // queued, in_progress, completed
	Conclusion string            `json:"conclusion,omitempty"`
	JobID      int64             `json:"job_id"`
	RunnerName string            `json:"runner_name,omitempty"`
	CreatedAt  time.Time         `json:"created_at"`
	UpdatedAt  time.Time         `json:"updated_at"`
	StartedAt  time.Time         `json:"started_at"`
	// OIDCRequestToken lets the run fetch Actions-style OIDC ID tokens, as
	// ACTIONS_ID_TOKEN_REQUEST_TOKEN does on GitHub's runners.
	OIDCRequestToken string `json:"oidc_request_token"`

	// What the workflow file says of its (first) job, read at dispatch.
	Job            string  `json:"job,omitempty"`             // the job's id (GITHUB_JOB); "" means "run"
	TimeoutMinutes float64 `json:"timeout_minutes,omitempty"` // jobs.<id>.timeout-minutes; 0: GitHub's 360
	IDToken        bool    `json:"id_token,omitempty"`        // permissions grant id-token: write

	// Set when the emulator's local runner took the run.
	LocalRunner bool              `json:"local_runner,omitempty"`
	Dir         string            `json:"dir,omitempty"`       // the run's directory: job.log, summary.md, _work/
	ExitCode    *int              `json:"exit_code,omitempty"` // the command's; 128+n when killed by signal n
	Outputs     map[string]string `json:"outputs,omitempty"`   // from GITHUB_OUTPUT
}

// JobName is the run's job id, as GITHUB_JOB and the job's name give it.
func (r *WorkflowRun) JobName() string {
	if r.Job == "" {
		return "run"
	}
	return r.Job
}

// Delivery is one webhook delivery attempt, kept so failed ones can be redelivered.
type Delivery struct {
	ID           int64             `json:"id"`
	GUID         string            `json:"guid"`
	Event        string            `json:"event"`
	Action       string            `json:"action"`
	Installation int64             `json:"installation_id"`
	RepoID       int64             `json:"repository_id"`
	Payload      []byte            `json:"payload"`
	Headers      map[string]string `json:"headers"`
	StatusCode   int               `json:"status_code"`
	Status       string            `json:"status"`
	DeliveredAt  time.Time         `json:"delivered_at"`
	Duration     float64           `json:"duration"`
	Redelivery   bool              `json:"redelivery"`
	Response     string            `json:"response"`
}

// Failed reports whether the attempt did not get a 2xx.
func (d *Delivery) Failed() bool { return d.StatusCode < 200 || d.StatusCode >= 300 }

// ManifestCode is a code of the App manifest flow: exchanged once, within the hour,
// for the App's credentials.
type ManifestCode struct {
	AppID         int64     `json:"app_id"`
	PEM           string    `json:"pem"`
	ClientSecret  string    `json:"client_secret"`
	WebhookSecret string    `json:"webhook_secret"`
	ExpiresAt     time.Time `json:"expires_at"`
}

// Key is the form names are compared and stored under: logins, repository names and
// label names are case-insensitive on GitHub.
func Key(s string) string { return strings.ToLower(s) }
