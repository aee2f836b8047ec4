package handler

import (
	"context"

	gogithub "github.com/google/go-github/v66/github"
	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/app/logkey"
	"github.com/bumperdev/bumper/app/workitem"
)

// Installation handles `installation`: a new installation's repositories are indexed;
// a removed one's are dropped from the index (GitHub keeps their records).
type Installation struct{ Base }

// Handles implements githubapp.EventHandler.
func (h *Installation) Handles() []string { return []string{"installation"} }

// Handle implements githubapp.EventHandler.
func (h *Installation) Handle(ctx context.Context, _, delivery string, payload []byte) error {
	var ev gogithub.InstallationEvent
	if err := parse(payload, &ev, "installation"); err != nil {
		return err
	}
	inst := ev.GetInstallation().GetID()
	switch ev.GetAction() {
	case "created", "unsuspend":
		return h.run(ctx, delivery, nil, inst, func(ctx context.Context, gh workitem.GitHub) error {
			return indexRepos(ctx, h.Base, gh, inst, ev.Repositories)
		})
	case "deleted", "suspend":
		forgetRepos(ctx, h.Base, ev.Repositories)
	}
	return nil
}

// forgetRepos drops the repositories an installation lost from the index and from the
// connector's memory; their records stay on GitHub.
func forgetRepos(ctx context.Context, b Base, repos []*gogithub.Repository) {
	for _, r := range repos {
		n := b.Service.ForgetRepository(r.GetFullName())
		b.Connector.Forget(r.GetFullName())
		zerolog.Ctx(ctx).Info().Str(logkey.Repository, r.GetFullName()).Int(logkey.Items, n).Msg("forgot a repository")
	}
}

// indexRepos rebuilds the index of repositories an installation gained. Webhook
// payloads list repositories without their default branch, which the rebuild only
// needs for new records; the records carry their own.
func indexRepos(ctx context.Context, b Base, gh workitem.GitHub, inst int64, repos []*gogithub.Repository) error {
	for _, r := range repos {
		b.Connector.Remember(r.GetFullName(), inst)
		items, bad, err := b.Service.RebuildRepository(ctx, gh, workitem.Repo{FullName: r.GetFullName()})
		if err != nil {
			return err
		}
		zerolog.Ctx(ctx).Info().Str(logkey.Repository, r.GetFullName()).Int(logkey.Items, items).Int(logkey.Untrusted, bad).Msg("indexed a repository")
	}
	return nil
}
