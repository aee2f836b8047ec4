package ghemu

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ---- view models: copies of the state taken under e.mu, with Markdown rendered ----

type webRepoSummary struct {
	Owner, Name, Description, DefaultBranch string
	Private                                 bool
	OpenIssues, OpenPulls                   int
}

type webIssueRow struct {
	// Path is the issue's or pull request's page.
	Path      string
	Number    int
	Title     string
	IsPull    bool
	State     string
	Tone      string
	StateText string
	User      string
	Created   time.Time
	Labels    []webLabel
	Comments  int
	Draft     bool
}

type webRepoView struct {
	webRepoSummary
	CloneURL    string
	HeadSHA     string
	HeadSubject string
	Protection  []webKV
	Pulls       []webIssueRow
	Issues      []webIssueRow
	Closed      []webIssueRow
	Runs        []webRunView
	Labels      []webLabel
}

// ---- pages ----

func (e *Emulator) webIndex(w http.ResponseWriter) error {
	e.mu.Lock()
	var repos []webRepoSummary
	for _, rp := range e.sortedRepos(func(*repo) bool { return true }) {
		repos = append(repos, e.repoSummaryLocked(rp))
	}
	var accounts []*user
	for _, u := range e.st.Users {
		accounts = append(accounts, &user{Login: u.Login, Type: u.Type, Name: u.Name})
	}
	e.mu.Unlock()
	sort.Slice(accounts, func(i, j int) bool { return key(accounts[i].Login) < key(accounts[j].Login) })
	e.writePage(w, http.StatusOK, "index", webPage{Title: "GitHub emulator", Data: map[string]any{
		"Repos": repos, "Accounts": accounts,
	}})
	return nil
}

func (e *Emulator) webOwner(w http.ResponseWriter, login string) error {
	e.mu.Lock()
	u := e.st.Users[key(login)]
	var repos []webRepoSummary
	for _, rp := range e.sortedRepos(func(r *repo) bool { return key(r.Owner) == key(login) }) {
		repos = append(repos, e.repoSummaryLocked(rp))
	}
	var acct user
	if u != nil {
		acct = user{Login: u.Login, Type: u.Type, Name: u.Name}
	}
	e.mu.Unlock()
	if u == nil {
		return webNotFound("Account " + login)
	}
	e.writePage(w, http.StatusOK, "owner", webPage{Title: acct.Login, Owner: acct.Login, Data: map[string]any{
		"Account": acct, "Repos": repos,
	}})
	return nil
}

func (e *Emulator) repoSummaryLocked(rp *repo) webRepoSummary {
	s := webRepoSummary{Owner: rp.Owner, Name: rp.Name, Description: rp.Description,
		DefaultBranch: rp.DefaultBranch, Private: rp.Private}
	for _, is := range rp.Issues {
		if is.State != "open" {
			continue
		}
		if is.IsPull {
			s.OpenPulls++
		} else {
			s.OpenIssues++
		}
	}
	return s
}

func (e *Emulator) webRepo(w http.ResponseWriter, r *http.Request, owner, name string) error {
	e.mu.Lock()
	rp := e.st.repoByName(owner, name)
	if rp == nil {
		e.mu.Unlock()
		return webNotFound("Repository " + owner + "/" + name)
	}
	v := webRepoView{webRepoSummary: e.repoSummaryLocked(rp), CloneURL: e.baseURL + "/" + rp.fullName() + ".git"}
	nums := make([]int, 0, len(rp.Issues))
	for n := range rp.Issues {
		nums = append(nums, n)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(nums)))
	for _, n := range nums {
		is := rp.Issues[n]
		row := e.issueRowLocked(rp, is)
		switch {
		case is.State != "open":
			if len(v.Closed) < 10 {
				v.Closed = append(v.Closed, row)
			}
		case is.IsPull:
			v.Pulls = append(v.Pulls, row)
		default:
			v.Issues = append(v.Issues, row)
		}
	}
	runs := make([]*workflowRun, 0, len(rp.Runs))
	for _, run := range rp.Runs {
		runs = append(runs, run)
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].ID > runs[j].ID })
	for _, run := range runs[:min(len(runs), 10)] {
		v.Runs = append(v.Runs, webRunOf(run))
	}
	branches := make([]string, 0, len(rp.Protected))
	for b := range rp.Protected {
		branches = append(branches, b)
	}
	sort.Strings(branches)
	for _, b := range branches {
		v.Protection = append(v.Protection, webKV{Key: b, Value: describeProtection(rp.Protected[b])})
	}
	labels := make([]string, 0, len(rp.Labels))
	for k := range rp.Labels {
		labels = append(labels, k)
	}
	sort.Strings(labels)
	v.Labels = webLabelsLocked(rp, labels)
	page := webPage{Title: rp.fullName(), Owner: rp.Owner, Repo: rp.Name, Private: rp.Private}
	e.mu.Unlock()

	// A repository created empty has no commit yet; the page says so.
	if ci, err := e.git.Commit(r.Context(), v.Owner, v.Name, v.DefaultBranch); err == nil {
		v.HeadSHA = ci.SHA
		v.HeadSubject, _, _ = strings.Cut(ci.Message, "\n")
	}
	page.Data = v
	e.writePage(w, http.StatusOK, "repo", page)
	return nil
}

func describeProtection(p *protection) string {
	var parts []string
	parts = append(parts, "no direct pushes")
	if len(p.RequiredChecks) > 0 {
		names := make([]string, 0, len(p.RequiredChecks))
		for _, n := range p.RequiredChecks {
			if id, ok := p.CheckApps[n]; ok {
				n += " (from App " + strconv.FormatInt(id, 10) + " only)"
			}
			names = append(names, n)
		}
		parts = append(parts, "required "+plural(len(p.RequiredChecks), "check")+": "+strings.Join(names, ", "))
	}
	if p.RequiredReviews > 0 {
		parts = append(parts, plural(p.RequiredReviews, "approving review")+" to merge")
	}
	return strings.Join(parts, "; ")
}

func (e *Emulator) issueRowLocked(rp *repo, is *issue) webIssueRow {
	kind := "/issues/"
	if is.IsPull {
		kind = "/pull/"
	}
	row := webIssueRow{Path: "/" + rp.fullName() + kind + strconv.Itoa(is.Number), Number: is.Number, Title: is.Title, IsPull: is.IsPull, State: is.State,
		User: is.User, Created: is.CreatedAt, Labels: webLabelsLocked(rp, is.Labels), Comments: is.Comments}
	p := rp.Pulls[is.Number]
	row.Tone, row.StateText = issueTone(is, p)
	if p != nil {
		row.Draft = p.Draft
	}
	return row
}
