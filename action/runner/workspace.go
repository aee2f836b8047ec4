package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/workspace"
	"github.com/bumperdev/bumper/app/wire"
)

// prepareWorkspace fetches the approved base commit through the firewall's git gateway
// (so the fetch is in the run's audit log) and lays out the VM's workspace disk. A
// workspace it made is returned with any later error, for finish to remove.
func (r *run) prepareWorkspace(ctx context.Context, s *session) (*workspace.Workspace, string, error) {
	cfg, g := r.cfg, r.grant
	files, err := g.task.Files()
	if err != nil {
		return nil, "", err
	}
	files[wire.TaskMarkdown] = append(files[wire.TaskMarkdown], conventions(cfg.Stage)...)
	ws, err := workspace.Prepare(ctx, workspace.Options{
		GitURL: "http://" + s.ProxyAddr() + "/git/" + cfg.WorkItem.Repository + ".git", Base: g.BaseCommit,
		Issue: cfg.WorkItem.Issue, Attempt: cfg.Attempt, Branch: g.branch, Start: r.start(), UpdateTo: g.UpdateTo, Review: cfg.Stage == wire.StageReview,
		Task: files, Dir: cfg.WorkDir,
	})
	if err != nil {
		if errors.Is(err, workspace.ErrBranchMoved) {
			return nil, "", failWith(evidence.OutcomeFailure, "%w", err)
		}
		return nil, "", fmt.Errorf("failed to prepare the workspace: %w", err)
	}
	if cfg.Stage == wire.StageReview {
		if err := r.reviewInputs(ctx, ws); err != nil {
			return ws, "", err
		}
	}
	return ws, fmt.Sprintf("%.12s on %s", r.start(), ws.Branch), nil
}

// conventions are appended to TASK.md: what the runner expects of the agent.
func conventions(stage wire.Stage) []byte {
	if stage == wire.StageReview {
		return []byte(reviewConventions())
	}
	var b strings.Builder
	b.WriteString("\n---\n\n## How this run works\n\n")
	b.WriteString("- The repository is checked out at " + workspace.GuestRepo + " on the run's work branch. If it has an `AGENTS.md` or `CLAUDE.md`, follow it.\n")
	b.WriteString("- The network reaches only what the repository's allowlist names. There are no credentials in this machine.\n")
	if stage == wire.StagePlan {
		b.WriteString("- This is a plan run: do not change the code. Write the plan, in Markdown, to `/out/" + PlanFile + "`; a maintainer approves it before any change is made.\n")
		return []byte(b.String())
	}
	switch stage {
	case wire.StageFix:
		b.WriteString("- This is a fix round: the pull request's branch is checked out at its head. Make the failing checks above pass; the rest of the task is done.\n")
	case wire.StageRevise:
		b.WriteString(reviseConventions)
	case wire.StageUpdate:
		b.WriteString(updateConventions)
	}
	b.WriteString("- Commit your work on the current branch (uncommitted changes are committed for you at the end of your turn). Do not push: the runner pushes after verification.\n")
	b.WriteString("- Write your decision ledger to `" + evidence.DecisionsFile + "`: every judgment call you made where the issue was silent, with your confidence (schema: decisions-v1 in Bumper's repository). Reviewers read it first.\n")
	b.WriteString("- After your turn the repository's verification commands run; if they fail you get another turn with their output.\n")
	return []byte(b.String())
}

// reviseConventions tell a revise round's agent how it works and how to reply.
const reviseConventions = "- This is a review round: the pull request's branch is checked out at its head. Answer the writers' comments above: " +
	"change the code where they ask for a change; where you do not, say why in your reply. The rest of the task is done: change nothing else.\n" +
	"- To answer a comment in its review thread, write `" + evidence.RepliesFile + "` (schema: replies-v1 in Bumper's repository): " +
	"`{\"schema_version\": 1, \"replies\": [{\"thread_id\": 123, \"changed\": true, \"body\": \"Used the helper in widgets.sh.\"}]}`. " +
	"At most one reply per thread, only the threads named above, each body plain text of at most 4,000 characters. " +
	"After the push the App posts each in its thread as \"Changed in `<commit>`: …\" (changed: true) or \"Not changed: …\", shown as text: " +
	"Markdown, mentions and links in it do nothing. A file that breaks these rules is refused whole and the evidence says why; none of it is posted.\n"

// updateConventions tell an update round's agent what the merge needs of it.
const updateConventions = "- This is an update round: before your turn the runner merged the base branch's new head into the pull request's branch " +
	"(the end of this file says how it went). If it conflicted, the merge is in progress: resolve every conflict, leave no conflict marker " +
	"in the files listed, and commit the merge (`git commit --no-edit`; what you leave uncommitted is committed for you). " +
	"Never rebase, reset, abort the merge or rewrite a commit: the push must go on from the pull request's head and keep the merge, or it is refused.\n"
