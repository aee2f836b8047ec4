package state

import (
	"sort"
	"strings"
	"time"
)

// Repo is a repository and everything that lives in it. Its scalar fields are plain
// (read and set them inside Store.Do, then MarkChanged); its collections are reached
// through its methods, which mark the world changed when they change it.
type Repo struct {
	ID            int64
	Owner         string
	Name          string
	Private       bool
	Description   string
	DefaultBranch string
	CreatedAt     time.Time
	UpdatedAt     time.Time
	PushedAt      time.Time

	world          *World
	protected      map[string]*Protection // by branch name
	collaborators  map[string]string      // Key(login) -> permission
	labels         map[string]*Label      // by Key(name)
	nextNumber     int
	issues         map[int]*Issue // pull requests are issues too
	comments       map[int64]*Comment
	pulls          map[int]*Pull
	reviews        map[int64]*Review
	reviewComments map[int64]*ReviewComment
	checkRuns      map[int64]*CheckRun
	statuses       map[int64]*CommitStatus
	runs           map[int64]*WorkflowRun
	nextRunNumber  int
	workflows      map[string]int64         // workflow file path -> ID; nil until the first dispatch
	verifications  map[string]*Verification // by commit SHA: the commits the emulator signed
}

// init ties the repository to its world and gives it the collections a state saved
// before they existed lacks.
func (r *Repo) init(w *World) {
	r.world = w
	initMap(&r.protected)
	initMap(&r.collaborators)
	initMap(&r.labels)
	initMap(&r.issues)
	initMap(&r.comments)
	initMap(&r.pulls)
	initMap(&r.reviews)
	initMap(&r.reviewComments)
	initMap(&r.checkRuns)
	initMap(&r.statuses)
	initMap(&r.runs)
	initMap(&r.verifications)
	r.nextNumber = max(r.nextNumber, 1)
	r.nextRunNumber = max(r.nextRunNumber, 1)
}

func initMap[K comparable, V any](m *map[K]V) {
	if *m == nil {
		*m = map[K]V{}
	}
}

// sorted returns m's values ordered by less, those keep accepts only.
func sorted[K comparable, V any](m map[K]V, keep func(V) bool, less func(a, b V) bool) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		if keep == nil || keep(v) {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return less(out[i], out[j]) })
	return out
}

// FullName is "owner/name".
func (r *Repo) FullName() string { return r.Owner + "/" + r.Name }

// Protection is the protection of branch, or nil.
func (r *Repo) Protection(branch string) *Protection { return r.protected[branch] }

// ProtectedBranches are the names of the protected branches, sorted.
func (r *Repo) ProtectedBranches() []string {
	out := make([]string, 0, len(r.protected))
	for b := range r.protected {
		out = append(out, b)
	}
	sort.Strings(out)
	return out
}

// Protect protects branch with p, replacing what protected it.
func (r *Repo) Protect(branch string, p *Protection) {
	r.protected[branch] = p
	r.world.changed = true
}

// Unprotect removes the protection of branch.
func (r *Repo) Unprotect(branch string) {
	delete(r.protected, branch)
	r.world.changed = true
}

// Verification is what GitHub says of commit sha's signature: the one recorded when
// the emulator signed it, else unsigned.
func (r *Repo) Verification(sha string) Verification {
	if v := r.verifications[sha]; v != nil {
		return *v
	}
	return Verification{Reason: "unsigned"}
}

// SetVerification records the signature of commit sha.
func (r *Repo) SetVerification(sha string, v Verification) {
	r.verifications[sha] = &v
	r.world.changed = true
}

// Collaborator is the permission recorded for login, "" when none.
func (r *Repo) Collaborator(login string) string { return r.collaborators[Key(login)] }

// AddCollaborator gives login a permission (read, triage, write, maintain, admin).
func (r *Repo) AddCollaborator(login, perm string) {
	r.collaborators[Key(login)] = perm
	r.world.changed = true
}

// Role is the user's role on the repository: the owner is admin, collaborators have
// their recorded permission, others none ("").
func (r *Repo) Role(u *User) string {
	if u == nil {
		return ""
	}
	if strings.EqualFold(u.Login, r.Owner) {
		return "admin"
	}
	return r.collaborators[Key(u.Login)]
}

// Label is the label named name (in any case), or nil.
func (r *Repo) Label(name string) *Label { return r.labels[Key(name)] }

