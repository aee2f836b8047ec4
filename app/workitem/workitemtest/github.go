// Package workitemtest is an in-memory GitHub for the tests of app/workitem: it
// implements workitem.GitHub and workitem.Connector as GitHub behaves (numbers shared by
// issues and pull requests, comment ids and whole-second times, the 422 of an existing
// ref, a dispatch's declared inputs, a review's own-pull-request rule), and plays the
// people and runners around the App: each of their actions returns the webhook event
// GitHub would deliver for it. Failures are injected per method (FailNext, Fail) and a
// race is staged with Before.
//
// It is a fake of the interface the domain is written against, for fast tests of its
// rules; the serve-level tests in app run against the HTTP emulator (ghemu).
package workitemtest

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bumperdev/bumper/app/workitem"
)

// Options configure a GitHub.
type Options struct {
	// Bot is the App's login; default "bumper[bot]".
	Bot string
	// AppID is the App's id, which its check runs carry; default 4242.
	AppID int64
	// Now is the clock of every timestamp; nil: time.Now.
	Now func() time.Time
	// Permissions are what the installation was granted; a token asking for more is
	// refused, as GitHub does. Nil: every permission.
	Permissions map[string]string
}

// InstallationID is the id of the one installation New's repositories belong to.
const InstallationID int64 = 1

// GitHub is the fake: every repository, the App's installation, and what the App did.
type GitHub struct {
	opts Options

	mu       sync.Mutex
	repos    map[string]*repo // by lower-cased full name
	nextID   int64            // comments, runs, check runs, reviews: GitHub's ids grow
	delivery int
	commits  int
	tokens   []Token
	faults   map[string][]fault
	hooks    map[string][]func()
	calls    map[string]int
	// sent are the webhooks the App's own calls made GitHub deliver (the push of an
	// update-branch), until a test takes them (Sent).
	sent []workitem.PullEvent
}

type repo struct {
	name          string // owner/name as created
	defaultBranch string
	installed     bool
	number        int                 // the last issue or pull request number
	commits       map[string]files    // sha → tree
	refs          map[string]string   // full ref → sha
	issues        map[int]*issue      // issues and pull requests share numbers
	comments      map[int64]*comment  // by id
	perms         map[string]string   // lower-cased login → level
	workflows     map[string][]string // file → declared inputs
	runs          []*Run
	checks        []workitem.CheckRun
	reviews       map[int][]Review
	files         map[int][]workitem.PullFile
	protection    map[string]workitem.Protection
	noAdmin       bool                // the App may not read branch protection
	prComments    []*pullComment      // review comments, oldest first
	forks         map[string]string   // branch → the default branch's commit it was made from
	merges        map[int]*mergeState // pull request → what GitHub knows of its merge
	strict        map[string]bool     // branch → its protection requires up-to-date branches
}

type files map[string]string

type issue struct {
	number int
	title  string
	body   string
	author string
	state  string // open, closed
	labels []string
	pull   *workitem.Pull
}

type comment struct {
	workitem.Comment
	issue   int
	deleted bool
}

// Run is a workflow run the App dispatched.
type Run struct {
	ID         int64
	Repo       string
	Workflow   string // file name under .github/workflows
	Ref        string // branch
	SHA        string // the branch's head when dispatched
	Inputs     map[string]string
	Status     string // queued, in_progress, completed
	Conclusion string
	Runner     string
	// Actor is who dispatched it: the App.
	Actor string
}

// Identity is what GitHub's OIDC token says about the run: what a runner of it presents
// to the token exchange.
func (r Run) Identity() workitem.Identity {
	return workitem.Identity{Repository: r.Repo, WorkflowRef: fmt.Sprintf("%s/.github/workflows/%s@refs/heads/%s", r.Repo, r.Workflow, r.Ref),
		Ref: "refs/heads/" + r.Ref, SHA: r.SHA, RunID: fmt.Sprint(r.ID), EventName: "workflow_dispatch", Actor: r.Actor}
}

