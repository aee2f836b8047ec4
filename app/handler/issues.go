package handler

import (
	"context"

	gogithub "github.com/google/go-github/v66/github"
	"github.com/palantir/go-githubapp/githubapp"

	"github.com/bumperdev/bumper/app/logkey"
	"github.com/bumperdev/bumper/app/workitem"
)

// Issues handles `issues`: labeled, unlabeled, edited, closed, reopened.
type Issues struct{ Base }

// Handles implements githubapp.EventHandler.
func (h *Issues) Handles() []string { return []string{"issues"} }

// Handle implements githubapp.EventHandler.
func (h *Issues) Handle(ctx context.Context, _, delivery string, payload []byte) error {
	var ev gogithub.IssuesEvent
	if err := parse(payload, &ev, "issues"); err != nil {
		return err
	}
	switch ev.GetAction() {
	case "labeled", "unlabeled", "edited", "closed", "reopened":
	default:
		return nil
	}
	inst := ev.GetInstallation().GetID()
	ctx, log := githubapp.PreparePRContext(ctx, inst, ev.GetRepo(), ev.GetIssue().GetNumber())
	log.Debug().Str(logkey.Action, ev.GetAction()).Msg("issues event")
	return h.run(ctx, delivery, ev.GetRepo(), inst, func(ctx context.Context, gh workitem.GitHub) error {
		return h.Service.HandleIssue(ctx, gh, workitem.IssueEvent{Delivery: delivery, Action: ev.GetAction(),
			Repo: repoOf(ev.GetRepo()), Issue: issueOf(ev.GetIssue()), Label: ev.GetLabel().GetName(),
			Changed: changedFields(ev.GetChanges()), Sender: ev.GetSender().GetLogin(), SenderType: ev.GetSender().GetType()})
	})
}

// changedFields names what an `edited` event changed: "title", "body".
func changedFields(c *gogithub.EditChange) []string {
	var out []string
	if c.GetTitle() != nil {
		out = append(out, "title")
	}
	if c.GetBody() != nil {
		out = append(out, "body")
	}
	return out
}
