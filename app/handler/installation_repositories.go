package handler

import (
	"context"

	gogithub "github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/app/workitem"
)

// InstallationRepositories handles `installation_repositories`: repositories added to
// an installation are indexed, removed ones dropped.
type InstallationRepositories struct{ Base }

// Handles implements githubapp.EventHandler.
func (h *InstallationRepositories) Handles() []string { return []string{"installation_repositories"} }

// Handle implements githubapp.EventHandler.
func (h *InstallationRepositories) Handle(ctx context.Context, _, delivery string, payload []byte) error {
	var ev gogithub.InstallationRepositoriesEvent
	if err := parse(payload, &ev, "installation_repositories"); err != nil {
		return err
	}
	inst := ev.GetInstallation().GetID()
	forgetRepos(ctx, h.Base, ev.RepositoriesRemoved)
	if len(ev.RepositoriesAdded) == 0 {
		return nil
	}
	return h.run(ctx, delivery, nil, inst, func(ctx context.Context, gh workitem.GitHub) error {
		return indexRepos(ctx, h.Base, gh, inst, ev.RepositoriesAdded)
	})
}
