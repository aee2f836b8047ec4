package evidencemd_test

import (
	"strings"
	"testing"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/evidence/evidencemd"
	"github.com/bumperdev/bumper/action/evidence/evidencetest"
	"github.com/bumperdev/bumper/app/wire"
)

// TestMarkdownRoundEscaping fills what a round's record quotes with the attacks: the
// names of files the merge conflicted in (the base branch's tree, a writer's, and what
// the agent committed in earlier rounds), why a reply could not be posted (GitHub's
// answer), and names, associations, reasons and kinds a bundle that was not validated
// may hold. The round's section shows them as code, like the rest.
func TestMarkdownRoundEscaping(t *testing.T) {
	pick := func(i int) string { return attacks[i%len(attacks)] }
	for name, e := range map[string]*evidence.Evidence{"revise": evidencetest.Revise(), "update": evidencetest.Update(), "invalid replies": evidencetest.InvalidReplies()} {
		t.Run(name, func(t *testing.T) {
			rd := e.Round
			rd.Answered = append(rd.Answered, evidence.Answered{ID: 1, Kind: pick(4), Author: pick(11)})
			rd.LeftOut = append(rd.LeftOut, wire.LeftOut{ID: 2, Author: pick(12), Association: pick(6), Reason: pick(8)})
			if rd.Replies != nil {
				rd.Replies.Error = pick(9)
				rd.Replies.Posted = append(rd.Replies.Posted, evidence.PostedReply{ThreadID: 3, Error: pick(13)})
			}
			if rd.Merge != nil {
				for i := range attacks {
					rd.Merge.Files = append(rd.Merge.Files, pick(i))
				}
			}
			md, _ := evidencemd.Render(e, evidencemd.CommentLimit)
			checkSafe(t, md, e)
			if !strings.Contains(md, "- **Round:** ") {
				t.Fatalf("no round line:\n%s", md)
			}
		})
	}
	t.Run("an update that ended before its merge", func(t *testing.T) {
		e := evidencetest.Update()
		e.Round.Merge = nil
		md, _ := evidencemd.Render(e, evidencemd.CommentLimit)
		checkSafe(t, md, e)
		if !strings.Contains(md, "- **Round:** update round 1: nothing was merged\n") {
			t.Fatalf("the round line:\n%s", md)
		}
	})
}
