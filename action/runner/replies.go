package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/publish"
	"github.com/bumperdev/bumper/action/workspace"
	"github.com/bumperdev/bumper/internal/textcut"
)

// RepliesFile is the agent's replies.json as the artifact keeps it.
const RepliesFile = "replies.json"

// reply reads the agent's replies.json from what the VM left in /out (ws.OutDir, read
// back with the bundle), records in the evidence what it held (none, refused and why,
// or the replies), and posts a valid file's replies in their threads as the App, naming
// the pushed head. A file that is refused posts nothing and fails nothing: the round's
// code is pushed and verified, and the evidence says why its replies are missing. It
// returns a phrase for the phase's detail.
func (r *run) reply(ctx context.Context, number int, pushed string, ws *workspace.Workspace) (string, error) {
	rd := r.rec.ev.Round
	if rd == nil {
		rd = evidence.NewRound(r.grant.task)
		r.rec.ev.Round = rd
	}
	data, err := readSmall(filepath.Join(ws.OutDir, filepath.Base(evidence.RepliesFile)), 1<<20)
	switch {
	case errors.Is(err, os.ErrNotExist):
		rd.Replies = &evidence.Replies{Status: evidence.RepliesAbsent}
		return "; the agent wrote no replies", nil
	case err != nil:
		rd.Replies = refused(err)
		return "; replies.json refused, none posted", nil
	}
	r.rec.keep(RepliesFile, data)
	replies, err := evidence.ParseReplies(data, evidence.Threads(r.grant.task))
	if err != nil {
		rd.Replies = refused(err)
		return "; replies.json refused, none posted", nil
	}
	posted, err := publish.PostReplies(ctx, r.grant.gh, publish.RepliesOptions{Repository: r.cfg.WorkItem.Repository, Number: number, Head: pushed, Replies: replies})
	rd.Replies = &evidence.Replies{Status: evidence.RepliesOK, Posted: posted}
	if err != nil {
		return "", err
	}
	ok := 0
	for _, p := range posted {
		if p.CommentID > 0 {
			ok++
		}
	}
	return fmt.Sprintf("; %d of %d replies posted in their threads", ok, len(replies)), nil
}

// refused is the record of a replies.json that is not taken, with why.
func refused(err error) *evidence.Replies {
	why, _ := textcut.Runes(evidence.RedactText(err.Error()), maxLine)
	return &evidence.Replies{Status: evidence.RepliesInvalid, Error: why}
}
