package wire

import "time"

// The conversation on the pull request: what a revise or update round is given (in
// Task), what reaches a run while it works (/steer, through ShouldStop), and what the
// runner reports back about it (in Evidence). The App decides what is taken and what is
// left out; the runner renders it for the agent and records it in the evidence.

// Kinds of ReviewComment.
const (
	// ReviewKindInline is a review comment on a line of the diff (it has Path and Line).
	ReviewKindInline = "inline"
	// ReviewKindReview is the body of a submitted review.
	ReviewKindReview = "review"
	// ReviewKindRevise is a /revise comment on the pull request, the text after the
	// command.
	ReviewKindRevise = "revise"
	// ReviewKindFinding is one finding of Bumper's reviewer, when the repository turns
	// reviewer.revise_on_findings on.
	ReviewKindFinding = "finding"
)

// ReviewComment is one writer's word a revise round answers, as GitHub holds it.
type ReviewComment struct {
	// ID is GitHub's id of the comment (a review comment's, a review's or an issue
	// comment's, by Kind); 0 for a finding.
	ID   int64  `json:"id"`
	Kind string `json:"kind"`
	// Author is the writer's login; for a finding, Bumper's reviewer ("bumper").
	Author    string    `json:"author"`
	CreatedAt time.Time `json:"created_at"`
	Body      string    `json:"body"`
	// Path, Line, StartLine and Side place an inline comment or a finding on the diff
	// (Side RIGHT for the head's line, LEFT for a removed one); DiffHunk is the hunk
	// GitHub showed above it.
	Path      string `json:"path,omitempty"`
	Line      int    `json:"line,omitempty"`
	StartLine int    `json:"start_line,omitempty"`
	Side      string `json:"side,omitempty"`
	DiffHunk  string `json:"diff_hunk,omitempty"`
	// ThreadID is the id of the thread's first comment, which a reply answers
	// (POST /repos/{owner}/{repo}/pulls/{n}/comments/{ThreadID}/replies); 0 when the
	// comment is in no thread (a review's body, a /revise comment, a finding).
	ThreadID int64 `json:"thread_id,omitempty"`
	// Thread is the earlier comments of the thread this one answers, oldest first, as
	// far as they may reach the agent (writers' words and Bumper's own replies).
	Thread []ThreadComment `json:"thread,omitempty"`
}

// ThreadComment is an earlier comment of a review thread.
type ThreadComment struct {
	ID        int64     `json:"id"`
	Author    string    `json:"author"`
	CreatedAt time.Time `json:"created_at"`
	Body      string    `json:"body"`
}

// LeftOut is a comment on the pull request that did not reach the agent, and why: the
// evidence lists each.
type LeftOut struct {
	ID     int64  `json:"id"`
	Author string `json:"author"`
	// Association is GitHub's author_association (OWNER, MEMBER, COLLABORATOR,
	// CONTRIBUTOR, NONE, …), for the reader of the evidence; permission decides.
	Association string `json:"association,omitempty"`
	// Reason is one of the LeftOut* reasons.
	Reason string `json:"reason"`
}

// Why a comment was left out.
const (
	LeftOutNotWriter = "not-writer" // its author has no write permission
	LeftOutBot       = "bot"        // a bot's, Bumper's own reviewer included
	LeftOutEdited    = "edited"     // edited after the review was submitted
	LeftOutTooMany   = "too-many"   // past what one round takes (MaxReviewComments)
)

// MaxReviewComments bounds the comments one round answers; the rest wait for the next
// round, and the round's task says so.
const MaxReviewComments = 50

// Steer is a writer's /steer: words for the agent while it works. Text is the comment
// after the command.
type Steer struct {
	ID        int64     `json:"id"` // the comment's id
	Author    string    `json:"author"`
	CreatedAt time.Time `json:"created_at"`
	Text      string    `json:"text"`
}

// MaxSteerText bounds a steer's text, in bytes.
const MaxSteerText = 8 << 10

// SteerDelivery is what became of one steer in a run, for the evidence and for serve:
// delivered steers are done; the others are kept for the next round.
type SteerDelivery struct {
	ID int64 `json:"id"`
	// DeliveredAt is when the agent got it; zero when it did not (the harness cannot
	// take words mid-run, or the run ended first).
	DeliveredAt time.Time `json:"delivered_at,omitzero"`
	// Note says why it was not delivered.
	Note string `json:"note,omitempty"`
}

// Reply is the agent's answer to one review thread (/out/replies.json, schema
// replies-v1), posted by the runner as the App after the round's push, as text.
type Reply struct {
	// ThreadID is the ReviewComment.ThreadID it answers.
	ThreadID int64 `json:"thread_id"`
	// Changed says the round changed the code for it ("Changed in <sha>: …"); false is
	// "Not changed: …".
	Changed bool   `json:"changed"`
	Body    string `json:"body"`
}
