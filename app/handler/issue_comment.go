package handler

import (
	"context"

	gogithub "github.com/google/go-github/v66/github"
	"github.com/palantir/go-githubapp/githubapp"

	"github.com/bumperdev/bumper/app/workitem"
)

// IssueComment handles `issue_comment`. Only "created" counts: an edited comment never
// approves (it could turn an old, innocent comment into an approval).
type IssueComment struct{ Base }

// Handles implements githubapp.EventHandler.
func (h *IssueComment) Handles() []string { return []string{"issue_comment"} }

// Handle implements githubapp.EventHandler.
func (h *IssueComment) Handle(ctx context.Context, _, delivery string, payload []byte) error {
	var ev gogithub.IssueCommentEvent
	if err := parse(payload, &ev, "issue_comment"); err != nil {
		return err
	}
	if ev.GetAction() != "created" {
		return nil
	}
	inst := ev.GetInstallation().GetID()
	ctx, _ = githubapp.PreparePRContext(ctx, inst, ev.GetRepo(), ev.GetIssue().GetNumber())
	return h.run(ctx, delivery, ev.GetRepo(), inst, func(ctx context.Context, gh workitem.GitHub) error {
		return h.Service.HandleComment(ctx, gh, workitem.CommentEvent{Delivery: delivery,
			Repo: repoOf(ev.GetRepo()), Issue: issueOf(ev.GetIssue()), CommentID: ev.GetComment().GetID(),
			Author: ev.GetComment().GetUser().GetLogin(), AuthorType: ev.GetComment().GetUser().GetType(),
			Body: ev.GetComment().GetBody(), IsPull: ev.GetIssue().IsPullRequest()})
	})
}
