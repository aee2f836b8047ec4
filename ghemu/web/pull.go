package web

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bumperdev/bumper/ghemu/gitserver"
	"github.com/bumperdev/bumper/ghemu/state"
)

// ---- view models: copies of the world taken inside Store.Do, Markdown rendered ----

type check struct {
	ID         int64
	Name       string
	Status     string
	Conclusion string
	Title      string
	Summary    template.HTML
	Text       template.HTML
	DetailsURL string
	HeadSHA    string
	Started    time.Time
	Completed  *time.Time
}

// Result is the word the badge shows: the conclusion, or the status while running.
func (c check) Result() string {
	if c.Status == "completed" {
		return c.Conclusion
	}
	return strings.ReplaceAll(c.Status, "_", " ")
}

type review struct {
	ID        int64
	User      string
	Bot       bool
	State     string
	Body      template.HTML
	CommitID  string
	Submitted time.Time
	Comments  []reviewComment
}

// reviewComment is an inline comment of a review, on a line of a file.
type reviewComment struct {
	ID      int64
	User    string
	Bot     bool
	Path    string
	Line    int
	Side    string
	Body    template.HTML
	Created time.Time
	Edited  bool
}

// thread is a review thread: its first comment's place, the lines of the diff it was
// made on, and its comments, first comment first.
type thread struct {
	ID         int64
	Path       string
	Line       int
	Side       string
	Hunk       []diffLine
	Resolved   bool
	ResolvedBy string
	Comments   []reviewComment
}

type pullView struct {
	issueView
	Head, Base       string
	HeadSHA, BaseSHA string
	Draft, Merged    bool
	MergedBy         string
	MergedAt         *time.Time
	// Blocked says why branch protection refuses the merge; "" when it does not.
	Blocked string
	// MergeState is mergeable_state; Conflict and Behind what the last merge of the two
	// commits said.
	MergeState       string
	Conflict, Behind bool
	Checks           []check
	Reviews          []review
	Threads          []thread
	// Pending are the signed-in user's inline comments of their pending review.
	Pending  []reviewComment
	Diff     *diff
	DiffNote string
	// Commits are the pull request's commits, oldest first, as its Commits tab lists
	// them; CommitsNote says why they could not be read.
	Commits     []pullCommit
	CommitsNote string
}

// pullCommit is one commit of a pull request with GitHub's badge: Verified for a
// signature GitHub verified, Unverified for one it could not, none for an unsigned one.
type pullCommit struct {
	SHA, Headline, Author string
	Badge                 string
}

// maxPullCommits is how many commits the page lists, as GitHub's Commits tab does.
const maxPullCommits = 250

// ---- pages ----

// findPull finds a pull request (or an issue: p is nil) by its path segments.
func findPull(st *state.World, owner, name, num string) (*state.Repo, *state.Issue, *state.Pull, error) {
	n, err := number(num, "Pull request")
	if err != nil {
		return nil, nil, nil, err
	}
	rp := st.Repo(owner, name)
	if rp == nil {
		return nil, nil, nil, notFound("Repository " + owner + "/" + name)
	}
	is, p := rp.Issue(n), rp.Pull(n)
	if is == nil {
		return nil, nil, nil, notFound("Pull request #" + num)
	}
	return rp, is, p, nil
}

