package publish

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/action/workspace"
	"github.com/bumperdev/bumper/ghemu"
)

// TestAttackUpdateRoundRevertsWorkflowBehindFirstParent: an agent in an update round
// (base history fetched) reverts a maintainer's hardening of a workflow without the
// pre-push check noticing. It makes X on an OLD base commit (below the hardening, where
// the workflow is the old text) and a merge M2 whose FIRST parent is X and second the
// round's honest merge, with the old workflow text. Every own commit's first-parent diff
// leaves .github/workflows alone, yet the pushed head's workflow differs from the base's
// and from the pull request's.
func TestAttackUpdateRoundRevertsWorkflowBehindFirstParent(t *testing.T) {
	h := newHost(t)
	ctx := testCtx(t)
	src := scratchRepo(t, h)
	commit := maintainerCommits(t, src)
	wf := ".github/workflows/" + ghemu.DefaultWorkflow
	old := guestGit(t, src, "show", h.base+":"+wf)
	hardened := commit(map[string]string{wf: "name: hardened\non: workflow_dispatch\n"}, "Harden the workflow", h.base)
	head := commit(map[string]string{"widgets.sh": "echo 4\n"}, "Count to 4", hardened)
	// main-next merges a long-lived side branch forked below the hardening: its history
	// (fetched for the round's merge) holds a commit with the workflow's old text.
	side := commit(map[string]string{"side.txt": "side\n"}, "Side work", h.base)
	main := commit(map[string]string{"CHANGELOG.md": "- more\n"}, "Changelog", hardened, side)
	pushFixtures(t, h, src, head+":refs/heads/bumper/1-1", main+":refs/heads/main-next")
	w, err := workspace.Prepare(ctx, workspace.Options{GitURL: h.gitURL, Base: hardened, Issue: 1, Attempt: 2, Branch: "bumper/1-1", Start: head,
		UpdateTo: main, Dir: t.TempDir(), Task: map[string][]byte{"TASK.md": []byte("# Update\n")}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r, rerr := agentWorkErr(t, w, func(repo string) {
		mergeCleanly(t, repo, main)
		m1 := guestGit(t, repo, "rev-parse", "HEAD")
		// X: on the old commit below the hardening; no change to workflows.
		x := guestGit(t, repo, "commit-tree", side+"^{tree}", "-p", side, "-m", "Tidy")
		// M2: M1's tree with the workflow's old text; first parent X.
		guestGit(t, repo, "checkout", "-q", side, "--", wf)
		guestGit(t, repo, "add", "-A")
		tree := guestGit(t, repo, "write-tree")
		m2 := guestGit(t, repo, "commit-tree", tree, "-p", x, "-p", m1, "-m", "Merge")
		guestGit(t, repo, "reset", "-q", "--hard", m2)
	})
	if rerr != nil {
		t.Logf("refused at workspace.Result: %v", rerr)
		return
	}
	id := Identity{Name: botLogin, Email: "1+" + botLogin + "@users.noreply.127.0.0.1"}
	rw, err := Rewrite(ctx, RewriteOptions{Workspace: w, Head: r.Head, Identity: id, Now: time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)})
	if err != nil {
		t.Logf("Rewrite refused: %v", err)
		return
	}
	p, err := Push(ctx, Options{Workspace: w, GitURL: h.gitURL, Issue: 1, Attempt: 2, Branch: "bumper/1-1", Head: rw.Head, Permissions: h.perms})
	if errors.Is(err, ErrWorkflowsPermission) {
		return // refused before it was sent, saying why
	}
	if err != nil {
		t.Fatalf("Push = %v; want ErrWorkflowsPermission", err)
	}
	got := h.refs(t)["refs/heads/bumper/1-1"]
	out, _ := w.Git(ctx, nil, 1<<20, "show", got+":"+wf)
	if strings.TrimSpace(string(out)) == strings.TrimSpace(old) && len(p.Workflows) == 0 {
		t.Errorf("ATTACK WORKED: pushed %s reverts %s to its pre-hardening text; Push.Workflows=%v", got, wf, p.Workflows)
	}
}

// TestAttackRootFirstParentDeletesWorkflow: in an implement round (shallow, only the
// base is there) the agent deletes the repository's workflows without the pre-push
// check, or the git host's guard, flagging it. X is a ROOT commit whose tree is the
// base's without .github/workflows (a root's diff lists only what it has); the head is a
// merge whose FIRST parent is X and second the base, with X's tree. Own = head ^base =
// {head, X}: X's root diff names no workflow, head's first-parent diff is empty. The
// base is an ancestor of head, which is all a non-update round checks.
func TestAttackRootFirstParentDeletesWorkflow(t *testing.T) {
	h := newHost(t)
	ctx := testCtx(t)
	w := h.prepare(t, 1, 1)
	wf := ".github/workflows/" + ghemu.DefaultWorkflow
	r := agentWork(t, w, func(repo string) {
		writeFiles(t, repo, map[string]string{"widgets.sh": "echo 4\n"})
		guestGit(t, repo, "rm", "-q", "-r", ".github/workflows")
		guestGit(t, repo, "add", "-A")
		tree := guestGit(t, repo, "write-tree")
		x := guestGit(t, repo, "commit-tree", tree, "-m", "Count widgets")
		m := guestGit(t, repo, "commit-tree", tree, "-p", x, "-p", h.base, "-m", "Merge")
		guestGit(t, repo, "reset", "-q", "--hard", m)
	})
	// As action/runner/push.go does: the App's rewrite, then the push.
	id := Identity{Name: botLogin, Email: "1+" + botLogin + "@users.noreply.127.0.0.1"}
	rw, err := Rewrite(ctx, RewriteOptions{Workspace: w, Head: r.Head, Identity: id, Now: time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)})
	if err != nil {
		t.Logf("Rewrite refused: %v", err)
		return
	}
	p, err := Push(ctx, Options{Workspace: w, GitURL: h.gitURL, Issue: 1, Attempt: 1, Branch: "bumper/1-1", Head: rw.Head, Permissions: h.perms})
	if errors.Is(err, ErrWorkflowsPermission) {
		return // refused before it was sent, saying why
	}
	if err != nil {
		t.Fatalf("Push = %v; want ErrWorkflowsPermission", err)
	}
	got := h.refs(t)["refs/heads/bumper/1-1"]
	if _, err := w.Git(ctx, nil, 1<<20, "cat-file", "-e", got+":"+wf); err != nil && len(p.Workflows) == 0 {
		t.Errorf("ATTACK WORKED: pushed %s has no %s (the base has it); Push.Workflows=%v", got, wf, p.Workflows)
	}
}

