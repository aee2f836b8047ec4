package publish

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/bumperdev/bumper/action/workspace"
)

// WorkflowsDir is where GitHub keeps workflows; a push that creates or changes a file
// below it needs the token's workflows permission.
const WorkflowsDir = ".github/workflows"

// Errors of Push, wrapped with details; test them with errors.Is.
var (
	ErrInvalidOptions = errors.New("invalid publish options")
	// ErrNoResult: the workspace holds no verified result (workspace.Result was not
	// called, or failed).
	ErrNoResult = errors.New("the workspace holds no verified result at " + workspace.ResultRef)
	// ErrPushRefused: the firewall's git gateway or the git host refused the push.
	ErrPushRefused = errors.New("the push was refused")
	// ErrWorkflowsPermission: the result changes files under .github/workflows/ and
	// the run's token lacks the workflows permission, so GitHub refuses the push.
	ErrWorkflowsPermission = errors.New("the result changes " + WorkflowsDir + " and the run's token lacks the workflows permission")
)

// Options says what to push.
type Options struct {
	// Workspace is the run's prepared workspace, after a successful Result.
	Workspace *workspace.Workspace
	// GitURL is the firewall's git gateway for the run's repository,
	// http://<firewall>/git/<owner>/<repo>.git (workspace.ParseGitURL's rules).
	GitURL string
	// Issue and Attempt name the work branch, bumper/<issue>-<attempt>, unless Branch
	// names it (a fix run pushes to its pull request's branch); it must be the
	// workspace's.
	Issue, Attempt int
	Branch         string
	// From, for Publish, is the commit the branch must be at before it moves (a fix,
	// revise or update run's pull request head, as the firewall's push_from guards a
	// push): the branch is then never created, and one moved since (a person's push)
	// or deleted is refused. Empty (an implement run): the branch is created, or
	// fast-forwarded as a push would.
	From string
	// Head, when set, is the commit Result returned; refs/bumper/result must name it.
	Head string
	// Permissions are the installation token's (wire.ExchangeResponse.Permissions).
	// When known (non-nil) and without workflows: write, a result that touches
	// .github/workflows/ is refused before anything is sent. When nil, GitHub's own
	// refusal is recognized and reported the same way.
	Permissions map[string]string
}

// Pushed is the work branch as pushed.
type Pushed struct {
	// Branch is bumper/<issue>-<attempt>; Ref the full ref name.
	Branch, Ref string
	// Head is the commit the branch now names.
	Head string
	// UpToDate: the branch already named Head (a repeated push changed nothing).
	UpToDate bool
	// Workflows are the paths under .github/workflows/ that the pushed commits touch.
	Workflows []string
	// Via is how the branch was published: ViaAPI (Publish, the commits GitHub's and
	// signed) or ViaPush (Push, git through the gateway).
	Via string
	// Commits is the number of the round's commits Publish created; Verified how many
	// of them GitHub says are verified.
	Commits, Verified int
	// Note says why the branch was pushed with git rather than through the API.
	Note string
	// Remote are the git host's "remote:" lines, if any.
	Remote []string
}

// pushConfig allows HTTP for the push to the gateway, on top of the workspace's locked
// configuration: no signing, no tags, no submodules.
var pushConfig = []string{"protocol.http.allow=always", "push.gpgSign=false", "push.followTags=false", "push.recurseSubmodules=no", "push.negotiate=false"}

var workBranchRE = regexp.MustCompile(`^refs/heads/bumper/[1-9][0-9]{0,9}-[1-9][0-9]{0,9}$`)

// Push sends the workspace's verified result (refs/bumper/result) to the work branch
// refs/heads/bumper/<issue>-<attempt> through the firewall's git gateway, never
// forcing. A refusal by the gateway or the git host is ErrPushRefused with their
// "remote:" lines quoted; a result touching .github/workflows/ without the workflows
// permission is ErrWorkflowsPermission.
func Push(ctx context.Context, o Options) (*Pushed, error) {
	dst := ""
	switch {
	case o.Branch != "":
		if _, ok := workspace.BranchAttempt(o.Branch, o.Issue); ok {
			dst = "refs/heads/" + o.Branch
		}
	case o.Issue > 0 && o.Attempt > 0:
		dst = "refs/heads/" + workspace.Branch(o.Issue, o.Attempt)
	}
	return push(ctx, o, dst)
}

