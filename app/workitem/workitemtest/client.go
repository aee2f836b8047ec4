package workitemtest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/app/workitem"
)

// StatusError is a refusal GitHub answers with a status other than 404 and 403 (which
// are workitem.ErrNotFound and workitem.ErrForbidden): 422 mostly, in GitHub's words.
type StatusError struct {
	Code    int
	Message string
}

func (e *StatusError) Error() string { return fmt.Sprintf("GitHub answered %d: %s", e.Code, e.Message) }

func unprocessable(format string, args ...any) error {
	return &StatusError{Code: 422, Message: fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) error {
	return fmt.Errorf("%w: %s", workitem.ErrNotFound, fmt.Sprintf(format, args...))
}

// client is the installation's view of GitHub: what the App reaches with its
// installation token. A repository the App is not installed on answers 404.
type client struct{ g *GitHub }

var (
	_ workitem.GitHub    = client{}
	_ workitem.Connector = (*GitHub)(nil)
)

// Client is the installation's workitem.GitHub.
func (g *GitHub) Client() workitem.GitHub { return g.client() }

func (g *GitHub) client() client { return client{g} }

// call starts one API call: it counts it, runs the hooks staged for it and returns the
// failure injected for it, if any. Then it takes the lock and finds the repository.
func (c client) call(method, repoName string) (*repo, func(), error) {
	if err := c.g.enter(method); err != nil {
		return nil, nil, err
	}
	c.g.mu.Lock()
	r, err := c.g.repo(repoName)
	if err == nil && !r.installed {
		err = notFound("the App is not installed on %s", repoName)
	}
	if err != nil {
		c.g.mu.Unlock()
		return nil, nil, err
	}
	return r, c.g.mu.Unlock, nil
}

// Permission implements workitem.GitHub.
func (c client) Permission(_ context.Context, repoName, user string) (string, error) {
	r, unlock, err := c.call("Permission", repoName)
	if err != nil {
		return "", err
	}
	defer unlock()
	if p, ok := r.perms[strings.ToLower(user)]; ok {
		return p, nil
	}
	return "none", nil
}

// File implements workitem.GitHub: ref is a commit, a branch, or "" for the default
// branch.
func (c client) File(_ context.Context, repoName, path, ref string) ([]byte, error) {
	r, unlock, err := c.call("File", repoName)
	if err != nil {
		return nil, err
	}
	defer unlock()
	sha := ref
	if ref == "" {
		ref = r.defaultBranch
	}
	if h, ok := r.refs["refs/heads/"+ref]; ok {
		sha = h
	}
	tree, ok := r.commits[sha]
	if !ok {
		return nil, notFound("no commit found for the ref %s", ref)
	}
	content, ok := tree[path]
	if !ok {
		return nil, notFound("%s at %s", path, ref)
	}
	return []byte(content), nil
}

// BranchHead implements workitem.GitHub.
func (c client) BranchHead(_ context.Context, repoName, branch string) (string, error) {
	r, unlock, err := c.call("BranchHead", repoName)
	if err != nil {
		return "", err
	}
	defer unlock()
	sha, ok := r.refs["refs/heads/"+branch]
	if !ok {
		return "", notFound("branch %s", branch)
	}
	return sha, nil
}

func (is *issue) view(comments int) workitem.Issue {
	return workitem.Issue{Number: is.number, Title: is.title, Body: is.body, Labels: slices.Clone(is.labels), Comments: comments, Author: is.author}
}

func (r *repo) commentCount(number int) int {
	n := 0
	for _, cm := range r.comments {
		if cm.issue == number && !cm.deleted {
			n++
		}
	}
	return n
}

// IssuesWithLabel implements workitem.GitHub: issues open or closed, pull requests not.
func (c client) IssuesWithLabel(_ context.Context, repoName, label string) ([]workitem.Issue, error) {
	r, unlock, err := c.call("IssuesWithLabel", repoName)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var out []workitem.Issue
	for _, n := range slices.Sorted(maps.Keys(r.issues)) {
		is := r.issues[n]
		if is.pull == nil && slices.ContainsFunc(is.labels, func(l string) bool { return strings.EqualFold(l, label) }) {
			out = append(out, is.view(-1))
		}
	}
	return out, nil
}

// Issue implements workitem.GitHub; a pull request is an issue too, as on GitHub.
func (c client) Issue(_ context.Context, repoName string, number int) (workitem.Issue, error) {
	r, unlock, err := c.call("Issue", repoName)
	if err != nil {
		return workitem.Issue{}, err
	}
	defer unlock()
	is, ok := r.issues[number]
	if !ok {
		return workitem.Issue{}, notFound("issue %s#%d", repoName, number)
	}
	return is.view(-1), nil
}

// Comments implements workitem.GitHub: oldest first.
func (c client) Comments(_ context.Context, repoName string, number int) ([]workitem.Comment, error) {
	r, unlock, err := c.call("Comments", repoName)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if _, ok := r.issues[number]; !ok {
		return nil, notFound("issue %s#%d", repoName, number)
	}
	return r.commentsOf(number), nil
}

// commentsOf lists an issue's comments, oldest first; the caller holds mu.
func (r *repo) commentsOf(number int) []workitem.Comment {
	var out []workitem.Comment
	for _, id := range slices.Sorted(maps.Keys(r.comments)) {
		if cm := r.comments[id]; cm.issue == number && !cm.deleted {
			out = append(out, cm.Comment)
		}
	}
	return out
}

// Comment implements workitem.GitHub.
func (c client) Comment(_ context.Context, repoName string, id int64) (workitem.Comment, error) {
	r, unlock, err := c.call("Comment", repoName)
	if err != nil {
		return workitem.Comment{}, err
	}
	defer unlock()
	cm, ok := r.comments[id]
	if !ok || cm.deleted {
		return workitem.Comment{}, notFound("comment %d in %s", id, repoName)
	}
	return cm.Comment, nil
}

// PullRequest implements workitem.GitHub.
func (c client) PullRequest(_ context.Context, repoName string, number int) (workitem.Pull, error) {
	r, unlock, err := c.call("PullRequest", repoName)
	if err != nil {
		return workitem.Pull{}, err
	}
	defer unlock()
	is, ok := r.issues[number]
	if !ok || is.pull == nil {
		return workitem.Pull{}, notFound("pull request %s#%d", repoName, number)
	}
	return r.pullView(number), nil
}

// OpenPulls implements workitem.GitHub: the open pull requests into base, by number,
// their mergeability null as in GitHub's list.
func (c client) OpenPulls(_ context.Context, repoName, base string) ([]workitem.Pull, error) {
	r, unlock, err := c.call("OpenPulls", repoName)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var out []workitem.Pull
	for _, n := range slices.Sorted(maps.Keys(r.issues)) {
		if p := r.issues[n].pull; p != nil && p.State == "open" && p.BaseRef == base {
			v := *p
			v.Mergeable, v.MergeableState = nil, ""
			out = append(out, v)
		}
	}
	return out, nil
}

// CreateComment implements workitem.GitHub: the App's comment, on an issue or a pull
// request.
func (c client) CreateComment(_ context.Context, repoName string, number int, body string) (int64, error) {
	r, unlock, err := c.call("CreateComment", repoName)
	if err != nil {
		return 0, err
	}
	defer unlock()
	return c.g.addComment(r, number, c.g.opts.Bot, body)
}

// addComment stores a comment; the caller holds mu.
func (g *GitHub) addComment(r *repo, number int, author, body string) (int64, error) {
	if _, ok := r.issues[number]; !ok {
		return 0, notFound("issue %s#%d", r.name, number)
	}
	if body == "" {
		return 0, unprocessable("body cannot be blank")
	}
	if len([]rune(body)) > 65536 {
		return 0, unprocessable("body is too long (maximum is 65536 characters)")
	}
	now := g.now()
	id := g.id()
	r.comments[id] = &comment{Comment: workitem.Comment{ID: id, Author: author, AuthorType: userType(author), Body: body,
		CreatedAt: now, UpdatedAt: now}, issue: number}
	return id, nil
}

// EditComment implements workitem.GitHub.
func (c client) EditComment(_ context.Context, repoName string, id int64, body string) error {
	r, unlock, err := c.call("EditComment", repoName)
	if err != nil {
		return err
	}
	defer unlock()
	return c.g.editComment(r, id, body)
}

func (g *GitHub) editComment(r *repo, id int64, body string) error {
	cm, ok := r.comments[id]
	if !ok || cm.deleted {
		return notFound("comment %d in %s", id, r.name)
	}
	if len([]rune(body)) > 65536 {
		return unprocessable("body is too long (maximum is 65536 characters)")
	}
	cm.Body, cm.UpdatedAt = body, g.now()
	return nil
}

// AddLabel implements workitem.GitHub: adding a label the issue has changes nothing.
func (c client) AddLabel(_ context.Context, repoName string, number int, label string) error {
	r, unlock, err := c.call("AddLabel", repoName)
	if err != nil {
		return err
	}
	defer unlock()
	return addLabel(r, number, label)
}

func addLabel(r *repo, number int, label string) error {
	is, ok := r.issues[number]
	if !ok {
		return notFound("issue %s#%d", r.name, number)
	}
	if !slices.ContainsFunc(is.labels, func(l string) bool { return strings.EqualFold(l, label) }) {
		is.labels = append(is.labels, label)
	}
	return nil
}

// RemoveLabel implements workitem.GitHub: a label already absent is no error.
func (c client) RemoveLabel(_ context.Context, repoName string, number int, label string) error {
	r, unlock, err := c.call("RemoveLabel", repoName)
	if err != nil {
		return err
	}
	defer unlock()
	is, ok := r.issues[number]
	if !ok {
		return notFound("issue %s#%d", repoName, number)
	}
	is.labels = slices.DeleteFunc(is.labels, func(l string) bool { return strings.EqualFold(l, label) })
	return nil
}

// CreateRef implements workitem.GitHub: GitHub's one atomic create-if-absent. A ref that
// exists reports false; a malformed name or an unknown commit is GitHub's 422 error.
func (c client) CreateRef(_ context.Context, repoName, ref, sha string) (bool, error) {
	r, unlock, err := c.call("CreateRef", repoName)
	if err != nil {
		return false, err
	}
	defer unlock()
	if !strings.HasPrefix(ref, "refs/") || strings.Count(ref, "/") < 2 {
		return false, unprocessable("Reference name is not valid: %q", ref)
	}
	if _, ok := r.commits[sha]; !ok {
		return false, unprocessable("Object does not exist")
	}
	if _, ok := r.refs[ref]; ok {
		return false, nil
	}
	r.refs[ref] = sha
	return true, nil
}

// RefExists implements workitem.GitHub.
func (c client) RefExists(_ context.Context, repoName, ref string) (bool, error) {
	r, unlock, err := c.call("RefExists", repoName)
	if err != nil {
		return false, err
	}
	defer unlock()
	_, ok := r.refs[ref]
	return ok, nil
}

// RunByTitle implements workitem.GitHub: the repository's workflow is Bumper's template,
// whose run-name makes each run's title wire.RunName of its inputs.
func (c client) RunByTitle(_ context.Context, repoName, title, actor string, _ time.Time) (int64, error) {
	rp, unlock, err := c.call("RunByTitle", repoName)
	if err != nil {
		return 0, err
	}
	defer unlock()
	for _, run := range slices.Backward(rp.runs) {
		attempt, _ := strconv.Atoi(run.Inputs[wire.DispatchInputAttempt])
		if run.Actor == actor && wire.RunName(run.Inputs[wire.DispatchInputWorkItem], attempt, wire.Stage(run.Inputs[wire.DispatchInputStage])) == title {
			return run.ID, nil
		}
	}
	return 0, nil
}

// Dispatch implements workitem.GitHub: the workflow must be on the ref with a
// workflow_dispatch trigger, and the inputs exactly those it declares.
func (c client) Dispatch(_ context.Context, repoName, workflow, ref string, inputs map[string]string) (int64, error) {
	r, unlock, err := c.call("Dispatch", repoName)
	if err != nil {
		return 0, err
	}
	defer unlock()
	head, ok := r.refs["refs/heads/"+ref]
	if !ok {
		return 0, unprocessable("No ref found for: %s", ref)
	}
	declared, ok := r.workflows[workflow]
	if _, onRef := r.commits[head][".github/workflows/"+workflow]; !ok || !onRef {
		return 0, notFound("workflow %s", workflow)
	}
	var unexpected []string
	for k := range inputs {
		if !slices.Contains(declared, k) {
			unexpected = append(unexpected, k)
		}
	}
	if len(unexpected) > 0 {
		sort.Strings(unexpected)
		return 0, unprocessable("Unexpected inputs provided: %q", unexpected)
	}
	for _, k := range declared {
		if _, ok := inputs[k]; !ok {
			return 0, unprocessable("Required input '%s' not provided", k)
		}
	}
	run := &Run{ID: c.g.id(), Repo: r.name, Workflow: workflow, Ref: ref, SHA: head, Inputs: maps.Clone(inputs),
		Status: "queued", Actor: c.g.opts.Bot}
	r.runs = append(r.runs, run)
	return run.ID, nil
}

// PullFiles implements workitem.GitHub.
func (c client) PullFiles(_ context.Context, repoName string, number int) ([]workitem.PullFile, error) {
	r, unlock, err := c.call("PullFiles", repoName)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if is, ok := r.issues[number]; !ok || is.pull == nil {
		return nil, notFound("pull request %s#%d", repoName, number)
	}
	return slices.Clone(r.files[number]), nil
}

// CreateReview implements workitem.GitHub: an open pull request, an event GitHub knows,
// never approving or requesting changes on one's own pull request, a body where GitHub
// asks for one, and inline comments only on lines of the diff.
func (c client) CreateReview(_ context.Context, repoName string, number int, rv workitem.Review) (int64, error) {
	r, unlock, err := c.call("CreateReview", repoName)
	if err != nil {
		return 0, err
	}
	defer unlock()
	is, ok := r.issues[number]
	if !ok || is.pull == nil {
		return 0, notFound("pull request %s#%d", repoName, number)
	}
	states := map[string]string{"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED", "COMMENT": "COMMENTED"}
	state, ok := states[rv.Event]
	switch {
	case !ok:
		return 0, unprocessable("event must be APPROVE, REQUEST_CHANGES or COMMENT")
	case is.state != "open":
		return 0, unprocessable("Unprocessable Entity: the pull request is closed")
	case strings.EqualFold(is.author, c.g.opts.Bot) && state != "COMMENTED":
		return 0, unprocessable("Can not approve or request changes on your own pull request")
	case state != "APPROVED" && strings.TrimSpace(rv.Body) == "" && len(rv.Comments) == 0:
		return 0, unprocessable("Review body is required for %s", rv.Event)
	}
	commit := rv.CommitID
	if commit == "" {
		commit = is.pull.HeadSHA
	} else if _, ok := r.commits[commit]; !ok {
		return 0, unprocessable("No commit found for SHA: %s", commit)
	}
	lines := diffLines(r.files[number])
	for _, cm := range rv.Comments {
		if !lines[diffLine{cm.Path, cm.Side, cm.Line}] {
			return 0, unprocessable("Line could not be resolved: %s:%d (%s)", cm.Path, cm.Line, cm.Side)
		}
	}
	id := c.g.id()
	r.reviews[number] = append(r.reviews[number], Review{ID: id, User: c.g.opts.Bot, UserType: "Bot", Association: "NONE", State: state,
		CommitID: commit, Body: rv.Body, SubmittedAt: c.g.now(), Comments: slices.Clone(rv.Comments)})
	c.g.reviewComments(r, number, id, commit, rv)
	return id, nil
}

// CreateCheckRun implements workitem.GitHub: a completed check run of the App.
func (c client) CreateCheckRun(_ context.Context, repoName string, cr workitem.CheckRun) (int64, error) {
	r, unlock, err := c.call("CreateCheckRun", repoName)
	if err != nil {
		return 0, err
	}
	defer unlock()
	return c.g.addCheckRun(r, cr, c.g.opts.AppID)
}

var conclusions = []string{"action_required", "cancelled", "failure", "neutral", "success", "skipped", "stale", "timed_out", "startup_failure"}

func (g *GitHub) addCheckRun(r *repo, cr workitem.CheckRun, app int64) (int64, error) {
	switch {
	case cr.Name == "":
		return 0, unprocessable("name wasn't supplied")
	case !isSHA(cr.HeadSHA) || r.commits[cr.HeadSHA] == nil:
		return 0, unprocessable("No commit found for SHA: %s", cr.HeadSHA)
	case !slices.Contains(conclusions, cr.Conclusion):
		return 0, unprocessable("conclusion %q is not included in the list", cr.Conclusion)
	case len(cr.Summary) > 65535:
		return 0, unprocessable("output.summary is too long (maximum is 65535 characters)")
	}
	cr.ID, cr.Status, cr.AppID = g.id(), "completed", app
	r.checks = append(r.checks, cr)
	return cr.ID, nil
}

// CheckRuns implements workitem.GitHub: the latest run of each name (per App) on the
// commit, newest first.
func (c client) CheckRuns(_ context.Context, repoName, sha string) ([]workitem.CheckRun, error) {
	r, unlock, err := c.call("CheckRuns", repoName)
	if err != nil {
		return nil, err
	}
	defer unlock()
	type key struct {
		name string
		app  int64
	}
	seen := map[key]bool{}
	var out []workitem.CheckRun
	for i := len(r.checks) - 1; i >= 0; i-- {
		cr := r.checks[i]
		if k := (key{cr.Name, cr.AppID}); cr.HeadSHA == sha && !seen[k] {
			seen[k] = true
			out = append(out, cr)
		}
	}
	return out, nil
}

// RequiredChecks implements workitem.GitHub: readable without the administration
// permission, as the branch endpoint shows them.
func (c client) RequiredChecks(_ context.Context, repoName, branch string) ([]workitem.RequiredCheck, error) {
	r, unlock, err := c.call("RequiredChecks", repoName)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if _, ok := r.refs["refs/heads/"+branch]; !ok {
		return nil, notFound("branch %s", branch)
	}
	return slices.Clone(r.protection[branch].RequiredChecks), nil
}

// Reviews implements workitem.GitHub: oldest first.
func (c client) Reviews(_ context.Context, repoName string, number int) ([]workitem.ReviewInfo, error) {
	r, unlock, err := c.call("Reviews", repoName)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if is, ok := r.issues[number]; !ok || is.pull == nil {
		return nil, notFound("pull request %s#%d", repoName, number)
	}
	var out []workitem.ReviewInfo
	for _, rv := range r.reviews[number] {
		out = append(out, rv.info())
	}
	return out, nil
}

// BranchProtection implements workitem.GitHub.
func (c client) BranchProtection(_ context.Context, repoName, branch string) (workitem.Protection, error) {
	r, unlock, err := c.call("BranchProtection", repoName)
	if err != nil {
		return workitem.Protection{}, err
	}
	defer unlock()
	if r.noAdmin {
		return workitem.Protection{}, fmt.Errorf("%w: Resource not accessible by integration", workitem.ErrForbidden)
	}
	p, ok := r.protection[branch]
	if !ok {
		return workitem.Protection{}, notFound("Branch not protected")
	}
	p.BypassApps, p.RequiredChecks = slices.Clone(p.BypassApps), slices.Clone(p.RequiredChecks)
	return p, nil
}

// RepoToken implements workitem.GitHub: a one-hour token for one repository, with no
// permission the installation was not granted.
func (c client) RepoToken(_ context.Context, repoName string, permissions map[string]string) (string, time.Time, error) {
	r, unlock, err := c.call("RepoToken", repoName)
	if err != nil {
		return "", time.Time{}, err
	}
	defer unlock()
	if granted := c.g.opts.Permissions; granted != nil {
		for k, v := range permissions {
			if have, ok := granted[k]; !ok || have == "read" && v == "write" {
				return "", time.Time{}, unprocessable("The permissions requested are not granted to this installation.")
			}
		}
	}
	tok := Token{Repo: r.name, Permissions: maps.Clone(permissions), Value: fmt.Sprintf("ghs_fake%04d", len(c.g.tokens)+1),
		ExpiresAt: c.g.now().Add(time.Hour)}
	c.g.tokens = append(c.g.tokens, tok)
	return tok.Value, tok.ExpiresAt, nil
}

// ReadToken implements workitem.GitHub: a one-hour contents: read token for repos, or
// ErrUnprocessable, as GitHub answers, when one of them is not installed.
func (c client) ReadToken(_ context.Context, repos []string) (string, time.Time, error) {
	if err := c.g.enter("ReadToken"); err != nil {
		return "", time.Time{}, err
	}
	c.g.mu.Lock()
	defer c.g.mu.Unlock()
	var names []string
	for _, name := range repos {
		r, err := c.g.repo(name)
		if err != nil || !r.installed {
			return "", time.Time{}, unprocessable("There is at least one repository that does not exist or is not accessible to the parent installation.")
		}
		names = append(names, r.name)
	}
	tok := Token{Repos: names, Permissions: map[string]string{"contents": "read"}, Value: fmt.Sprintf("ghs_fake%04d", len(c.g.tokens)+1),
		ExpiresAt: c.g.now().Add(time.Hour)}
	c.g.tokens = append(c.g.tokens, tok)
	return tok.Value, tok.ExpiresAt, nil
}

// Installation implements workitem.Connector.
func (g *GitHub) Installation(_ context.Context, id int64) (workitem.GitHub, error) {
	if err := g.enter("Installation"); err != nil {
		return nil, err
	}
	if id != InstallationID {
		return nil, notFound("installation %d", id)
	}
	return g.client(), nil
}

// ForRepository implements workitem.Connector.
func (g *GitHub) ForRepository(_ context.Context, repoName string) (workitem.GitHub, error) {
	if err := g.enter("ForRepository"); err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	r, err := g.repo(repoName)
	if err != nil {
		return nil, err
	}
	if !r.installed {
		return nil, notFound("the App is not installed on %s", repoName)
	}
	return g.client(), nil
}

// Repositories implements workitem.Connector.
func (g *GitHub) Repositories(context.Context) (map[int64][]workitem.Repo, error) {
	if err := g.enter("Repositories"); err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []workitem.Repo
	for _, k := range slices.Sorted(maps.Keys(g.repos)) {
		if r := g.repos[k]; r.installed {
			out = append(out, workitem.Repo{FullName: r.name, DefaultBranch: r.defaultBranch})
		}
	}
	return map[int64][]workitem.Repo{InstallationID: out}, nil
}

// BotLogin implements workitem.Connector.
func (g *GitHub) BotLogin(context.Context) (string, error) {
	if err := g.enter("BotLogin"); err != nil {
		return "", err
	}
	return g.opts.Bot, nil
}
