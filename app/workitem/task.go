package workitem

import (
	"context"
	"fmt"
	"time"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/app/workitem/agentwords"
)

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
	if len(r.Review) == 0 {
		return refuse(RefusalState, "nothing the round was asked may reach the agent any more (left out: %d)", len(r.LeftOut))
	}
	task.Round, task.Review, task.LeftOut = rec.RoundsSince(rec.PullAttempt(), StageRevise), r.Review, r.LeftOut
	return nil
}

// taskComments are the comments a run may read (agentwords.TaskComments): a writer's,
// before the cutoff and the approval comment, not edited since, not a command or
// Bumper's own.
func (s *Service) taskComments(ctx context.Context, gh GitHub, rec *ledger.Record, cutoff time.Time, approvalComment int64) ([]wire.TaskComment, error) {
	bot, err := s.botLogin(ctx)
	if err != nil {
		return nil, err
	}
	return agentwords.TaskComments(ctx, words{gh: gh, rec: rec}, wordsOf(rec, bot, ""), cutoff, approvalComment)
}