// push checks the destination on its own, whatever the gateway will say, then pushes.
func push(ctx context.Context, o Options, dst string) (*Pushed, error) {
	w := o.Workspace
	if w == nil {
		return nil, fmt.Errorf("%w: no workspace", ErrInvalidOptions)
	}
	if _, repo, err := workspace.ParseGitURL(o.GitURL); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	} else if !strings.EqualFold(repo, w.Repository) {
		return nil, fmt.Errorf("%w: GitURL names %s, the workspace is of %s", ErrInvalidOptions, repo, w.Repository)
	}
	if !workBranchRE.MatchString(dst) || dst != "refs/heads/"+w.Branch {
		return nil, fmt.Errorf("%w: a run pushes only its work branch refs/heads/%s; refusing to push to %q", ErrInvalidOptions, w.Branch, dst)
	}
	return gitPush(ctx, o, dst)
}

// gitPush pushes the result to dst through the gateway; the gateway's policy is the
// only check here.
func gitPush(ctx context.Context, o Options, dst string) (*Pushed, error) {
	w := o.Workspace
	out, err := w.Git(ctx, nil, 1<<10, "rev-parse", "--verify", "--quiet", workspace.ResultRef+"^{commit}")
	head := strings.TrimSpace(string(out))
	if err != nil || len(head) != 40 {
		return nil, fmt.Errorf("%w (call workspace.Result first)", ErrNoResult)
	}
	if o.Head != "" && o.Head != head {
		return nil, fmt.Errorf("%w: %s names %s, not the verified head %s", ErrInvalidOptions, workspace.ResultRef, head, o.Head)
	}
	p := &Pushed{Branch: strings.TrimPrefix(dst, "refs/heads/"), Ref: dst, Head: head, Via: ViaPush}
	if p.Workflows, err = workflowPaths(ctx, w, head); err != nil {
		return nil, err
	}
	if len(p.Workflows) > 0 && o.Permissions != nil && o.Permissions["workflows"] != "write" {
		return nil, workflowsError(p, "", false)
	}
	stdout, err := w.Git(ctx, pushConfig, 64<<10, "push", "--porcelain", "--no-verify", "--no-signed",
		"--no-follow-tags", "--recurse-submodules=no", "--no-force-with-lease", o.GitURL, head+":"+dst)
	var stderr string
	var ge *workspace.GitError
	if errors.As(err, &ge) {
		stderr = ge.Stderr
	}
	p.Remote = remoteLines(stderr)
	status, reason := porcelainStatus(string(stdout), dst)
	if err == nil && (status == " " || status == "*" || status == "=") {
		p.UpToDate = status == "="
		return p, nil
	}
	if err != nil && !errors.As(err, &ge) {
		return nil, fmt.Errorf("failed to push %s to %s: %w", head, dst, err)
	}
	return nil, refusal(p, reason, stderr)
}

// refusal is the error of a push the gateway or the git host refused: GitHub's
// refusal of a workflow change without the workflows permission is
// ErrWorkflowsPermission, anything else ErrPushRefused quoting the "remote:" lines.
func refusal(p *Pushed, reason, stderr string) error {
	all := strings.ToLower(reason + "\n" + stderr)
	if strings.Contains(all, "workflow") && strings.Contains(all, "permission") {
		return workflowsError(p, reason, true)
	}
	msg := fmt.Sprintf("%v: %s to %s through the git gateway", ErrPushRefused, p.Head, p.Ref)
	switch {
	case reason == "non-fast-forward" || reason == "fetch first" || strings.Contains(reason, "stale info"):
		msg += " (the branch already exists at another commit; a new attempt gets a new branch, and a fix run's branch moved since the run started)"
	case reason != "":
		msg += " (" + reason + ")"
	case strings.Contains(stderr, "could not read Username") || strings.Contains(stderr, "returned error: 401"):
		msg += " (the git host refused the run's token: revoked or expired)"
	case strings.Contains(stderr, "returned error: 403"):
		msg += " (the gateway or git host answered 403; the firewall's audit log says why)"
	}
	if len(p.Remote) > 0 {
		msg += "; the gateway or git host said:\n" + strings.Join(p.Remote, "\n")
	} else if stderr != "" {
		msg += ": " + lastLines(stderr, 8)
	}
	return &PushError{Pushed: p, Reason: reason, Sent: true, msg: msg}
}

