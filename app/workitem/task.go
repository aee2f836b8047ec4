package workitem

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bumperdev/bumper/app/authz"
	"github.com/bumperdev/bumper/app/command"
	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
)

// stageScopes is the one table of what a run of each stage may call back for. A plan
// run posts its plan; implementation, fix, revise and update runs report progress and
// evidence; only a review run posts a verdict. Every run may say it waits for a VM slot.
var stageScopes = map[wire.Stage][]string{
	StagePlan:      {wire.ScopeProgress, wire.ScopeTask, wire.ScopeShouldStop, wire.ScopeWaiting},
	StageImplement: {wire.ScopeProgress, wire.ScopeEvidence, wire.ScopeTask, wire.ScopeShouldStop, wire.ScopeWaiting},
	StageFix:       {wire.ScopeProgress, wire.ScopeEvidence, wire.ScopeTask, wire.ScopeShouldStop, wire.ScopeWaiting},
	StageRevise:    {wire.ScopeProgress, wire.ScopeEvidence, wire.ScopeTask, wire.ScopeShouldStop, wire.ScopeWaiting},
	StageUpdate:    {wire.ScopeProgress, wire.ScopeEvidence, wire.ScopeTask, wire.ScopeShouldStop, wire.ScopeWaiting},
	StageReview:    {wire.ScopeVerdict, wire.ScopeEvidence, wire.ScopeTask, wire.ScopeShouldStop, wire.ScopeWaiting},
}

// ScopesOf is the run-token scope of a stage; nil for an unknown stage.
func ScopesOf(stage wire.Stage) []string { return slices.Clone(stageScopes[stage]) }

// Task hands a run its task as the App approved it. The agent gets the approved title,
// body and plan and the comments written before the approval by people with write
// permission; nothing a stranger wrote, and nothing written or edited after approval.
func (s *Service) Task(ctx context.Context, c wire.RunClaims) (wire.Task, error) {
	var none wire.Task
	defer s.lock(c.WorkItem.String())()
	gh, it, err := s.current(ctx, c)
	if err != nil {
		return none, err
	}
	rec := it.rec
	att := rec.CurrentAttempt()
	cutoff, approvalComment := att.StartedAt, int64(0)
	if c.Stage != StagePlan {
		a := rec.ActiveApproval()
		if a == nil || att.Revision != rec.ApprovalRevision() {
			return none, refuse(RefusalApproval, "attempt %d's approval no longer holds", att.Number)
		}
		cutoff, approvalComment = a.At, a.CommentID
	}
	is, err := gh.Issue(ctx, rec.Repository, rec.Issue)
	if err != nil {
		return none, fmt.Errorf("failed to re-read %s: %w", rec.ID(), err)
	}
	if ledger.SpecRevision(is.Title, is.Body) != rec.SpecRevision {
		return none, refuse(RefusalApproval, "the issue's title or body changed since it was approved; the run must not see the new text")
	}
	task := wire.Task{WorkItem: rec.WorkItem(), Stage: c.Stage, SpecRevision: rec.SpecRevision, Title: is.Title, Body: is.Body,
		BaseCommit: rec.BaseCommit, Comments: []wire.TaskComment{}}
	if rec.PlanRevision != "" && c.Stage != StagePlan {
		plan, why, err := s.readPlan(ctx, gh, rec)
		if err != nil {
			return none, err
		}
		if why == "" && ledger.ContentRevision([]byte(plan)) != rec.PlanRevision {
			why = "the plan comment was edited after approval"
		}
		if why != "" {
			return none, refuse(RefusalApproval, "%s", why)
		}
		task.Plan, task.PlanRevision = plan, rec.PlanRevision
	}
	if task.Comments, err = s.taskComments(ctx, gh, rec, cutoff, approvalComment); err != nil {
		return none, err
	}
	if wire.PullStage(c.Stage) {
		task.PullRequest, task.Branch, task.HeadCommit = rec.PullRequest, rec.WorkBranch, rec.PullHead
	}
	switch c.Stage {
	case StageFix:
		if task.Checks, err = s.fixTask(ctx, gh, rec, att); err != nil {
			return none, err
		}
	case StageRevise:
		if err := s.reviseTask(ctx, gh, rec, att, &task); err != nil {
			return none, err
		}
	case StageUpdate:
		task.Round, task.UpdateTo = rec.RoundsSince(rec.PullAttempt(), StageUpdate), att.UpdateTo
	}
	if task.Steers, err = s.steersFor(ctx, gh, rec, att, false); err != nil {
		return none, err
	}
	return task, nil
}

