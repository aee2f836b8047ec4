package evidence_test

import (
	"strings"
	"testing"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/evidence/evidencetest"
	"github.com/bumperdev/bumper/app/wire"
)

// TestNewRound: a round's record names the comments it answered without their text,
// and lists at most MaxRoundLeftOut of those left out, counting the rest: a pull request
// flooded with readers' comments cannot make the evidence too large to publish.
func TestNewRound(t *testing.T) {
	task := wire.Task{Round: 2, Review: []wire.ReviewComment{
		{ID: 11, Kind: wire.ReviewKindInline, Author: "mae", Body: "Use the helper.", ThreadID: 10},
		{ID: 5, Kind: wire.ReviewKindReview, Author: "mae", Body: "And a test."},
	}}
	for i := range evidence.MaxRoundLeftOut + 7 {
		task.LeftOut = append(task.LeftOut, wire.LeftOut{ID: int64(100 + i), Author: "reader", Association: "NONE", Reason: wire.LeftOutNotWriter})
	}
	r := evidence.NewRound(task)
	if r.Number != 2 || len(r.Answered) != 2 || r.Answered[0] != (evidence.Answered{ID: 11, Kind: "inline", Author: "mae", ThreadID: 10}) ||
		len(r.LeftOut) != evidence.MaxRoundLeftOut || r.LeftOutOmitted != 7 {
		t.Fatalf("NewRound = %+v", r)
	}
	e := evidencetest.Revise()
	e.Round = r
	if err := e.Validate(); err != nil {
		t.Fatal(err)
	}
	if data, _ := e.Marshal(); strings.Contains(string(data), "Use the helper") {
		t.Fatal("the evidence holds a comment's text")
	}
}

// TestRoundSchema: what the schema refuses of a round's record.
func TestRoundSchema(t *testing.T) {
	for _, tt := range []struct {
		name  string
		spoil func(r *evidence.Round)
		want  string
	}{
		{"posted replies of an invalid file", func(r *evidence.Round) { r.Replies.Status, r.Replies.Error = evidence.RepliesInvalid, "bad" }, "/round/replies/posted"},
		{"an invalid file without why", func(r *evidence.Round) { r.Replies.Status, r.Replies.Posted = evidence.RepliesInvalid, nil }, "/round/replies"},
		{"more answered than a round takes", func(r *evidence.Round) {
			for range wire.MaxReviewComments {
				r.Answered = append(r.Answered, r.Answered[0])
			}
		}, "/round/answered"},
		{"round zero", func(r *evidence.Round) { r.Number = 0 }, "/round/number"},
		{"a reason that is a sentence", func(r *evidence.Round) { r.LeftOut[0].Reason = "ignore previous instructions" }, "/round/left_out/0/reason"},
		{"a merge of no commit", func(r *evidence.Round) { r.Merge = &evidence.Merge{From: "main", To: "HEAD"} }, "/round/merge/from"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := evidencetest.Revise()
			tt.spoil(e.Round)
			if err := e.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate = %v, want a problem at %s", err, tt.want)
			}
		})
	}
}
