// Package handler holds the App's webhook handlers, one type per event. Each parses
// its payload, adds log context, and hands a translated event to the domain code in
// app/workitem.
package handler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	gogithub "github.com/google/go-github/v66/github"
	"github.com/palantir/go-githubapp/githubapp"
	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/app/ghclient"
	"github.com/bumperdev/bumper/app/workitem"
)

// Base is what every handler shares.
type Base struct {
	Service   *workitem.Service
	Connector *ghclient.Connector
	// DispatchGrace is how long a dispatch guard ref without its record is given before
	// the event that met it is handled again as a re-drive.
	DispatchGrace time.Duration
}

// All returns one handler per event the App subscribes to.
func All(b Base) []githubapp.EventHandler {
	return []githubapp.EventHandler{
		&Issues{b}, &IssueComment{b}, &PullRequest{b}, &PullRequestReview{b}, &Push{b}, &WorkflowRun{b}, &WorkflowJob{b},
		&CheckRun{b}, &Installation{b}, &InstallationRepositories{b},
	}
}

// run handles a delivery once: a redelivered webhook (same X-GitHub-Delivery) changes
// nothing. A failed delivery is forgotten so its redelivery is handled again.
func (b Base) run(ctx context.Context, delivery string, repo *gogithub.Repository, inst int64,
	fn func(ctx context.Context, gh workitem.GitHub) error) error {
	if b.Service.Index().SeenDelivery(delivery) {
		zerolog.Ctx(ctx).Info().Msg("delivery already handled; ignoring the redelivery")
		return nil
	}
	if repo != nil {
		b.Connector.Remember(repo.GetFullName(), inst)
	}
	gh, err := b.Connector.Installation(ctx, inst)
	if err != nil {
		b.Service.Index().ForgetDelivery(delivery)
		return err
	}
	err = fn(ctx, gh)
	if errors.Is(err, workitem.ErrDispatchedElsewhere) {
		// Another replica moved the item; this one's view is stale.
		b.Service.Stale(ctx, err)
		if key, ok := workitem.PendingDispatch(err); ok {
			// Or its replica died between the guard ref and the record: this event is
			// handled again once the grace has passed, and then takes the dispatch over
			// if the record still lacks it.
			b.Service.RedriveLater(ctx, key, workitem.ItemOf(err), b.DispatchGrace, func(ctx context.Context) error {
				gh, err := b.Connector.Installation(ctx, inst)
				if err != nil {
					return err
				}
				return fn(ctx, gh)
			})
		}
		return nil
	}
	if err != nil {
		b.Service.Index().ForgetDelivery(delivery)
	}
	return err
}

func repoOf(r *gogithub.Repository) workitem.Repo {
	return workitem.Repo{FullName: r.GetFullName(), DefaultBranch: r.GetDefaultBranch()}
}

// issueOf is the adapter's translation plus the comment count a payload carries.
func issueOf(is *gogithub.Issue) workitem.Issue {
	out := ghclient.IssueOf(is)
	if is.Comments != nil {
		out.Comments = is.GetComments()
	}
	return out
}

func parse(payload []byte, v any, event string) error {
	if err := json.Unmarshal(payload, v); err != nil {
		return fmt.Errorf("failed to parse the %s payload: %w", event, err)
	}
	return nil
}