// TestAttackFirstParentRevertsWorkflowFullHistory: an implement round with the base's
// history (FullHistory) reverts a maintainer's hardening of a workflow. X is made on the
// commit below the hardening (old workflow text, no workflow change of its own); the
// head is a merge with first parent X, second the base, keeping X's workflow text.
func TestAttackFirstParentRevertsWorkflowFullHistory(t *testing.T) {
	h := newHost(t)
	ctx := testCtx(t)
	src := scratchRepo(t, h)
	commit := maintainerCommits(t, src)
	wf := ".github/workflows/" + ghemu.DefaultWorkflow
	old := guestGit(t, src, "show", h.base+":"+wf)
	hardened := commit(map[string]string{wf: "name: hardened\non: workflow_dispatch\n"}, "Harden the workflow", h.base)
	pushFixtures(t, h, src, hardened+":refs/heads/base")
	w, err := workspace.Prepare(ctx, workspace.Options{GitURL: h.gitURL, Base: hardened, FullHistory: true, Issue: 1, Attempt: 1,
		Dir: t.TempDir(), Task: map[string][]byte{"TASK.md": []byte("# Count widgets\n")}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r := agentWork(t, w, func(repo string) {
		guestGit(t, repo, "checkout", "-q", h.base, "--", wf)
		writeFiles(t, repo, map[string]string{"widgets.sh": "echo 4\n"})
		guestGit(t, repo, "add", "-A")
		tree := guestGit(t, repo, "write-tree")
		x := guestGit(t, repo, "commit-tree", h.base+"^{tree}", "-p", h.base, "-m", "Start over")
		m := guestGit(t, repo, "commit-tree", tree, "-p", x, "-p", hardened, "-m", "Count widgets")
		guestGit(t, repo, "reset", "-q", "--hard", m)
	})
	id := Identity{Name: botLogin, Email: "1+" + botLogin + "@users.noreply.127.0.0.1"}
	rw, err := Rewrite(ctx, RewriteOptions{Workspace: w, Head: r.Head, Identity: id, Now: time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)})
	if err != nil {
		t.Logf("Rewrite refused: %v", err)
		return
	}
	p, err := Push(ctx, Options{Workspace: w, GitURL: h.gitURL, Issue: 1, Attempt: 1, Branch: "bumper/1-1", Head: rw.Head, Permissions: h.perms})
	if errors.Is(err, ErrWorkflowsPermission) {
		return // refused before it was sent, saying why
	}
	if err != nil {
		t.Fatalf("Push = %v; want ErrWorkflowsPermission", err)
	}
	got := h.refs(t)["refs/heads/bumper/1-1"]
	out, _ := w.Git(ctx, nil, 1<<20, "show", got+":"+wf)
	if strings.TrimSpace(string(out)) == strings.TrimSpace(old) && len(p.Workflows) == 0 {
		t.Errorf("ATTACK WORKED: pushed %s reverts %s to its pre-hardening text; Push.Workflows=%v", got, wf, p.Workflows)
	}
}