func (v *View) pull(w http.ResponseWriter, r *http.Request, owner, name, num string) error {
	var pv pullView
	var pg page
	var redirect string
	var err error
	viewer := ""
	if ss, ok := v.sessionOf(r); ok {
		viewer = ss.login
	}
	v.store.Do(func(st *state.World) {
		var rp *state.Repo
		var is *state.Issue
		var p *state.Pull
		if rp, is, p, err = findPull(st, owner, name, num); err != nil {
			return
		}
		if p == nil {
			// An issue's number under /pull/ goes to the issue, as on GitHub.
			redirect = "/" + rp.FullName() + "/issues/" + num
			return
		}
		pv = pullView{issueView: issueViewOf(st, rp, is), Head: p.Head, Base: p.Base,
			HeadSHA: p.HeadSHA, BaseSHA: p.BaseSHA, Draft: p.Draft, Merged: p.Merged, MergedBy: p.MergedBy,
			MergedAt: p.MergedAt}
		// The page computes the mergeability GitHub's background job would have by now.
		v.conv.Refresh(r.Context(), st, rp, p)
		pv.MergeState = rp.MergeState(is, p)
		if mc := p.Current(); mc != nil {
			pv.Conflict, pv.Behind = mc.Conflict, mc.Behind
		}
		if why := rp.ProtectionUnmet(p, ""); why != "" && is.State == "open" {
			pv.Blocked = why + " Branch protection on " + p.Base + ": " + describeProtection(rp.Protection(p.Base)) + "."
		}
		pv.Checks = latestChecks(rp, p.HeadSHA)
		pv.Reviews = reviewsOf(st, rp, p.Number)
		pv.Threads = threadsOf(st, rp, p.Number)
		if viewer != "" {
			if rv := rp.PendingReview(p.Number, viewer); rv != nil {
				pv.Pending = reviewCommentsOf(st, rp, rv)
			}
		}
		pg = page{Title: fmt.Sprintf("%s · Pull Request #%d · %s", is.Title, p.Number, rp.FullName()),
			Owner: rp.Owner, Repo: rp.Name, Private: rp.Private}
	})
	if err != nil {
		return err
	}
	if redirect != "" {
		http.Redirect(w, r, redirect, http.StatusFound)
		return nil
	}
	raw, err := v.git.Diff(r.Context(), pg.Owner, pg.Repo, pv.BaseSHA, pv.HeadSHA)
	if err != nil {
		pv.DiffNote = "The diff could not be computed: " + err.Error()
	} else {
		pv.Diff = parseDiff(raw)
		if viewer != "" && pv.State == "open" {
			pv.Diff.commentable(r.URL.Query().Get("comment"))
		}
	}
	if pv.Commits, err = v.pullCommits(r.Context(), pg.Owner, pg.Repo, pv.BaseSHA, pv.HeadSHA); err != nil {
		pv.CommitsNote = "The commits could not be read: " + err.Error()
	}
	pg.Data = pv
	v.writePage(w, r, http.StatusOK, "pull", pg)
	return nil
}

// pullCommits reads the commits of base..head, oldest first, each with the badge its
// verification gives it.
func (v *View) pullCommits(ctx context.Context, owner, name, base, head string) ([]pullCommit, error) {
	shas, err := v.git.CommitsBetween(ctx, owner, name, base, head, maxPullCommits)
	if err != nil {
		return nil, err
	}
	out := make([]pullCommit, len(shas))
	for i, sha := range shas {
		ci, err := v.git.Commit(ctx, owner, name, sha)
		if err != nil {
			return nil, err
		}
		headline, _, _ := strings.Cut(ci.Message, "\n")
		// rev-list is newest first; the tab reads oldest first.
		out[len(shas)-1-i] = pullCommit{SHA: sha, Headline: headline, Author: ci.Author.Name}
	}
	v.store.Do(func(st *state.World) {
		rp := st.Repo(owner, name)
		if rp == nil {
			return
		}
		for i := range out {
			switch ver := rp.Verification(out[i].SHA); {
			case ver.Verified:
				out[i].Badge = "Verified"
			case ver.Reason != "unsigned":
				out[i].Badge = "Unverified"
			}
		}
	})
	return out, nil
}

