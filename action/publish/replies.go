package publish

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/mdcode"
	"github.com/bumperdev/bumper/internal/revision"
	"github.com/bumperdev/bumper/internal/textcut"
)

// RepliesOptions says which pull request a revise round's replies go to.
type RepliesOptions struct {
	// Repository is owner/name; Number the pull request (the run's, checked by
	// ExistingPull); Head the commit the round pushed, which a "changed" reply names.
	Repository string
	Number     int
	Head       string
	// Replies are the agent's, as evidence.ParseReplies let them through: each answers
	// a thread the task named, once.
	Replies []wire.Reply
}

// PostReplies posts each of the agent's replies in its review thread as the App (the
// client holds the run's installation token), with GitHub's endpoint for a reply to a
// review comment (POST /repos/{owner}/{repo}/pulls/{n}/comments/{thread}/replies), in
// order, and returns what became of each for the evidence. A reply GitHub refuses is
// recorded with why and the others are still posted: the round's code is pushed and
// verified, and a reply is its account, not its work.
func PostReplies(ctx context.Context, gh *github.Client, o RepliesOptions) ([]evidence.PostedReply, error) {
	owner, name, err := splitRepo(o.Repository)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	if gh == nil || o.Number < 1 || !revision.IsCommitID(o.Head) {
		return nil, fmt.Errorf("%w: no client, pull request #%d, head %q", ErrInvalidOptions, o.Number, o.Head)
	}
	out := make([]evidence.PostedReply, 0, len(o.Replies))
	for _, r := range o.Replies {
		p := evidence.PostedReply{ThreadID: r.ThreadID, Changed: r.Changed}
		if r.ThreadID < 1 {
			p.Error = "no thread"
			out = append(out, p)
			continue
		}
		u := fmt.Sprintf("repos/%s/%s/pulls/%d/comments/%d/replies", owner, name, o.Number, r.ThreadID)
		req, err := gh.NewRequest("POST", u, map[string]string{"body": ReplyBody(r, o.Head)})
		if err != nil {
			return out, fmt.Errorf("failed to make the reply to thread %d: %w", r.ThreadID, err)
		}
		var c github.PullRequestComment
		if _, err := gh.Do(ctx, req, &c); err != nil {
			if ctx.Err() != nil {
				return out, fmt.Errorf("failed to post the replies: %w", ctx.Err())
			}
			p.Error, _ = textcut.Runes(fmt.Sprintf("POST …/pulls/%d/comments/%d/replies: %v", o.Number, r.ThreadID, err), 500)
		} else {
			p.CommentID = c.GetID()
		}
		out = append(out, p)
	}
	return out, nil
}

// ReplyBody is a reply as the App posts it: "Changed in `<head>`:" or "Not changed:",
// then the agent's text shown as text, never as Markdown: one line in a code span, more
// in a fenced block, both through mdcode.Quoter (hidden characters as [U+XXXX], comment
// markers broken up), after secret-looking text is redacted. No mention, link, image,
// reference or HTML in it is live.
func ReplyBody(r wire.Reply, head string) string {
	var q mdcode.Quoter
	text := strings.TrimSpace(strings.ToValidUTF8(r.Body, "\uFFFD"))
	text = evidence.RedactText(text)
	lead := "Not changed:"
	if r.Changed {
		lead = "Changed in " + mdcode.Span(head) + ":"
	}
	var b strings.Builder
	b.WriteString(lead)
	if strings.ContainsAny(text, "\r\n") {
		b.WriteString("\n\n" + q.Block(text) + "\n")
	} else {
		b.WriteString(" " + q.Span(text) + "\n")
	}
	if q.Hidden {
		b.WriteString("\n(Hidden characters are shown as `[U+XXXX]`.)\n")
	}
	return b.String()
}
