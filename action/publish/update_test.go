package publish

import (
	"errors"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/action/workspace"
	"github.com/bumperdev/bumper/ghemu"
)

// TestRewriteKeepsOthersCommits attacks the host-side rewrite through an update round,
// whose work holds commits that are not the run's: the base branch moved on with a
// maintainer's commits (one a merge of a side branch that forked below the approved
// base), and the pull request's head is a maintainer's commit on top of Bumper's. The
// round merges the base branch's head into the branch and the agent adds a commit. The
// rewrite must make only those two the App's: every commit of the base branch and of
// the pull request before the round keeps its id (the maintainers' commits stay theirs,
// and main's history is not copied under the App's name); the merge commit's parents
// are exactly the pull request's old head, then the base branch's head; and the push is
// a fast-forward from the old head, which changes no workflow.
func TestRewriteKeepsOthersCommits(t *testing.T) {
	h := newHost(t)
	ctx := testCtx(t)
	src := scratchRepo(t, h)
	commit := maintainerCommits(t, src)
	older := h.base // below the approved base
	base := commit(map[string]string{"lib.sh": "x\n"}, "The approved base", older)
	// The pull request: Bumper's commit (an earlier round's, already the App's), then a
	// maintainer's.
	bumpers := commit(map[string]string{"widgets.sh": "echo 4\n"}, "Count to 4", base)
	theirs := commit(map[string]string{"NOTES": "a maintainer's note\n"}, "A maintainer's note", bumpers)
	// The base branch moves on: a side branch off an older commit, merged, then more.
	side := commit(map[string]string{"side.txt": "side\n"}, "Side work", older)
	m1 := commit(map[string]string{"CHANGELOG.md": "- more\n"}, "Changelog", base)
	m2 := commit(map[string]string{"other.txt": "other\n"}, "Other work", m1, side)
	pushFixtures(t, h, src, theirs+":refs/heads/bumper/1-1", m2+":refs/heads/main-next", base+":refs/heads/base")

	w, err := workspace.Prepare(ctx, workspace.Options{GitURL: h.gitURL, Base: base, Issue: 1, Attempt: 2, Branch: "bumper/1-1", Start: theirs,
		UpdateTo: m2, Dir: t.TempDir(), Task: map[string][]byte{"TASK.md": []byte("# Update\n")}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r := agentWork(t, w, func(repo string) {
		mergeCleanly(t, repo, m2)
		writeFiles(t, repo, map[string]string{"widgets.sh": "echo 4 # after the update\n"})
		guestGitEnv(t, repo, claimed, "commit", "-q", "-am", "After the update: Fixes #6 @maintainer")
	})
	if r.Commits != 2 {
		t.Fatalf("the round's work is %d commits, want the merge and the agent's", r.Commits)
	}
	id := Identity{Name: botLogin, Email: "1+" + botLogin + "@users.noreply.127.0.0.1"}
	rw, err := Rewrite(ctx, RewriteOptions{Workspace: w, Head: r.Head, Identity: id, Now: time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) string {
		out, err := w.Git(ctx, nil, 1<<20, args...)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	if rw.Commits != 2 {
		t.Errorf("Rewrite rewrote %d commits, want the round's 2", rw.Commits)
	}
	merge := git("rev-parse", rw.Head+"^")
	if parents := git("log", "-1", "--format=%P", merge); parents != theirs+" "+m2 {
		t.Fatalf("the rewritten merge's parents are %s; want the pull request's old head %s, then the base branch's head %s", parents, theirs, m2)
	}
	for name, c := range map[string]string{"the maintainer's commit on the branch": theirs, "Bumper's earlier commit": bumpers,
		"the base branch's head": m2, "its changelog commit": m1, "the side branch": side, "the approved base": base, "the commit below it": older} {
		if _, err := w.Git(ctx, nil, 1<<10, "merge-base", "--is-ancestor", c, rw.Head); err != nil {
			t.Errorf("%s %s is not in the rewritten history under its own id", name, c)
		}
	}
	for _, line := range strings.Split(git("log", "--format=%H %an <%ae>|%cn", rw.Head, "^"+theirs, "^"+m2), "\n") {
		if !strings.HasSuffix(line, " "+id.Name+" <"+id.Email+">|"+id.Name) {
			t.Errorf("a commit of the round is not the App's: %s", line)
		}
	}
	for _, c := range []string{theirs, m2, m2 + "^", m1, side} {
		if who := git("log", "-1", "--format=%an|%cn", c); who != "Mae Maintainer|Mae Maintainer" {
			t.Errorf("%s is by %s, not the maintainer who made it", c, who)
		}
	}
	// The run's token has no workflows permission, and the round changes no workflow:
	// the commits of main it brings in (the side branch's history reaches below the
	// shallow base, to a commit that added the repository's workflow) are already on the
	// git host and are not the push's.
	p, err := Push(ctx, Options{Workspace: w, GitURL: h.gitURL, Issue: 1, Attempt: 2, Branch: "bumper/1-1", Head: rw.Head, Permissions: h.perms})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Workflows) != 0 {
		t.Errorf("the round's push is said to change %v", p.Workflows)
	}
	if got := h.refs(t)["refs/heads/bumper/1-1"]; got != rw.Head || p.Head != rw.Head {
		t.Fatalf("the branch is at %s, want %s", got, rw.Head)
	}
	if got := h.refs(t)["refs/heads/main-next"]; got != m2 {
		t.Fatalf("the base branch's head moved to %s", got)
	}
}

// mergeCleanly runs the update round's merge of to in the VM's repository, as the
// runner does before the agent's turn, and wants it clean.
func mergeCleanly(t *testing.T, repo, to string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", workspace.MergeScript)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "HOME="+repo, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		workspace.MergeEnvUpdateTo+"="+to, workspace.MergeEnvMessage+"=Merge the base branch's head (issue 1)")
	out, err := cmd.Output()
	if m, perr := workspace.ParseMerge(out); err != nil || perr != nil || !m.Clean {
		t.Fatalf("the merge: %v, %+v, %v", err, m, perr)
	}
}

// maintainerCommits makes a maintainer's commits in a scratch repository: files
// written on the first parent, merged with the second if there is one.
func maintainerCommits(t *testing.T, src string) func(files map[string]string, msg string, parents ...string) string {
	person := []string{"GIT_AUTHOR_NAME=Mae Maintainer", "GIT_AUTHOR_EMAIL=maintainer@example.test",
		"GIT_COMMITTER_NAME=Mae Maintainer", "GIT_COMMITTER_EMAIL=maintainer@example.test"}
	return func(files map[string]string, msg string, parents ...string) string {
		guestGitEnv(t, src, person, "checkout", "-q", "--detach", parents[0])
		writeFiles(t, src, files)
		guestGitEnv(t, src, person, "add", "-A")
		guestGitEnv(t, src, person, "commit", "-q", "-m", msg)
		if len(parents) > 1 {
			guestGitEnv(t, src, person, "merge", "-q", "--no-ff", "-m", "Merge the side branch", parents[1])
		}
		return guestGit(t, src, "rev-parse", "HEAD")
	}
}

// TestUpdateBringingAWorkflowChange: an update round whose merge brings in the base
// branch's change to a workflow changes that workflow on the pull request's branch, as
// GitHub judges a merge (against its first parent): without the workflows permission
// the push is refused before it is sent, naming the file.
func TestUpdateBringingAWorkflowChange(t *testing.T) {
	h := newHost(t)
	ctx := testCtx(t)
	src := scratchRepo(t, h)
	commit := maintainerCommits(t, src)
	head := commit(map[string]string{"widgets.sh": "echo 4\n"}, "Count to 4", h.base)
	main := commit(map[string]string{".github/workflows/" + ghemu.DefaultWorkflow: "name: changed on main\non: workflow_dispatch\n"}, "A new workflow", h.base)
	pushFixtures(t, h, src, head+":refs/heads/bumper/1-1", main+":refs/heads/main-next")
	w, err := workspace.Prepare(ctx, workspace.Options{GitURL: h.gitURL, Base: h.base, Issue: 1, Attempt: 2, Branch: "bumper/1-1", Start: head,
		UpdateTo: main, Dir: t.TempDir(), Task: map[string][]byte{"TASK.md": []byte("# Update\n")}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r := agentWork(t, w, func(repo string) { mergeCleanly(t, repo, main) })
	_, err = Push(ctx, Options{Workspace: w, GitURL: h.gitURL, Issue: 1, Attempt: 2, Branch: "bumper/1-1", Head: r.Head, Permissions: h.perms})
	if !errors.Is(err, ErrWorkflowsPermission) || !strings.Contains(err.Error(), ".github/workflows/"+ghemu.DefaultWorkflow) {
		t.Fatalf("Push = %v; want ErrWorkflowsPermission naming the workflow", err)
	}
	if got := h.refs(t)["refs/heads/bumper/1-1"]; got != head {
		t.Errorf("the branch moved to %s", got)
	}
}

// scratchRepo is a local repository holding the emulator's acme/widgets (main's whole
// history), for building fixture commits with the machine's git.
func scratchRepo(t *testing.T, h *host) string {
	t.Helper()
	dir := t.TempDir()
	guestGit(t, dir, "init", "-q", "--template=", "-b", "scratch")
	guestGit(t, dir, "fetch", "-q", userURL(h), "refs/heads/main")
	return dir
}

// pushFixtures pushes refspecs from a scratch repository to the emulator as a maintainer.
func pushFixtures(t *testing.T, h *host, dir string, refspecs ...string) {
	t.Helper()
	guestGit(t, dir, append([]string{"push", "-q", userURL(h)}, refspecs...)...)
}

// userURL is acme/widgets on the emulator's git server with a maintainer's token.
func userURL(h *host) string {
	u, _ := url.Parse(h.e.BaseURL() + "/" + owner + "/" + repoName + ".git")
	u.User = url.UserPassword("x-access-token", h.e.UserToken(ghemu.DefaultMaintainer))
	return u.String()
}
