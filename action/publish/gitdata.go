package publish

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/action/workspace"
	"github.com/bumperdev/bumper/internal/revision"
)

// Bounds of a publication through GitHub's Git Data API: past either, the round's
// commits are pushed with git instead (Publish's caller decides; ErrTooLargeForAPI).
const (
	// MaxAPIFiles is the most file changes (summed over the round's commits, each
	// against its first parent) created through the API: each is a tree entry, and
	// each new content a blob request.
	MaxAPIFiles = 300
	// MaxAPIBytes is the most bytes of new blob content sent through the API: sent
	// base64-encoded, one request a blob, well under GitHub's request limits.
	MaxAPIBytes = 16 << 20
	// MaxAPICommits is the most commits of a round created through the API: each
	// costs three requests besides its blobs.
	MaxAPICommits = 100
	// maxRateWait is the longest wait for GitHub's secondary rate limit (content
	// creation is limited per minute) before a request is tried again, three times.
	maxRateWait = 90 * time.Second
)

// Errors of Publish, wrapped with details.
var (
	// ErrTooLargeForAPI: the round's commits exceed MaxAPIFiles or MaxAPIBytes; nothing
	// was sent.
	ErrTooLargeForAPI = errors.New("the change is too large to publish through GitHub's Git Data API")
	// ErrTreeMismatch: GitHub made a tree or commit other than the one verification
	// judged; the branch was not moved.
	ErrTreeMismatch = errors.New("GitHub's commit does not have the tree verification judged")
	// ErrSignaturesRequired: a branch requires signed commits and the change can only
	// be pushed unsigned.
	ErrSignaturesRequired = errors.New("the branch requires signed commits")
)

// How a work branch was published (Pushed.Via).
const (
	ViaAPI  = "api"
	ViaPush = "git-push"
)

// change is one path a commit changes against its first parent.
type change struct {
	path, mode, sha string
	deleted         bool
}

// ownCommit is one of the round's commits as the host's repository holds it.
type ownCommit struct {
	id, tree, message string
	parents           []string
	changes           []change
}

// Publish creates the round's commits (refs/bumper/result, rewritten by Rewrite, from
// the workspace's start, workspace.Own) on GitHub through the Git Data API with gh,
// the runner's client holding the installation token, and moves the work branch to
// them: created, or fast-forwarded, never forced. GitHub makes each commit the App's
// and signs it (Verified). The blobs sent are the contents each commit adds or changes
// against its parents, once each; parents outside the round are named, not sent.
// Every tree and commit GitHub makes is checked: the same tree as the host's (which
// is the tree verification judged), the same parents (the round's mapped to GitHub's
// commits); any difference is ErrTreeMismatch and the branch is not moved. A change
// past MaxAPIFiles or MaxAPIBytes is ErrTooLargeForAPI before anything is sent.
func Publish(ctx context.Context, gh *github.Client, o Options) (*Pushed, error) {
	w := o.Workspace
	if w == nil || gh == nil {
		return nil, fmt.Errorf("%w: a workspace and a GitHub client are needed", ErrInvalidOptions)
	}
	owner, name, err := splitRepo(w.Repository)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	dst := "refs/heads/" + w.Branch
	if (o.Branch != "" && o.Branch != w.Branch) || !workBranchRE.MatchString(dst) {
		return nil, fmt.Errorf("%w: a run publishes only its work branch %s", ErrInvalidOptions, dst)
	}
	out, err := w.Git(ctx, nil, 1<<10, "rev-parse", "--verify", "--quiet", workspace.ResultRef+"^{commit}")
	head := strings.TrimSpace(string(out))
	if err != nil || !revision.IsCommitID(head) {
		return nil, fmt.Errorf("%w (call workspace.Result first)", ErrNoResult)
	}
	if o.Head != "" && o.Head != head {
		return nil, fmt.Errorf("%w: %s names %s, not the verified head %s", ErrInvalidOptions, workspace.ResultRef, head, o.Head)
	}
	p := &Pushed{Branch: w.Branch, Ref: dst, Via: ViaAPI}
	if p.Workflows, err = workflowPaths(ctx, w, head); err != nil {
		return nil, err
	}
	if len(p.Workflows) > 0 && o.Permissions != nil && o.Permissions["workflows"] != "write" {
		return nil, workflowsError(p, "", false)
	}
	commits, blobs, err := ownCommits(ctx, w, head)
	if err != nil {
		return nil, err
	}
	// What verification judged: the head's tree, which Rewrite kept.
	want, err := treeOf(ctx, w, head)
	if err != nil {
		return nil, err
	}
	if v, err := treeOf(ctx, w, VerifiedRef); err == nil && v != want {
		return nil, fmt.Errorf("%w: the rewritten head's tree %s is not the verified head's %s; nothing was published", ErrTreeMismatch, want, v)
	}

	for _, b := range blobs {
		if err := sendBlob(ctx, gh, w, owner, name, b); err != nil {
			return nil, err
		}
	}
	mapped := map[string]string{}
	for _, c := range commits {
		remote, err := createCommit(ctx, gh, owner, name, c, mapped)
		if err != nil {
			return nil, err
		}
		mapped[c.id] = remote.GetSHA()
		if remote.GetVerification().GetVerified() {
			p.Verified++
		}
	}
	p.Head, p.Commits = mapped[head], len(commits)
	if p.Head == "" {
		return nil, fmt.Errorf("%w: %s was not among the round's commits", ErrTreeMismatch, head)
	}
	return p, moveBranch(ctx, gh, owner, name, p, o.From)
}