// Labels are the repository's labels, by Key of their names.
func (r *Repo) Labels() []*Label {
	return sorted(r.labels, nil, func(a, b *Label) bool { return Key(a.Name) < Key(b.Name) })
}

// AddLabel adds a label (its ID already given).
func (r *Repo) AddLabel(l *Label) {
	r.labels[Key(l.Name)] = l
	r.world.changed = true
}

// Issue is issue (or pull request) number n, or nil.
func (r *Repo) Issue(n int) *Issue { return r.issues[n] }

// Issues are the issues and pull requests, by number.
func (r *Repo) Issues() []*Issue {
	return sorted(r.issues, nil, func(a, b *Issue) bool { return a.Number < b.Number })
}

// AddIssue gives the issue the repository's next number and adds it.
func (r *Repo) AddIssue(is *Issue) {
	is.Number = r.nextNumber
	r.nextNumber++
	r.issues[is.Number] = is
	r.world.changed = true
}

// Pull is pull request number n, or nil (an issue's number, or none).
func (r *Repo) Pull(n int) *Pull { return r.pulls[n] }

// Pulls are the pull requests, by number.
func (r *Repo) Pulls() []*Pull {
	return sorted(r.pulls, nil, func(a, b *Pull) bool { return a.Number < b.Number })
}

// AddPull adds a pull request; its issue, with the same number, is added first.
func (r *Repo) AddPull(p *Pull) {
	r.pulls[p.Number] = p
	r.world.changed = true
}

// Comment is the issue comment with id, or nil.
func (r *Repo) Comment(id int64) *Comment { return r.comments[id] }

// Comments are issue (or pull request) number n's comments, oldest first.
func (r *Repo) Comments(n int) []*Comment {
	return sorted(r.comments, func(c *Comment) bool { return c.IssueNumber == n },
		func(a, b *Comment) bool { return a.ID < b.ID })
}

// AddComment adds a comment (its ID already given).
func (r *Repo) AddComment(c *Comment) {
	r.comments[c.ID] = c
	r.world.changed = true
}

// DeleteComment removes a comment.
func (r *Repo) DeleteComment(id int64) {
	delete(r.comments, id)
	r.world.changed = true
}

// Review is the review with id, or nil.
func (r *Repo) Review(id int64) *Review { return r.reviews[id] }

// Reviews are pull request n's reviews, pending ones included, oldest first.
func (r *Repo) Reviews(n int) []*Review {
	return sorted(r.reviews, func(rv *Review) bool { return rv.PullNumber == n },
		func(a, b *Review) bool { return a.ID < b.ID })
}

// AddReview adds a review (its ID already given).
func (r *Repo) AddReview(rv *Review) {
	r.reviews[rv.ID] = rv
	r.world.changed = true
}

// DeleteReview removes a review and its inline comments (a pending review deleted by
// its author).
func (r *Repo) DeleteReview(id int64) {
	for cid, c := range r.reviewComments {
		if c.ReviewID == id {
			delete(r.reviewComments, cid)
		}
	}
	delete(r.reviews, id)
	r.world.changed = true
}

// PendingReview is login's pending review of pull request n, or nil: GitHub gives a
// person at most one.
func (r *Repo) PendingReview(n int, login string) *Review {
	for _, rv := range r.Reviews(n) {
		if rv.State == "PENDING" && Key(rv.User) == Key(login) {
			return rv
		}
	}
	return nil
}

// ReviewComment is the inline comment with id, or nil.
func (r *Repo) ReviewComment(id int64) *ReviewComment { return r.reviewComments[id] }

// DeleteReviewComment removes an inline comment.
func (r *Repo) DeleteReviewComment(id int64) {
	delete(r.reviewComments, id)
	r.world.changed = true
}

// Thread is the review thread whose first comment is root: it, then its replies,
// oldest first; nil when root is no thread's first comment.
func (r *Repo) Thread(root int64) []*ReviewComment {
	first := r.reviewComments[root]
	if first == nil || first.InReplyTo != 0 {
		return nil
	}
	return sorted(r.reviewComments, func(c *ReviewComment) bool { return c.Root() == root },
		func(a, b *ReviewComment) bool { return a.ID < b.ID })
}