// Review is a pull request review as GitHub keeps it.
type Review struct {
	ID          int64
	User        string
	UserType    string
	Association string
	State       string // APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED
	CommitID    string
	Body        string
	SubmittedAt time.Time
	Comments    []workitem.ReviewComment
}

// Token is an installation token the App minted.
type Token struct {
	Repo string
	// Repos are a dependency token's repositories (ReadToken); Repo is then "".
	Repos       []string
	Permissions map[string]string
	Value       string
	ExpiresAt   time.Time
}

// New returns an empty GitHub.
func New(opts Options) *GitHub {
	if opts.Bot == "" {
		opts.Bot = "bumper[bot]"
	}
	if opts.AppID == 0 {
		opts.AppID = 4242
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &GitHub{opts: opts, repos: map[string]*repo{}, faults: map[string][]fault{},
		hooks: map[string][]func(){}, calls: map[string]int{}}
}

// Bot is the App's login.
func (g *GitHub) Bot() string { return g.opts.Bot }

// AppID is the App's id.
func (g *GitHub) AppID() int64 { return g.opts.AppID }

// now is GitHub's time: whole seconds, UTC.
func (g *GitHub) now() time.Time { return g.opts.Now().UTC().Truncate(time.Second) }

func (g *GitHub) id() int64 {
	g.nextID++
	return g.nextID
}

// AddRepo creates a repository holding files on its default branch, with the App
// installed on it.
func (g *GitHub) AddRepo(fullName, defaultBranch string, content map[string]string) workitem.Repo {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := &repo{name: fullName, defaultBranch: defaultBranch, installed: true, commits: map[string]files{},
		refs: map[string]string{}, issues: map[int]*issue{}, comments: map[int64]*comment{}, perms: map[string]string{},
		workflows: map[string][]string{}, reviews: map[int][]Review{}, files: map[int][]workitem.PullFile{},
		protection: map[string]workitem.Protection{}, forks: map[string]string{}, merges: map[int]*mergeState{}, strict: map[string]bool{}}
	g.repos[strings.ToLower(fullName)] = r
	r.refs["refs/heads/"+defaultBranch] = g.commit(r, files{}, content)
	return workitem.Repo{FullName: fullName, DefaultBranch: defaultBranch}
}

// commit makes a commit whose tree is parent's with content over it.
func (g *GitHub) commit(r *repo, parent files, content map[string]string) string {
	g.commits++
	tree := maps.Clone(parent)
	maps.Copy(tree, content)
	sum := sha1.Sum(fmt.Appendf(nil, "commit %d of %s", g.commits, r.name)) // an id of the shape git gives commits
	sha := hex.EncodeToString(sum[:])
	r.commits[sha] = tree
	return sha
}

// repo finds a repository; the caller holds mu.
func (g *GitHub) repo(name string) (*repo, error) {
	r, ok := g.repos[strings.ToLower(name)]
	if !ok {
		return nil, fmt.Errorf("%w: repository %s", workitem.ErrNotFound, name)
	}
	return r, nil
}

// must finds a repository a test names; a test naming none it made is a bug in it.
func (g *GitHub) must(name string) *repo {
	r, err := g.repo(name)
	if err != nil {
		panic(err)
	}
	return r
}

// Commit pushes a commit of content onto branch (created from the default branch when
// absent) and returns its sha. It says nothing of pull requests: see Push for that.
func (g *GitHub) Commit(repoName, branch string, content map[string]string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.must(repoName)
	from, ok := r.refs["refs/heads/"+branch]
	if !ok {
		from = r.refs["refs/heads/"+r.defaultBranch]
		r.forks[branch] = from
	}
	sha := g.commit(r, r.commits[from], content)
	r.refs["refs/heads/"+branch] = sha
	return sha
}

// Head is a branch's head commit ("" when there is no such branch).
func (g *GitHub) Head(repoName, branch string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.must(repoName).refs["refs/heads/"+branch]
}

// Ref is a ref's commit and whether it exists.
func (g *GitHub) Ref(repoName, ref string) (string, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	sha, ok := g.must(repoName).refs[ref]
	return sha, ok
}

// Refs lists the refs under prefix, sorted.
func (g *GitHub) Refs(repoName, prefix string) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for ref := range g.must(repoName).refs {
		if strings.HasPrefix(ref, prefix) {
			out = append(out, ref)
		}
	}
	slices.Sort(out)
	return out
}