// ownCommits reads the round's commits, parents first, with what each changes against
// its first parent, and the blobs to send: what any of them adds or changes against
// any of its parents, once each. It enforces MaxAPIFiles and MaxAPIBytes.
func ownCommits(ctx context.Context, w *workspace.Workspace, head string) ([]ownCommit, []string, error) {
	list, err := w.Git(ctx, nil, 8<<20, append(append([]string{"rev-list", "--reverse", "--topo-order", "--parents"}, w.Own(head)...), "--")...)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to list the round's commits: %w", err)
	}
	var commits []ownCommit
	var blobs []string
	seen := map[string]bool{}
	files := 0
	for _, line := range strings.Split(string(list), "\n") {
		ids := strings.Fields(line)
		if len(ids) == 0 {
			continue
		}
		raw, err := w.Git(ctx, nil, maxCommitObject, "cat-file", "commit", ids[0])
		if err != nil {
			return nil, nil, fmt.Errorf("failed to read %s: %w", ids[0], err)
		}
		pc, err := parseCommit(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("failed to read %s: %w", ids[0], err)
		}
		c := ownCommit{id: ids[0], tree: pc.tree, message: pc.message, parents: pc.parents}
		for i, parent := range c.parents {
			ch, err := changes(ctx, w, parent, c.id)
			if err != nil {
				return nil, nil, err
			}
			if i == 0 {
				c.changes = ch
				files += len(ch)
			}
			for _, x := range ch {
				if !x.deleted && x.mode != "160000" && !seen[x.sha] {
					seen[x.sha] = true
					blobs = append(blobs, x.sha)
				}
			}
		}
		if len(c.parents) == 0 {
			return nil, nil, fmt.Errorf("%w: %s is a root commit; a round's commits build on the base", ErrInvalidOptions, c.id)
		}
		if files > MaxAPIFiles {
			return nil, nil, fmt.Errorf("%w: more than %d file changes", ErrTooLargeForAPI, MaxAPIFiles)
		}
		commits = append(commits, c)
		if len(commits) > MaxAPICommits {
			return nil, nil, fmt.Errorf("%w: more than %d commits", ErrTooLargeForAPI, MaxAPICommits)
		}
	}
	if len(commits) == 0 {
		return nil, nil, fmt.Errorf("%w: no commit of the round's to publish", ErrNoResult)
	}
	var total int64
	for _, b := range blobs {
		out, err := w.Git(ctx, nil, 64, "cat-file", "-s", b)
		if err != nil {
			return nil, nil, fmt.Errorf("failed to size blob %s: %w", b, err)
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
		if total += n; total > MaxAPIBytes {
			return nil, nil, fmt.Errorf("%w: more than %d MiB of new content", ErrTooLargeForAPI, MaxAPIBytes>>20)
		}
	}
	return commits, blobs, nil
}