// pullDiff serves diff_url and patch_url (…/pull/{n}.diff, .patch) as plain text.
func (v *View) pullDiff(w http.ResponseWriter, r *http.Request, owner, name, file string) error {
	num, ext, _ := strings.Cut(file, ".")
	var base, head string
	var err error
	v.store.Do(func(st *state.World) {
		var rp *state.Repo
		var p *state.Pull
		rp, _, p, err = findPull(st, owner, name, num)
		if err == nil && p == nil {
			err = notFound("Pull request #" + num)
		}
		if err == nil {
			owner, name, base, head = rp.Owner, rp.Name, p.BaseSHA, p.HeadSHA
		}
	})
	if err != nil {
		return err
	}
	var raw []byte
	if ext == "patch" {
		raw, err = v.git.Patch(r.Context(), owner, name, base, head)
	} else {
		raw, err = v.git.Diff(r.Context(), owner, name, base, head)
	}
	if err != nil {
		return fmt.Errorf("failed to compute the %s of pull request #%s: %w", ext, num, err)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write(raw)
	return nil
}

// latestChecks is the latest check run of each name on sha, by name, as the merge box
// lists them.
func latestChecks(rp *state.Repo, sha string) []check {
	latest := map[string]*state.CheckRun{}
	var names []string
	for _, cr := range rp.CheckRunsOn(sha) { // oldest first: the last of a name wins
		if latest[cr.Name] == nil {
			names = append(names, cr.Name)
		}
		latest[cr.Name] = cr
	}
	sort.Strings(names)
	out := make([]check, 0, len(names))
	for _, n := range names {
		out = append(out, checkOf(latest[n]))
	}
	return out
}

func checkOf(cr *state.CheckRun) check {
	return check{ID: cr.ID, Name: cr.Name, Status: cr.Status, Conclusion: cr.Conclusion,
		Title: cr.Output.Title, Summary: renderMarkdown(cr.Output.Summary), Text: renderMarkdown(cr.Output.Text),
		DetailsURL: cr.DetailsURL, HeadSHA: cr.HeadSHA, Started: cr.StartedAt, Completed: cr.CompletedAt}
}

func reviewsOf(st *state.World, rp *state.Repo, n int) []review {
	var out []review
	for _, rv := range rp.Reviews(n) {
		if rv.State == "PENDING" {
			continue
		}
		comments := reviewCommentsOf(st, rp, rv)
		if rv.Body == "" && len(comments) > 0 && allReplies(rp, rv) {
			// A reply is a review of its own on GitHub; it shows in its thread.
			continue
		}
		out = append(out, review{ID: rv.ID, User: rv.User, Bot: isBot(st, rv.User) || rv.ViaApp,
			State: rv.State, Body: renderMarkdown(rv.Body), CommitID: rv.CommitID, Submitted: rv.SubmittedAt,
			Comments: comments})
	}
	return out
}

// allReplies reports whether every inline comment of a review answers a thread.
func allReplies(rp *state.Repo, rv *state.Review) bool {
	for _, c := range rp.ReviewComments(rv.PullNumber) {
		if c.ReviewID == rv.ID && c.InReplyTo == 0 {
			return false
		}
	}
	return true
}

// reviewCommentsOf are a review's inline comments, in the order they were made.
func reviewCommentsOf(st *state.World, rp *state.Repo, rv *state.Review) []reviewComment {
	var out []reviewComment
	for _, c := range rp.ReviewComments(rv.PullNumber) {
		if c.ReviewID == rv.ID {
			out = append(out, reviewCommentOf(st, rp, c))
		}
	}
	return out
}

func reviewCommentOf(st *state.World, rp *state.Repo, c *state.ReviewComment) reviewComment {
	bot := isBot(st, c.User)
	if rv := rp.Review(c.ReviewID); rv != nil && rv.ViaApp {
		bot = true
	}
	return reviewComment{ID: c.ID, User: c.User, Bot: bot, Path: c.Path, Line: c.Line, Side: c.Side,
		Body: renderMarkdown(c.Body), Created: c.CreatedAt, Edited: c.Updated().After(c.CreatedAt)}
}

// threadsOf are pull request n's review threads, submitted ones, by their first
// comment: what the page's conversations list, each with its replies.
func threadsOf(st *state.World, rp *state.Repo, n int) []thread {
	var out []thread
	byRoot := map[int64]int{}
	for _, c := range rp.VisibleReviewComments(n, 0, "") {
		if i, ok := byRoot[c.Root()]; ok {
			out[i].Comments = append(out[i].Comments, reviewCommentOf(st, rp, c))
			continue
		}
		root := rp.ReviewComment(c.Root())
		if root == nil {
			root = c // its first comment was deleted: the reply stands for it
		}
		t := thread{ID: c.Root(), Path: root.Path, Line: root.Line, Side: root.Side, Resolved: root.Resolved,
			ResolvedBy: root.ResolvedBy, Comments: []reviewComment{reviewCommentOf(st, rp, c)}}
		for _, pl := range gitserver.ParseHunks(strings.Split(root.DiffHunk, "\n")) {
			t.Hunk = append(t.Hunk, toLine(pl))
		}
		byRoot[t.ID] = len(out)
		out = append(out, t)
	}
	return out
}

func (v *View) checkRun(w http.ResponseWriter, r *http.Request, owner, name, idText string) error {
	id, perr := strconv.ParseInt(idText, 10, 64)
	var pg page
	var err error
	v.store.Do(func(st *state.World) {
		rp := st.Repo(owner, name)
		if rp == nil {
			err = notFound("Repository " + owner + "/" + name)
			return
		}
		var cr *state.CheckRun
		if perr == nil {
			cr = rp.CheckRun(id)
		}
		if cr == nil {
			err = notFound("Check run " + idText)
			return
		}
		var pulls []int
		for _, p := range rp.Pulls() {
			if p.HeadSHA == cr.HeadSHA {
				pulls = append(pulls, p.Number)
			}
		}
		pg = page{Title: cr.Name + " · " + rp.FullName(), Owner: rp.Owner, Repo: rp.Name, Private: rp.Private,
			Data: map[string]any{"Check": checkOf(cr), "Pulls": pulls}}
	})
	if err != nil {
		return err
	}
	v.writePage(w, r, http.StatusOK, "check", pg)
	return nil
}