// DeleteRef deletes a ref, as someone with push access can.
func (g *GitHub) DeleteRef(repoName, ref string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.must(repoName).refs, ref)
}

// AddWorkflow commits a workflow file with a workflow_dispatch trigger declaring inputs
// (each required) to the default branch.
func (g *GitHub) AddWorkflow(repoName, file string, inputs ...string) {
	r := g.repoLocked(repoName)
	g.Commit(repoName, r.defaultBranch, map[string]string{".github/workflows/" + file: "on: workflow_dispatch\n"})
	g.mu.Lock()
	defer g.mu.Unlock()
	r.workflows[file] = slices.Clone(inputs)
}

func (g *GitHub) repoLocked(name string) *repo {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.must(name)
}

// SetPermission gives a user a permission level on a repository (admin, maintain,
// write, triage, read); users without one have none, as on a private repository.
func (g *GitHub) SetPermission(repoName, user, level string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.must(repoName).perms[strings.ToLower(user)] = level
}

// Protect sets a branch's protection; nil removes it.
func (g *GitHub) Protect(repoName, branch string, p *workitem.Protection) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.must(repoName)
	if p == nil {
		delete(r.protection, branch)
		return
	}
	r.protection[branch] = *p
}

// HideProtection makes branch protection unreadable to the App (no Administration:
// read), while the required checks stay readable, as on GitHub.
func (g *GitHub) HideProtection(repoName string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.must(repoName).noAdmin = true
}

// Uninstall removes the App from a repository.
func (g *GitHub) Uninstall(repoName string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.must(repoName).installed = false
}

// Runs lists the workflow runs dispatched in a repository, oldest first.
func (g *GitHub) Runs(repoName string) []Run {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []Run
	for _, r := range g.must(repoName).runs {
		c := *r
		c.Inputs = maps.Clone(r.Inputs)
		out = append(out, c)
	}
	return out
}

// Tokens lists the installation tokens minted, oldest first.
func (g *GitHub) Tokens() []Token {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.tokens)
}

// CheckRunsOn lists every check run on a commit, oldest first (CheckRuns gives GitHub's
// "latest" view).
func (g *GitHub) CheckRunsOn(repoName, sha string) []workitem.CheckRun {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []workitem.CheckRun
	for _, c := range g.must(repoName).checks {
		if c.HeadSHA == sha {
			out = append(out, c)
		}
	}
	return out
}

// ReviewsOf lists a pull request's reviews with their bodies, oldest first.
func (g *GitHub) ReviewsOf(repoName string, number int) []Review {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.must(repoName).reviews[number])
}

// IssueComments lists an issue's comments as anyone sees them, oldest first (not as an
// App call: it is not counted, and fails for nobody).
func (g *GitHub) IssueComments(repoName string, number int) []workitem.Comment {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.must(repoName).commentsOf(number)
}

// Labels lists an issue's labels.
func (g *GitHub) Labels(repoName string, number int) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	is, ok := g.must(repoName).issues[number]
	if !ok {
		return nil
	}
	return slices.Clone(is.labels)
}

// Pull is a pull request as it is now.
func (g *GitHub) Pull(repoName string, number int) workitem.Pull {
	g.mu.Lock()
	defer g.mu.Unlock()
	is, ok := g.must(repoName).issues[number]
	if !ok || is.pull == nil {
		panic(fmt.Sprintf("%s#%d is not a pull request", repoName, number))
	}
	return *is.pull
}

// nextDelivery is a webhook delivery's id (X-GitHub-Delivery).
func (g *GitHub) nextDelivery() string {
	g.delivery++
	return fmt.Sprintf("delivery-%04d", g.delivery)
}

func isSHA(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func userType(login string) string {
	if strings.HasSuffix(strings.ToLower(login), "[bot]") {
		return "Bot"
	}
	return "User"
}