// PushError is a refused push: Reason is git's (e.g. "this run may only push
// refs/heads/bumper/12-1"), Pushed.Remote the gateway's or git host's lines.
type PushError struct {
	Pushed *Pushed
	Reason string
	// Sent: the push reached the gateway (false when Push refused it beforehand).
	Sent      bool
	msg       string
	workflows bool
}

func (e *PushError) Error() string { return e.msg }

// Is makes errors.Is true for ErrPushRefused when the gateway or git host refused the
// push, and for ErrWorkflowsPermission when the workflows permission was missing.
func (e *PushError) Is(target error) bool {
	return (target == ErrPushRefused && e.Sent) || (target == ErrWorkflowsPermission && e.workflows)
}

func workflowsError(p *Pushed, reason string, sent bool) error {
	paths := p.Workflows
	more := ""
	if len(paths) > 10 {
		paths, more = paths[:10], fmt.Sprintf(" and %d more", len(p.Workflows)-10)
	}
	msg := fmt.Sprintf("%v: %s (%s%s); GitHub refuses a GitHub App's push that creates or updates a workflow unless its token has workflows: write. Grant the App the workflows permission and add it to bumper.token_permissions, or ask for a change that leaves %s alone",
		ErrWorkflowsPermission, p.Ref, strings.Join(paths, ", "), more, WorkflowsDir)
	if reason != "" {
		msg += "; the git host said: " + reason
	}
	return &PushError{Pushed: p, Reason: reason, Sent: sent, msg: msg, workflows: true}
}

// workflowPaths lists the paths under .github/workflows/ that any of the push's own
// commits adds, changes or deletes (GitHub looks at the commits, not the net change).
// The push's own are the run's (workspace.Own): the commits already on the git host (the
// pull request's earlier ones, and an update round's base branch with its history,
// which can reach below the shallow base and look like new work) are not.
func workflowPaths(ctx context.Context, w *workspace.Workspace, head string) ([]string, error) {
	// A merge counts with what it changes against its first parent, as GitHub judges it:
	// an update round's merge of a base branch that changed a workflow does change it.
	args := append([]string{"log", "--format=", "--name-only", "-z", "--no-renames", "--no-ext-diff", "--no-textconv", "--diff-merges=first-parent"},
		w.Own(head)...)
	out, err := w.Git(ctx, nil, 4<<20, append(args, "--", ":(literal)"+WorkflowsDir)...)
	if err != nil {
		return nil, fmt.Errorf("failed to list the result's changes under %s: %w", WorkflowsDir, err)
	}
	// The net change against the run's start too: own commits whose first-parent line
	// leaves Start (a root, or an older commit) hide what they change from the above.
	net, err := w.Git(ctx, nil, 4<<20, "diff", "--name-only", "-z", "--no-renames", "--no-ext-diff", "--no-textconv", w.Start, head, "--", ":(literal)"+WorkflowsDir)
	if err != nil {
		return nil, fmt.Errorf("failed to list the result's changes under %s: %w", WorkflowsDir, err)
	}
	out = append(append(out, 0), net...)
	var paths []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f = strings.TrimSpace(f); f != "" && !slices.Contains(paths, f) {
			paths = append(paths, f)
		}
	}
	slices.Sort(paths)
	return paths, nil
}

// porcelainStatus reads git push --porcelain: "<flag>\t<src>:<dst>\t<summary>[ (<reason>)]".
func porcelainStatus(out, dst string) (flag, reason string) {
	for _, line := range strings.Split(out, "\n") {
		parts := strings.SplitN(line, "\t", 3)
		if len(parts) != 3 || len(parts[0]) != 1 || !strings.HasSuffix(parts[1], ":"+dst) {
			continue
		}
		if i := strings.Index(parts[2], "("); i >= 0 && strings.HasSuffix(parts[2], ")") {
			reason = parts[2][i+1 : len(parts[2])-1]
		}
		return parts[0], reason
	}
	return "", ""
}

// remoteLines are the "remote:" lines of git's stderr, at most 20.
func remoteLines(stderr string) []string {
	var lines []string
	for _, l := range strings.Split(stderr, "\n") {
		l = strings.TrimRight(l, " \r")
		if strings.HasPrefix(l, "remote:") && strings.TrimSpace(strings.TrimPrefix(l, "remote:")) != "" && len(lines) < 20 {
			lines = append(lines, l)
		}
	}
	return lines
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
