package evidence

import (
	"github.com/bumperdev/bumper/app/wire"
)

// Bounds of a round's record (the schema says the same).
const (
	// MaxRoundLeftOut bounds the left-out comments listed; the rest are counted.
	MaxRoundLeftOut = 200
	// MaxMergeFiles bounds the conflicted files listed; the rest are counted.
	MaxMergeFiles = 200
)

// Round is a revise or update run's round on the pull request: which round it was, the
// writers' comments it answered and those left out (who, why: never their text), what
// became of the agent's replies, and what an update round merged.
type Round struct {
	// Number is the round on the pull request, from 1 (wire.Task.Round).
	Number int `json:"number"`
	// Answered are the comments the round was given (wire.Task.Review), by id, kind and
	// author; their text is on the pull request.
	Answered []Answered `json:"answered"`
	// LeftOut are the comments of the same reviews that did not reach the agent, and
	// why (the App's wire.LeftOut); at most MaxRoundLeftOut, LeftOutOmitted the rest.
	LeftOut        []wire.LeftOut `json:"left_out"`
	LeftOutOmitted int            `json:"left_out_omitted,omitempty"`
	// Replies is what became of the agent's /out/replies.json: nil for an update round.
	Replies *Replies `json:"replies,omitempty"`
	// Merge is what an update round merged into the pull request's branch: nil for a
	// revise round.
	Merge *Merge `json:"merge,omitempty"`
}

// Answered is one writer's comment a revise round answered.
type Answered struct {
	ID     int64  `json:"id"`
	Kind   string `json:"kind"`
	Author string `json:"author"`
	// ThreadID is the review thread it is in, which a reply answers; 0 for none.
	ThreadID int64 `json:"thread_id,omitempty"`
}

// RepliesStatus says whether the agent's replies.json was there and valid.
type RepliesStatus string

// The replies statuses: an invalid file posts nothing.
const (
	RepliesOK      RepliesStatus = "ok"
	RepliesAbsent  RepliesStatus = "absent"
	RepliesInvalid RepliesStatus = "invalid"
)

// Replies is the agent's replies.json and what the runner posted of it.
type Replies struct {
	Status RepliesStatus `json:"status"`
	// Error says what was wrong with an invalid file.
	Error string `json:"error,omitempty"`
	// Posted are the replies of a valid file, in its order, each with the comment it
	// became or why it could not be posted.
	Posted []PostedReply `json:"posted"`
}

// PostedReply is one of the agent's replies as the runner posted it in its thread.
type PostedReply struct {
	ThreadID int64 `json:"thread_id"`
	// Changed says the reply was "Changed in <sha>" rather than "Not changed".
	Changed bool `json:"changed"`
	// CommentID is the reply's id on GitHub; 0 when it was not posted, and Error says
	// why.
	CommentID int64  `json:"comment_id,omitempty"`
	Error     string `json:"error,omitempty"`
}

// Merge is what an update round merged: the base branch's head To into the pull
// request's branch at From, and whether the merge conflicted (in which files, at most
// MaxMergeFiles, FilesOmitted the rest).
type Merge struct {
	From         string   `json:"from"`
	To           string   `json:"to"`
	Conflicted   bool     `json:"conflicted"`
	Files        []string `json:"files"`
	FilesOmitted int      `json:"files_omitted,omitempty"`
}

// NewRound is the record of a round from its task: its number, the comments it
// answers and those left out (the first MaxRoundLeftOut, the rest counted).
func NewRound(t wire.Task) *Round {
	r := &Round{Number: t.Round, Answered: make([]Answered, 0, len(t.Review)), LeftOut: []wire.LeftOut{}}
	for _, c := range t.Review {
		r.Answered = append(r.Answered, Answered{ID: c.ID, Kind: c.Kind, Author: c.Author, ThreadID: c.ThreadID})
	}
	r.LeftOut = append(r.LeftOut, t.LeftOut[:min(len(t.LeftOut), MaxRoundLeftOut)]...)
	r.LeftOutOmitted = len(t.LeftOut) - len(r.LeftOut)
	return r
}

// normalized is a copy of r with nil slices empty.
func (r *Round) normalized() *Round {
	n := *r
	n.Answered = nonNil(r.Answered)
	n.LeftOut = nonNil(r.LeftOut)
	if r.Replies != nil {
		rp := *r.Replies
		rp.Posted = nonNil(rp.Posted)
		n.Replies = &rp
	}
	if r.Merge != nil {
		m := *r.Merge
		m.Files = nonNil(m.Files)
		n.Merge = &m
	}
	return &n
}
