package handler

import (
	"context"
	"strings"

	gogithub "github.com/google/go-github/v66/github"
	"github.com/palantir/go-githubapp/githubapp"

	"github.com/bumperdev/bumper/app/workitem"
)

// Push handles `push` to branches: a base branch of a work item's pull request that
// moved may start an update round, or GitHub's update of the pull request's branch.
// Pushes to a work branch are followed through pull_request synchronize.
type Push struct{ Base }

// Handles implements githubapp.EventHandler.
func (h *Push) Handles() []string { return []string{"push"} }

// Handle implements githubapp.EventHandler.
func (h *Push) Handle(ctx context.Context, _, delivery string, payload []byte) error {
	var ev gogithub.PushEvent
	if err := parse(payload, &ev, "push"); err != nil {
		return err
	}
	out, ok := pushEventOf(delivery, &ev)
	if !ok {
		return nil
	}
	inst := ev.GetInstallation().GetID()
	repo := &gogithub.Repository{FullName: gogithub.String(out.Repo.FullName), DefaultBranch: gogithub.String(out.Repo.DefaultBranch)}
	ctx, _ = githubapp.PrepareRepoContext(ctx, inst, repo)
	return h.run(ctx, delivery, repo, inst, func(ctx context.Context, gh workitem.GitHub) error {
		return h.Service.HandlePush(ctx, gh, out)
	})
}

// pushEventOf translates the payload of a push that moved a branch; ok is false for a
// tag, and for a branch created or deleted (no pull request's base moved).
func pushEventOf(delivery string, ev *gogithub.PushEvent) (workitem.PushEvent, bool) {
	if _, ok := branchOf(ev.GetRef()); !ok || ev.GetDeleted() || ev.GetCreated() {
		return workitem.PushEvent{}, false
	}
	r := ev.GetRepo()
	return workitem.PushEvent{Delivery: delivery, Repo: workitem.Repo{FullName: r.GetFullName(), DefaultBranch: r.GetDefaultBranch()},
		Ref: ev.GetRef(), After: ev.GetAfter(), Deleted: ev.GetDeleted(), Sender: ev.GetSender().GetLogin()}, true
}

// branchOf is the branch a ref names, if it names one.
func branchOf(ref string) (string, bool) {
	b, ok := strings.CutPrefix(ref, "refs/heads/")
	return b, ok && b != ""
}
