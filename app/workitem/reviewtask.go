package workitem

import (
	"context"
	"errors"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/workitem/agentwords"
	"github.com/bumperdev/bumper/internal/repoconfig"
)

// readInputs reads what inputs ask for, as GitHub has it now, keeping only writers'
// words as they were given (agentwords.ReadRound). A round takes at most
// wire.MaxReviewComments comments: with split, the inputs past that are split off to
// wait for the next round (Rest); without, they are left out.
func (s *Service) readInputs(ctx context.Context, gh GitHub, rec *ledger.Record, pol repoconfig.Config, inputs []ledger.Input, split bool) (agentwords.Round, error) {
	bot, err := s.botLogin(ctx)
	if err != nil {
		return agentwords.Round{}, err
	}
	return agentwords.ReadRound(ctx, words{gh: gh, rec: rec}, wordsOf(rec, bot, pol.Approvers.MinPermission), inputs, split)
}

// wordsOf is rec as agentwords names it.
func wordsOf(rec *ledger.Record, bot, minPermission string) agentwords.Item {
	return agentwords.Item{ID: rec.ID(), Repository: rec.Repository, PullRequest: rec.PullRequest, Bot: bot, MinPermission: minPermission}
}

// words is the agentwords.Source of a work item: its issue and pull request, on gh.
type words struct {
	gh  GitHub
	rec *ledger.Record
}

func (w words) Permission(ctx context.Context, user string) (string, error) {
	return w.gh.Permission(ctx, w.rec.Repository, user)
}

func (w words) IssueComments(ctx context.Context) ([]agentwords.Comment, error) {
	return w.gh.Comments(ctx, w.rec.Repository, w.rec.Issue)
}

func (w words) Comment(ctx context.Context, id int64) (agentwords.Comment, bool, error) {
	c, err := w.gh.Comment(ctx, w.rec.Repository, id)
	if errors.Is(err, ErrNotFound) {
		return agentwords.Comment{}, false, nil
	}
	return c, err == nil, err
}

func (w words) Review(ctx context.Context, id int64) (agentwords.Review, bool, error) {
	rv, err := w.gh.Review(ctx, w.rec.Repository, w.rec.PullRequest, id)
	if errors.Is(err, ErrNotFound) {
		return agentwords.Review{}, false, nil
	}
	return rv, err == nil, err
}

func (w words) PullComments(ctx context.Context) ([]agentwords.PullComment, error) {
	return w.gh.PullComments(ctx, w.rec.Repository, w.rec.PullRequest)
}