// AllReviewComments are every pull request's inline comments, oldest first.
func (r *Repo) AllReviewComments() []*ReviewComment {
	return sorted(r.reviewComments, nil, func(a, b *ReviewComment) bool { return a.ID < b.ID })
}

// ReviewComments are pull request n's inline comments, those of pending reviews
// included, oldest first.
func (r *Repo) ReviewComments(n int) []*ReviewComment {
	return sorted(r.reviewComments, func(c *ReviewComment) bool { return c.PullNumber == n },
		func(a, b *ReviewComment) bool { return a.ID < b.ID })
}

// AddReviewComment adds an inline comment (its ID already given).
func (r *Repo) AddReviewComment(c *ReviewComment) {
	r.reviewComments[c.ID] = c
	r.world.changed = true
}

// CheckRun is the check run with id, or nil.
func (r *Repo) CheckRun(id int64) *CheckRun { return r.checkRuns[id] }

// CheckRunsOn are the check runs on commit sha, oldest first.
func (r *Repo) CheckRunsOn(sha string) []*CheckRun {
	return sorted(r.checkRuns, func(cr *CheckRun) bool { return cr.HeadSHA == sha },
		func(a, b *CheckRun) bool { return a.ID < b.ID })
}

// CheckSuite are the check runs of suite id, oldest first.
func (r *Repo) CheckSuite(id int64) []*CheckRun {
	return sorted(r.checkRuns, func(cr *CheckRun) bool { return cr.SuiteID == id },
		func(a, b *CheckRun) bool { return a.ID < b.ID })
}

// AddCheckRun adds a check run (its ID already given).
func (r *Repo) AddCheckRun(cr *CheckRun) {
	r.checkRuns[cr.ID] = cr
	r.world.changed = true
}

// StatusesOn are the commit statuses on sha, oldest first.
func (r *Repo) StatusesOn(sha string) []*CommitStatus {
	return sorted(r.statuses, func(st *CommitStatus) bool { return st.SHA == sha },
		func(a, b *CommitStatus) bool { return a.ID < b.ID })
}

// AddStatus adds a commit status (its ID already given).
func (r *Repo) AddStatus(st *CommitStatus) {
	r.statuses[st.ID] = st
	r.world.changed = true
}

// LatestStatuses is the newest status of each context on sha (contexts compare
// case-insensitively, as GitHub's do), ordered by context.
func (r *Repo) LatestStatuses(sha string) []*CommitStatus {
	latest := map[string]*CommitStatus{}
	for _, st := range r.StatusesOn(sha) {
		latest[Key(st.Context)] = st
	}
	return sorted(latest, nil, func(a, b *CommitStatus) bool { return Key(a.Context) < Key(b.Context) })
}

// LatestStatus is the newest status of one context on sha, or nil.
func (r *Repo) LatestStatus(sha, context string) *CommitStatus {
	for _, st := range r.LatestStatuses(sha) {
		if strings.EqualFold(st.Context, context) {
			return st
		}
	}
	return nil
}

// Run is the workflow run with id, or nil.
func (r *Repo) Run(id int64) *WorkflowRun { return r.runs[id] }

// Runs are the workflow runs, oldest first.
func (r *Repo) Runs() []*WorkflowRun {
	return sorted(r.runs, nil, func(a, b *WorkflowRun) bool { return a.ID < b.ID })
}

// RunByJob is the run whose (only) job has the ID, or nil.
func (r *Repo) RunByJob(jobID int64) *WorkflowRun {
	for _, run := range r.runs {
		if run.JobID == jobID {
			return run
		}
	}
	return nil
}

// AddRun gives the run the repository's next run number and adds it.
func (r *Repo) AddRun(run *WorkflowRun) {
	run.Number = r.nextRunNumber
	r.nextRunNumber++
	r.runs[run.ID] = run
	r.world.changed = true
}

// WorkflowID is the ID of the workflow file at path, given on first use.
func (r *Repo) WorkflowID(path string) int64 {
	if id, ok := r.workflows[path]; ok {
		return id
	}
	initMap(&r.workflows)
	id := r.world.NextID()
	r.workflows[path] = id
	return id
}

// WorkflowPath is the path of the workflow with id.
func (r *Repo) WorkflowPath(id int64) (string, bool) {
	for p, wid := range r.workflows {
		if wid == id {
			return p, true
		}
	}
	return "", false
}