// reviseTask is a revise run's task: the writers' words it answers, read again from
// GitHub as the round took them, and what was left out.
func (s *Service) reviseTask(ctx context.Context, gh GitHub, rec *ledger.Record, att *ledger.Attempt, task *wire.Task) error {
	pol, err := s.policyAt(ctx, gh, rec.Repository, rec.BaseCommit)
	if isInvalidPolicy(err) {
		return refuse(RefusalPolicy, "%v", err)
	}
	if err != nil {
		return err
	}
	r, err := s.readInputs(ctx, gh, rec, pol, att.Inputs, false)
	if err != nil {
		return err
	}
	if len(r.review) == 0 {
		return refuse(RefusalState, "nothing the round was asked may reach the agent any more (left out: %d)", len(r.leftOut))
	}
	task.Round, task.Review, task.LeftOut = rec.RoundsSince(rec.PullAttempt(), StageRevise), r.review, r.leftOut
	return nil
}

// taskComments are the comments a run may read: written by a person with write
// permission, before the cutoff (and before the approval comment itself), not edited
// since, and not a command or one of Bumper's own.
func (s *Service) taskComments(ctx context.Context, gh GitHub, rec *ledger.Record, cutoff time.Time, approvalComment int64) ([]wire.TaskComment, error) {
	bot, err := s.botLogin(ctx)
	if err != nil {
		return nil, err
	}
	comments, err := gh.Comments(ctx, rec.Repository, rec.Issue)
	if err != nil {
		return nil, fmt.Errorf("failed to list the comments of %s: %w", rec.ID(), err)
	}
	// GitHub's own time of the approval comment is the cutoff: the App's clock may be
	// skewed, and it handled the comment a moment after it was written.
	for _, c := range comments {
		if approvalComment != 0 && c.ID == approvalComment && c.CreatedAt.Before(cutoff) {
			cutoff = c.CreatedAt
		}
	}
	perms := map[string]string{}
	out := []wire.TaskComment{}
	for _, c := range comments {
		switch {
		case strings.EqualFold(c.Author, bot), authz.IsBot(c.Author, c.AuthorType):
			continue
		case c.CreatedAt.After(cutoff), c.UpdatedAt.After(cutoff):
			continue
		case c.UpdatedAt.After(c.CreatedAt) && !c.UpdatedAt.Before(cutoff):
			// Edited in the approval's second (GitHub's times are whole seconds): the
			// edit may have come after the approval.
			continue
		case approvalComment != 0 && c.ID >= approvalComment:
			continue
		}
		if _, isCmd := command.Parse(c.Body); isCmd {
			continue
		}
		key := strings.ToLower(c.Author)
		perm, ok := perms[key]
		if !ok {
			if perm, err = gh.Permission(ctx, rec.Repository, c.Author); err != nil {
				return nil, fmt.Errorf("failed to check the permission of %s on %s: %w", c.Author, rec.Repository, err)
			}
			perms[key] = perm
		}
		if !authz.AtLeast(perm, "write") {
			continue
		}
		out = append(out, wire.TaskComment{Author: c.Author, CreatedAt: c.CreatedAt.UTC(), Body: c.Body})
	}
	return out, nil
}
