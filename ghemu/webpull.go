package ghemu

import (
	"fmt"
	"html/template"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ---- view models: copies of the state taken under e.mu, with Markdown rendered ----

type webCheck struct {
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
func (c webCheck) Result() string {
	if c.Status == "completed" {
		return c.Conclusion
	}
	return strings.ReplaceAll(c.Status, "_", " ")
}

type webReview struct {
	ID        int64
	User      string
	Bot       bool
	State     string
	Body      template.HTML
	CommitID  string
	Submitted time.Time
	Comments  []webReviewComment
}

// webReviewComment is an inline comment of a review, on a line of a file.
type webReviewComment struct {
	ID   int64
	User string
	Path string
	Line int
	Side string
	Body template.HTML
}

type webPullView struct {
	webIssueView
	Head, Base       string
	HeadSHA, BaseSHA string
	Draft, Merged    bool
	MergedBy         string
	MergedAt         *time.Time
	// Blocked says why branch protection refuses the merge; "" when it does not.
	Blocked  string
	Checks   []webCheck
	Reviews  []webReview
	Diff     *webDiff
	DiffNote string
}

// ---- pages ----

// pullLocked finds a pull request by its path segments.
func (e *Emulator) pullLocked(owner, name, num string) (*repo, *issue, *pull, error) {
	n, err := webNumber(num, "Pull request")
	if err != nil {
		return nil, nil, nil, err
	}
	rp := e.st.repoByName(owner, name)
	if rp == nil {
		return nil, nil, nil, webNotFound("Repository " + owner + "/" + name)
	}
	is, p := rp.Issues[n], rp.Pulls[n]
	if is == nil {
		return nil, nil, nil, webNotFound("Pull request #" + num)
	}
	return rp, is, p, nil
}

func (e *Emulator) webPull(w http.ResponseWriter, r *http.Request, owner, name, num string) error {
	e.mu.Lock()
	rp, is, p, err := e.pullLocked(owner, name, num)
	if err != nil {
		e.mu.Unlock()
		return err
	}
	if p == nil {
		e.mu.Unlock()
		// An issue's number under /pull/ goes to the issue, as on GitHub.
		http.Redirect(w, r, "/"+rp.fullName()+"/issues/"+num, http.StatusFound)
		return nil
	}
	v := webPullView{webIssueView: e.issueViewLocked(rp, is), Head: p.Head, Base: p.Base,
		HeadSHA: p.HeadSHA, BaseSHA: p.BaseSHA, Draft: p.Draft, Merged: p.Merged, MergedBy: p.MergedBy,
		MergedAt: p.MergedAt}
	if _, state := e.pullMergeState(rp, is, p); state == "blocked" {
		v.Blocked = "branch protection on " + p.Base + " is not satisfied"
		if prot := rp.Protected[p.Base]; prot != nil {
			v.Blocked += " (" + describeProtection(prot) + ")"
		}
	}
	v.Checks = e.latestChecksLocked(rp, p.HeadSHA)
	v.Reviews = e.reviewsLocked(rp, p.Number)
	page := webPage{Title: fmt.Sprintf("%s · Pull Request #%d · %s", is.Title, p.Number, rp.fullName()),
		Owner: rp.Owner, Repo: rp.Name, Private: rp.Private}
	owner, name = rp.Owner, rp.Name
	e.mu.Unlock()

	raw, err := e.git.Diff(r.Context(), owner, name, v.BaseSHA, v.HeadSHA)
	if err != nil {
		v.DiffNote = "The diff could not be computed: " + err.Error()
	} else {
		v.Diff = parseDiff(raw)
	}
	page.Data = v
	e.writePage(w, http.StatusOK, "pull", page)
	return nil
}

// webPullDiff serves diff_url and patch_url (…/pull/{n}.diff, .patch) as plain text.
func (e *Emulator) webPullDiff(w http.ResponseWriter, r *http.Request, owner, name, file string) error {
	num, ext, _ := strings.Cut(file, ".")
	e.mu.Lock()
	rp, _, p, err := e.pullLocked(owner, name, num)
	if err == nil && p == nil {
		err = webNotFound("Pull request #" + num)
	}
	var base, head string
	if err == nil {
		owner, name, base, head = rp.Owner, rp.Name, p.BaseSHA, p.HeadSHA
	}
	e.mu.Unlock()
	if err != nil {
		return err
	}
	var raw []byte
	if ext == "patch" {
		raw, err = e.git.Patch(r.Context(), owner, name, base, head)
	} else {
		raw, err = e.git.Diff(r.Context(), owner, name, base, head)
	}
	if err != nil {
		return fmt.Errorf("failed to compute the %s of pull request #%s: %w", ext, num, err)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write(raw)
	return nil
}

// latestChecksLocked is the latest check run of each name on sha, by name, as the
// merge box lists them.
func (e *Emulator) latestChecksLocked(rp *repo, sha string) []webCheck {
	latest := map[string]*checkRun{}
	for _, cr := range rp.CheckRuns {
		if cr.HeadSHA != sha {
			continue
		}
		if old := latest[cr.Name]; old == nil || cr.ID > old.ID {
			latest[cr.Name] = cr
		}
	}
	out := make([]webCheck, 0, len(latest))
	for _, cr := range latest {
		out = append(out, webCheckOf(cr))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func webCheckOf(cr *checkRun) webCheck {
	return webCheck{ID: cr.ID, Name: cr.Name, Status: cr.Status, Conclusion: cr.Conclusion,
		Title: cr.Output.Title, Summary: renderMarkdown(cr.Output.Summary), Text: renderMarkdown(cr.Output.Text),
		DetailsURL: cr.DetailsURL, HeadSHA: cr.HeadSHA, Started: cr.StartedAt, Completed: cr.CompletedAt}
}

func (e *Emulator) reviewsLocked(rp *repo, number int) []webReview {
	var list []*review
	for _, rv := range rp.Reviews {
		if rv.PullNumber == number && rv.State != "PENDING" {
			list = append(list, rv)
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
	out := make([]webReview, 0, len(list))
	for _, rv := range list {
		out = append(out, webReview{ID: rv.ID, User: rv.User, Bot: e.isBotLocked(rv.User) || rv.ViaApp,
			State: rv.State, Body: renderMarkdown(rv.Body), CommitID: rv.CommitID, Submitted: rv.SubmittedAt,
			Comments: reviewCommentsLocked(rp, rv.ID)})
	}
	return out
}

// reviewCommentsLocked are a review's inline comments, in the order they were made.
func reviewCommentsLocked(rp *repo, reviewID int64) []webReviewComment {
	var list []*reviewComment
	for _, c := range rp.ReviewComments {
		if c.ReviewID == reviewID {
			list = append(list, c)
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
	out := make([]webReviewComment, 0, len(list))
	for _, c := range list {
		out = append(out, webReviewComment{ID: c.ID, User: c.User, Path: c.Path, Line: c.Line, Side: c.Side,
			Body: renderMarkdown(c.Body)})
	}
	return out
}

func (e *Emulator) webCheckRun(w http.ResponseWriter, owner, name, idText string) error {
	id, err := strconv.ParseInt(idText, 10, 64)
	e.mu.Lock()
	rp := e.st.repoByName(owner, name)
	var cr *checkRun
	if rp != nil && err == nil {
		cr = rp.CheckRuns[id]
	}
	if cr == nil {
		e.mu.Unlock()
		if rp == nil {
			return webNotFound("Repository " + owner + "/" + name)
		}
		return webNotFound("Check run " + idText)
	}
	v := webCheckOf(cr)
	var pulls []int
	for n, p := range rp.Pulls {
		if p.HeadSHA == cr.HeadSHA {
			pulls = append(pulls, n)
		}
	}
	sort.Ints(pulls)
	page := webPage{Title: cr.Name + " · " + rp.fullName(), Owner: rp.Owner, Repo: rp.Name, Private: rp.Private,
		Data: map[string]any{"Check": v, "Pulls": pulls}}
	e.mu.Unlock()
	e.writePage(w, http.StatusOK, "check", page)
	return nil
}
