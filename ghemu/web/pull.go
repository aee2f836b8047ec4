package web

import (
	"fmt"
	"html/template"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

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
	ID   int64
	User string
	Path string
	Line int
	Side string
	Body template.HTML
}

type pullView struct {
	issueView
	Head, Base       string
	HeadSHA, BaseSHA string
	Draft, Merged    bool
	MergedBy         string
	MergedAt         *time.Time
	// Blocked says why branch protection refuses the merge; "" when it does not.
	Blocked  string
	Checks   []check
	Reviews  []review
	Diff     *diff
	DiffNote string
}

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
		if rp.MergeState(is, p) == "blocked" {
			pv.Blocked = "branch protection on " + p.Base + " is not satisfied"
			if prot := rp.Protection(p.Base); prot != nil {
				pv.Blocked += " (" + describeProtection(prot) + ")"
			}
		}
		pv.Checks = latestChecks(rp, p.HeadSHA)
		pv.Reviews = reviewsOf(st, rp, p.Number)
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
	}
	pg.Data = pv
	v.writePage(w, http.StatusOK, "pull", pg)
	return nil
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
		out = append(out, review{ID: rv.ID, User: rv.User, Bot: isBot(st, rv.User) || rv.ViaApp,
			State: rv.State, Body: renderMarkdown(rv.Body), CommitID: rv.CommitID, Submitted: rv.SubmittedAt,
			Comments: reviewCommentsOf(rp, rv)})
	}
	return out
}

// reviewCommentsOf are a review's inline comments, in the order they were made.
func reviewCommentsOf(rp *state.Repo, rv *state.Review) []reviewComment {
	var out []reviewComment
	for _, c := range rp.ReviewComments(rv.PullNumber) {
		if c.ReviewID != rv.ID {
			continue
		}
		out = append(out, reviewComment{ID: c.ID, User: c.User, Path: c.Path, Line: c.Line, Side: c.Side,
			Body: renderMarkdown(c.Body)})
	}
	return out
}

func (v *View) checkRun(w http.ResponseWriter, owner, name, idText string) error {
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
	v.writePage(w, http.StatusOK, "check", pg)
	return nil
}