// changes lists what commit changes against parent, path by path (no renames).
func changes(ctx context.Context, w *workspace.Workspace, parent, commit string) ([]change, error) {
	out, err := w.Git(ctx, nil, 16<<20, "diff-tree", "-r", "-z", "--no-renames", "--no-ext-diff", "--no-textconv", parent, commit, "--")
	if err != nil {
		return nil, fmt.Errorf("failed to list what %s changes: %w", commit, err)
	}
	// -z raw: ":<old mode> <new mode> <old sha> <new sha> <status>\0<path>\0".
	f := strings.Split(string(out), "\x00")
	var list []change
	for i := 0; i+1 < len(f); i += 2 {
		meta := strings.Fields(strings.TrimPrefix(f[i], ":"))
		if len(meta) != 5 {
			return nil, fmt.Errorf("failed to read what %s changes: %q", commit, f[i])
		}
		c := change{path: f[i+1], mode: meta[1], sha: meta[3]}
		if meta[4] == "D" {
			c.deleted, c.mode, c.sha = true, meta[0], ""
		}
		list = append(list, c)
	}
	return list, nil
}

func treeOf(ctx context.Context, w *workspace.Workspace, rev string) (string, error) {
	out, err := w.Git(ctx, nil, 1<<10, "rev-parse", "--verify", "--quiet", rev+"^{tree}")
	tree := strings.TrimSpace(string(out))
	if err != nil || !revision.IsCommitID(tree) {
		return "", fmt.Errorf("failed to read the tree of %s: %w", rev, err)
	}
	return tree, nil
}

// sendBlob creates blob sha on GitHub from the host's object and checks GitHub names
// it the same.
func sendBlob(ctx context.Context, gh *github.Client, w *workspace.Workspace, owner, name, sha string) error {
	content, err := w.Git(ctx, nil, MaxAPIBytes+1, "cat-file", "blob", sha)
	if err != nil {
		return fmt.Errorf("failed to read blob %s: %w", sha, err)
	}
	var b *github.Blob
	err = limited(ctx, func() (err error) {
		b, _, err = gh.Git.CreateBlob(ctx, owner, name, &github.Blob{
			Content: github.String(base64.StdEncoding.EncodeToString(content)), Encoding: github.String("base64")})
		return err
	})
	if err != nil {
		return fmt.Errorf("failed to create blob %s on GitHub: %w", sha, err)
	}
	if b.GetSHA() != sha {
		return fmt.Errorf("%w: GitHub named blob %s %s; nothing was published", ErrTreeMismatch, sha, b.GetSHA())
	}
	return nil
}

// createCommit creates c's tree (on its first parent's, with c's changes) and c on
// GitHub, its parents mapped to theirs, and checks both.
func createCommit(ctx context.Context, gh *github.Client, owner, name string, c ownCommit, mapped map[string]string) (*github.Commit, error) {
	tree := c.tree
	if len(c.changes) > 0 {
		entries := make([]*github.TreeEntry, 0, len(c.changes))
		for _, x := range c.changes {
			typ := "blob"
			if x.mode == "160000" {
				typ = "commit"
			}
			e := &github.TreeEntry{Path: github.String(x.path), Mode: github.String(x.mode), Type: github.String(typ)}
			if !x.deleted {
				e.SHA = github.String(x.sha)
			}
			entries = append(entries, e)
		}
		// The first parent's tree is the host's: trees are named by their content.
		base, err := parentTree(ctx, gh, owner, name, c.parents[0], mapped)
		if err != nil {
			return nil, err
		}
		var t *github.Tree
		err = limited(ctx, func() (err error) {
			t, _, err = gh.Git.CreateTree(ctx, owner, name, base, entries)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("failed to create the tree of %s on GitHub: %w", c.id, err)
		}
		tree = t.GetSHA()
	}
	if tree != c.tree {
		return nil, fmt.Errorf("%w: GitHub built tree %s for %s, whose tree is %s; the branch was not moved", ErrTreeMismatch, tree, c.id, c.tree)
	}
	parents := make([]*github.Commit, 0, len(c.parents))
	for _, p := range c.parents {
		if m, ok := mapped[p]; ok {
			p = m
		}
		parents = append(parents, &github.Commit{SHA: github.String(p)})
	}
	// No author, committer or signature: GitHub makes the commit the App's and signs it.
	var made *github.Commit
	err := limited(ctx, func() (err error) {
		made, _, err = gh.Git.CreateCommit(ctx, owner, name, &github.Commit{Message: github.String(c.message),
			Tree: &github.Tree{SHA: github.String(tree)}, Parents: parents}, nil)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("failed to create the commit of %s on GitHub: %w", c.id, err)
	}
	if made.GetTree().GetSHA() != c.tree || len(made.Parents) != len(parents) {
		return nil, fmt.Errorf("%w: GitHub's commit %s has tree %s and %d parents, want %s and %d; the branch was not moved",
			ErrTreeMismatch, made.GetSHA(), made.GetTree().GetSHA(), len(made.Parents), c.tree, len(parents))
	}
	for i, p := range made.Parents {
		if p.GetSHA() != parents[i].GetSHA() {
			return nil, fmt.Errorf("%w: GitHub's commit %s has parent %s, want %s; the branch was not moved", ErrTreeMismatch, made.GetSHA(), p.GetSHA(), parents[i].GetSHA())
		}
	}
	return made, nil
}

// limited runs call, and when GitHub answers with its secondary rate limit (which
// limits content creation per minute) waits as long as it says, at most maxRateWait,
// and tries again, three times in all.
func limited(ctx context.Context, call func() error) error {
	for try := 1; ; try++ {
		err := call()
		var rl *github.AbuseRateLimitError
		if !errors.As(err, &rl) || try == 3 {
			return err
		}
		// Without a Retry-After GitHub asks for at least a minute.
		wait := time.Minute
		if rl.RetryAfter != nil {
			wait = min(max(*rl.RetryAfter, 0), maxRateWait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (while waiting out GitHub's rate limit)", err)
		case <-t.C:
		}
	}
}

// parentTree is the tree of parent as GitHub holds it: a round's commit was just
// created (its tree checked); another is read from GitHub.
func parentTree(ctx context.Context, gh *github.Client, owner, name, parent string, mapped map[string]string) (string, error) {
	if m, ok := mapped[parent]; ok {
		parent = m
	}
	c, _, err := gh.Git.GetCommit(ctx, owner, name, parent)
	if err != nil {
		return "", fmt.Errorf("failed to read parent %s on GitHub: %w", parent, err)
	}
	return c.GetTree().GetSHA(), nil
}

// moveBranch creates the work branch at p.Head, or fast-forwards it there; with from,
// only from that commit. GitHub's answer to a ref's create or update is not always the
// last word: a 422 "already exists" or "not a fast forward" may be its own race, and a
// 5xx may or may not have moved the ref. So on such an answer the ref is read again and
// the move decided again: at p.Head it is done, elsewhere it is refused as before.
func moveBranch(ctx context.Context, gh *github.Client, owner, name string, p *Pushed, from string) error {
	for try := 1; ; try++ {
		again, err := moveBranchOnce(ctx, gh, owner, name, p, from)
		if err == nil && try > 1 {
			p.UpToDate = false // found where this move, in doubt, had put it
		}
		if err == nil || !again || try == moveAttempts {
			return err
		}
		t := time.NewTimer(time.Duration(try) * movePause)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// moveBranch's tries when GitHub's answer leaves the ref in doubt, and the pause before
// the next (growing with each).
const (
	moveAttempts = 4
	movePause    = 200 * time.Millisecond
)

// moveBranchOnce is one try of moveBranch; again says GitHub's answer leaves the ref in
// doubt, so reading it again may settle it.
func moveBranchOnce(ctx context.Context, gh *github.Client, owner, name string, p *Pushed, from string) (again bool, err error) {
	ref, resp, err := gh.Git.GetRef(ctx, owner, name, p.Ref)
	missing := resp != nil && resp.StatusCode == http.StatusNotFound
	switch {
	case missing && from != "":
		return false, &PushError{Pushed: p, Sent: true, msg: fmt.Sprintf("%v: %s no longer exists on GitHub; a round on a pull request only moves its branch on from %s, never creates it", ErrPushRefused, p.Ref, from)}
	case missing:
		_, _, err = gh.Git.CreateRef(ctx, owner, name, &github.Reference{Ref: github.String(p.Ref), Object: &github.GitObject{SHA: github.String(p.Head)}})
	case err != nil:
		return false, fmt.Errorf("failed to read %s on GitHub: %w", p.Ref, err)
	case ref.GetObject().GetSHA() == p.Head:
		p.UpToDate = true
		return false, nil
	case from != "" && ref.GetObject().GetSHA() != from:
		return false, &PushError{Pushed: p, Sent: true, msg: fmt.Sprintf("%v: %s is at %s on GitHub, not at %s where the run started (someone pushed to it since); nothing was moved", ErrPushRefused, p.Ref, ref.GetObject().GetSHA(), from)}
	default:
		_, _, err = gh.Git.UpdateRef(ctx, owner, name, &github.Reference{Ref: github.String(p.Ref), Object: &github.GitObject{SHA: github.String(p.Head)}}, false)
	}
	if err != nil {
		if s := strings.ToLower(err.Error()); strings.Contains(s, "workflow") && strings.Contains(s, "permission") {
			return false, workflowsError(p, err.Error(), true)
		}
		var er *github.ErrorResponse
		inDoubt := errors.As(err, &er) && er.Response != nil &&
			(er.Response.StatusCode == http.StatusUnprocessableEntity || er.Response.StatusCode >= http.StatusInternalServerError)
		return inDoubt, &PushError{Pushed: p, Sent: true, msg: fmt.Sprintf("%v: GitHub refused to move %s to %s: %v", ErrPushRefused, p.Ref, p.Head, err)}
	}
	return false, nil
}

// PublishOrPush publishes through the API (Publish); a change too large for it is
// pushed with git through the gateway (Push, after open, which the runner uses to open
// the gateway's pushes) unless base or the work branch requires signed commits: then
// it is ErrSignaturesRequired and nothing is pushed. A push says why in
// Pushed.Note, with what could not be read of the branches' rules.
func PublishOrPush(ctx context.Context, gh *github.Client, o Options, base string, open func() (closeFn func())) (*Pushed, error) {
	p, err := Publish(ctx, gh, o)
	if !errors.Is(err, ErrTooLargeForAPI) {
		return p, err
	}
	note := err.Error()
	branch, serr := SignaturesRequired(ctx, gh, o.Workspace.Repository, base, o.Workspace.Branch)
	switch {
	case branch != "":
		return nil, fmt.Errorf("%w: %s requires them and %w, so only an unsigned git push could publish it; nothing was pushed: ask for a smaller change (at most %d file changes and %d MiB of new content)",
			ErrSignaturesRequired, branch, err, MaxAPIFiles, MaxAPIBytes>>20)
	case serr != nil:
		note += "; " + serr.Error()
	}
	if open != nil {
		defer open()()
	}
	if p, err = Push(ctx, o); err != nil {
		return nil, err
	}
	p.Note = note
	return p, nil
}

// SignaturesRequired asks GitHub whether any of branches requires signed commits
// (branch protection's required_signatures). A branch without protection requires
// none; an answer GitHub would not give (the token may lack administration: read) is
// an error, which the caller reports.
func SignaturesRequired(ctx context.Context, gh *github.Client, repo string, branches ...string) (string, error) {
	owner, name, err := splitRepo(repo)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	for _, b := range branches {
		s, resp, err := gh.Repositories.GetSignaturesProtectedBranch(ctx, owner, name, b)
		switch {
		case resp != nil && resp.StatusCode == http.StatusNotFound:
			continue
		case err != nil:
			return "", fmt.Errorf("failed to read whether %s requires signed commits: %w", b, err)
		case s.GetEnabled():
			return b, nil
		}
	}
	return "", nil
}
