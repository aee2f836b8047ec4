package ghemu

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bumperdev/bumper/internal/ghemu/gitserver"
)

// The web view: GitHub's pages for what the emulator holds, read-only, at the paths its
// html_url fields name (BASE/{owner}/{repo}/pull/{n}, …/issues/{n}, …/runs/{id},
// …/actions/runs/{id}, …/commit/{sha}), so a link in an API object or a webhook
// payload opens in a browser. Pages are server-rendered with html/template (which
// escapes every value by context) and carry no JavaScript; Markdown goes through
// renderMarkdown, which drops raw HTML. There is no login: the emulator is a test and
// demo tool bound to loopback, so the view shows everything, private repositories
// included, and every page says so in its banner.

//go:embed web
var webFiles embed.FS

// webCSP forbids every script, so that even an escaping mistake could not run one, and
// anything loaded from elsewhere. Styles are inline (the one stylesheet, and label
// colours in style attributes).
const webCSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// webTemplates holds one template set per page: the layout, the shared partials and the
// page's own "content".
var webTemplates = sync.OnceValue(func() map[string]*template.Template {
	css, err := fs.ReadFile(webFiles, "web/static/style.css")
	if err != nil {
		panic(fmt.Errorf("failed to read the embedded stylesheet: %w", err))
	}
	funcs := template.FuncMap{
		"css":       func() template.CSS { return template.CSS(css) }, //nolint:gosec // our own embedded file
		"when":      func(t time.Time) string { return t.UTC().Format("2 Jan 2006 15:04 UTC") },
		"short":     shortSHA,
		"plural":    plural,
		"deref":     deref,
		"checkTone": checkTone,
		"reviewTone": func(state string) string {
			switch state {
			case "APPROVED":
				return "success"
			case "CHANGES_REQUESTED":
				return "failure"
			}
			return "neutral"
		},
		"reviewVerb": func(state string) string {
			switch state {
			case "APPROVED":
				return "approved these changes"
			case "CHANGES_REQUESTED":
				return "requested changes"
			case "DISMISSED":
				return "reviewed (dismissed)"
			case "PENDING":
				return "started a review"
			}
			return "reviewed"
		},
	}
	pages, err := fs.Glob(webFiles, "web/templates/page_*.html")
	if err != nil || len(pages) == 0 {
		panic(fmt.Errorf("failed to find the embedded page templates: %w", err))
	}
	out := map[string]*template.Template{}
	for _, p := range pages {
		name := strings.TrimSuffix(strings.TrimPrefix(p, "web/templates/page_"), ".html")
		out[name] = template.Must(template.New("layout.html").Funcs(funcs).
			ParseFS(webFiles, "web/templates/layout.html", "web/templates/partials.html", p))
	}
	return out
})

// restTops are the first path segments of the REST routes; webPath leaves those paths
// to the REST API.
var restTops = sync.OnceValue(func() map[string]bool {
	var e Emulator
	e.registerRoutes()
	tops := map[string]bool{}
	for _, r := range e.routes.routes {
		top, _, _ := strings.Cut(strings.TrimPrefix(r.template, "/"), "/")
		tops[top] = true
	}
	return tops
})

// isWebPath reports whether a GET of path is the web view's: anything but the REST
// API's paths (/repos/…, /app/…, /installation/…, …), the git smart-HTTP paths
// (/{owner}/{repo}.git/…), the OIDC issuer (/.well-known/…) and the control routes
// (/_emulator/…). GitHub's logins and repository names cannot collide with these: no
// account is called "repos" or "app", and a login never starts with "_" or ".".
func isWebPath(p string) bool {
	if isGitPath(p) || strings.HasPrefix(p, "/.well-known/") || strings.HasPrefix(p, controlPrefix) {
		return false
	}
	top, _, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
	return !restTops()[top]
}

// isWebRequest is isWebPath for the methods the read-only view answers.
func isWebRequest(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) && isWebPath(r.URL.Path)
}

// webError is a page that could not be shown: its status and what to say.
type webError struct {
	status int
	msg    string
}

func (e *webError) Error() string { return e.msg }

func webNotFound(what string) error {
	return &webError{status: http.StatusNotFound, msg: what + " not found"}
}

// serveWeb answers one request of the web view.
func (e *Emulator) serveWeb(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", webCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	seg := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(seg) == 1 && seg[0] == "" {
		seg = nil
	}
	var err error
	switch {
	case len(seg) == 0:
		err = e.webIndex(w)
	case len(seg) == 1:
		err = e.webOwner(w, seg[0])
	case len(seg) == 2:
		err = e.webRepo(w, r, seg[0], seg[1])
	case len(seg) == 4 && seg[2] == "issues":
		err = e.webIssue(w, r, seg[0], seg[1], seg[3])
	case len(seg) == 4 && seg[2] == "pull" && (strings.HasSuffix(seg[3], ".diff") || strings.HasSuffix(seg[3], ".patch")):
		err = e.webPullDiff(w, r, seg[0], seg[1], seg[3])
	case len(seg) == 4 && seg[2] == "pull":
		err = e.webPull(w, r, seg[0], seg[1], seg[3])
	case len(seg) == 4 && seg[2] == "runs":
		err = e.webCheckRun(w, seg[0], seg[1], seg[3])
	case len(seg) == 4 && seg[2] == "commit":
		err = e.webCommit(w, r, seg[0], seg[1], seg[3])
	case len(seg) == 5 && seg[2] == "actions" && seg[3] == "runs":
		err = e.webRun(w, seg[0], seg[1], seg[4], "")
	case len(seg) == 7 && seg[2] == "actions" && seg[3] == "runs" && seg[5] == "job":
		err = e.webRun(w, seg[0], seg[1], seg[4], seg[6])
	default:
		err = webNotFound("page")
	}
	if err == nil {
		return
	}
	status, msg := http.StatusInternalServerError, "The page could not be shown."
	var we *webError
	if errors.As(err, &we) {
		status, msg = we.status, we.msg
	} else {
		e.log.Error().Err(err).Str("path", r.URL.Path).Msg("web view failed")
	}
	e.writePage(w, status, "error", webPage{Title: http.StatusText(status), Data: msg})
}

// webPage is what every page template gets: its title, the repository it belongs to
// (for the header's breadcrumb and tabs), and the page's own data.
type webPage struct {
	Title string
	Owner string
	Repo  string
	// Private marks a private repository in the header.
	Private bool
	Data    any
}

// writePage renders a page completely before sending it, so a template error gives a
// 500 rather than half a page.
func (e *Emulator) writePage(w http.ResponseWriter, status int, name string, p webPage) {
	t := webTemplates()[name]
	var buf bytes.Buffer
	if t == nil {
		e.log.Error().Str("page", name).Msg("web view: no such template")
		http.Error(w, "no template", http.StatusInternalServerError)
		return
	}
	if err := t.Execute(&buf, p); err != nil {
		e.log.Error().Err(err).Str("page", name).Msg("web view: template failed")
		http.Error(w, "template failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// ---- view models: copies of the state taken under e.mu, with Markdown rendered ----

type webLabel struct {
	Name, Description string
	// Color and Text are CSS colours: the label's, and black or white, whichever
	// reads better on it.
	Color, Text string
}

type webComment struct {
	ID      int64
	User    string
	Bot     bool
	Created time.Time
	Edited  bool
	Body    template.HTML
}

type webIssueView struct {
	Number      int
	Title       string
	State       string
	StateReason string
	IsPull      bool
	User        string
	Bot         bool
	Created     time.Time
	Labels      []webLabel
	Assignees   []string
	Body        template.HTML
	Comments    []webComment
	// Tone is the state badge's colour class.
	Tone      string
	StateText string
}

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

type webRunView struct {
	ID, JobID                          int64
	Number                             int
	Workflow, WorkflowPath, Ref, Event string
	HeadSHA, Actor, Status, Conclusion string
	RunnerName                         string
	Created, Updated                   time.Time
	Inputs                             []webKV
	ExitCode                           *int
	Outputs                            []webKV
	HasLog                             bool
}

type webKV struct{ Key, Value string }

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

// issueTone is the state badge of an issue or pull request: its colour and its word.
func issueTone(is *issue, p *pull) (string, string) {
	switch {
	case p != nil && p.Merged:
		return "merged", "Merged"
	case is.State == "open" && p != nil && p.Draft:
		return "neutral", "Draft"
	case is.State == "open":
		return "open", "Open"
	case !is.IsPull && is.StateReason == "not_planned":
		return "neutral", "Closed as not planned"
	}
	return "closed", "Closed"
}

func webLabelsLocked(rp *repo, keys []string) []webLabel {
	out := make([]webLabel, 0, len(keys))
	for _, k := range keys {
		l := rp.Labels[k]
		if l == nil {
			continue
		}
		bg, fg := labelColors(l.Color)
		out = append(out, webLabel{Name: l.Name, Description: l.Description, Color: bg, Text: fg})
	}
	return out
}

// labelColors gives a label's background ("#rrggbb"; grey when the stored colour is
// not six hex digits) and the text colour that contrasts with it: black on light
// colours, white on dark ones, chosen by WCAG relative luminance.
func labelColors(hex string) (string, string) {
	v, err := strconv.ParseUint(hex, 16, 32)
	if err != nil || len(hex) != 6 {
		return "#ededed", "#1f2328"
	}
	lin := func(c uint64) float64 {
		s := float64(c) / 255
		if s <= 0.04045 {
			return s / 12.92
		}
		return math.Pow((s+0.055)/1.055, 2.4)
	}
	l := 0.2126*lin(v>>16&0xff) + 0.7152*lin(v>>8&0xff) + 0.0722*lin(v&0xff)
	// Black text contrasts better when (L+0.05)/0.05 > 1.05/(L+0.05), i.e. L > ~0.179.
	if l > 0.179 {
		return "#" + strings.ToLower(hex), "#1f2328"
	}
	return "#" + strings.ToLower(hex), "#ffffff"
}

func (e *Emulator) issueViewLocked(rp *repo, is *issue) webIssueView {
	v := webIssueView{Number: is.Number, Title: is.Title, State: is.State, StateReason: is.StateReason,
		IsPull: is.IsPull, User: is.User, Bot: e.isBotLocked(is.User), Created: is.CreatedAt,
		Labels: webLabelsLocked(rp, is.Labels), Assignees: slices.Clone(is.Assignees),
		Body: renderMarkdown(is.Body)}
	v.Tone, v.StateText = issueTone(is, rp.Pulls[is.Number])
	var comments []*comment
	for _, c := range rp.Comments {
		if c.IssueNumber == is.Number {
			comments = append(comments, c)
		}
	}
	sort.Slice(comments, func(i, j int) bool { return comments[i].ID < comments[j].ID })
	for _, c := range comments {
		v.Comments = append(v.Comments, webComment{ID: c.ID, User: c.User, Bot: e.isBotLocked(c.User) || c.ViaApp,
			Created: c.CreatedAt, Edited: c.UpdatedAt.After(c.CreatedAt), Body: renderMarkdown(c.Body)})
	}
	return v
}

func (e *Emulator) isBotLocked(login string) bool {
	u := e.st.Users[key(login)]
	return (u != nil && u.Type == "Bot") || strings.HasSuffix(login, "[bot]")
}

// webNumber parses an issue or pull request number from the path.
func webNumber(s, what string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, webNotFound(what)
	}
	return n, nil
}

func (e *Emulator) webIssue(w http.ResponseWriter, r *http.Request, owner, name, num string) error {
	n, err := webNumber(num, "Issue")
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	rp := e.st.repoByName(owner, name)
	if rp == nil {
		return webNotFound("Repository " + owner + "/" + name)
	}
	is := rp.Issues[n]
	if is == nil {
		return webNotFound("Issue #" + num)
	}
	if is.IsPull {
		// GitHub sends an issue URL of a pull request to the pull request.
		http.Redirect(w, r, "/"+rp.fullName()+"/pull/"+num, http.StatusFound)
		return nil
	}
	v := e.issueViewLocked(rp, is)
	e.writePage(w, http.StatusOK, "issue", webPage{Title: fmt.Sprintf("%s · Issue #%d · %s", is.Title, n, rp.fullName()),
		Owner: rp.Owner, Repo: rp.Name, Private: rp.Private, Data: v})
	return nil
}

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

func webRunOf(run *workflowRun) webRunView {
	v := webRunView{ID: run.ID, JobID: run.JobID, Number: run.Number, Workflow: run.WorkflowName,
		WorkflowPath: run.WorkflowPath, Ref: run.Ref, Event: run.Event, HeadSHA: run.HeadSHA, Actor: run.Actor,
		Status: run.Status, Conclusion: run.Conclusion, RunnerName: run.RunnerName, Created: run.CreatedAt,
		Updated: run.UpdatedAt, ExitCode: run.ExitCode, HasLog: run.Dir != ""}
	v.Inputs = sortedKV(run.Inputs)
	v.Outputs = sortedKV(run.Outputs)
	return v
}

func sortedKV(m map[string]string) []webKV {
	out := make([]webKV, 0, len(m))
	for k, v := range m {
		out = append(out, webKV{Key: k, Value: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// webRun is a workflow run's page (jobText empty) or its job's page with the log.
func (e *Emulator) webRun(w http.ResponseWriter, owner, name, idText, jobText string) error {
	id, err := strconv.ParseInt(idText, 10, 64)
	e.mu.Lock()
	rp := e.st.repoByName(owner, name)
	var run *workflowRun
	if rp != nil && err == nil {
		run = rp.Runs[id]
	}
	if run == nil || (jobText != "" && jobText != strconv.FormatInt(run.JobID, 10)) {
		e.mu.Unlock()
		if rp == nil {
			return webNotFound("Repository " + owner + "/" + name)
		}
		return webNotFound("Workflow run " + idText)
	}
	v := webRunOf(run)
	page := webPage{Title: fmt.Sprintf("%s #%d · %s", run.WorkflowName, run.Number, rp.fullName()),
		Owner: rp.Owner, Repo: rp.Name, Private: rp.Private}
	owner, name = rp.Owner, rp.Name
	e.mu.Unlock()

	data := map[string]any{"Run": v, "Job": jobText != ""}
	if v.HasLog {
		if jobText != "" {
			log, err := e.RunLog(owner, name, id)
			if err != nil {
				return fmt.Errorf("failed to read the log of run %d: %w", id, err)
			}
			data["Log"] = string(log)
		} else if s, err := e.RunSummary(owner, name, id); err == nil && s != "" {
			data["Summary"] = renderMarkdown(s)
		}
	}
	page.Data = data
	e.writePage(w, http.StatusOK, "run", page)
	return nil
}

func (e *Emulator) webCommit(w http.ResponseWriter, r *http.Request, owner, name, rev string) error {
	e.mu.Lock()
	rp := e.st.repoByName(owner, name)
	var page webPage
	if rp != nil {
		owner, name = rp.Owner, rp.Name
		page = webPage{Owner: rp.Owner, Repo: rp.Name, Private: rp.Private}
	}
	e.mu.Unlock()
	if rp == nil {
		return webNotFound("Repository " + owner + "/" + name)
	}
	ci, err := e.git.Commit(r.Context(), owner, name, rev)
	if err != nil {
		if errors.Is(err, gitserver.ErrObjectNotFound) || errors.Is(err, gitserver.ErrInvalidName) {
			return webNotFound("Commit " + rev)
		}
		return fmt.Errorf("failed to read commit %s: %w", rev, err)
	}
	raw, err := e.git.CommitDiff(r.Context(), owner, name, ci.SHA)
	if err != nil {
		return fmt.Errorf("failed to diff commit %s: %w", rev, err)
	}
	subject, _, _ := strings.Cut(ci.Message, "\n")
	page.Title = subject + " · " + owner + "/" + name + "@" + shortSHA(ci.SHA)
	page.Data = map[string]any{"Commit": ci, "Diff": parseDiff(raw)}
	e.writePage(w, http.StatusOK, "commit", page)
	return nil
}

// ---- small helpers for the templates ----

func shortSHA(s string) string {
	if len(s) > 7 {
		return s[:7]
	}
	return s
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// deref reads the optional values (completion times, exit codes) templates show once
// they checked them.
func deref(v any) any {
	switch p := v.(type) {
	case *time.Time:
		return *p
	case *int:
		return *p
	}
	return v
}

// checkTone is the badge colour of a check run's conclusion (or status).
func checkTone(status, conclusion string) string {
	if status != "completed" {
		return "pending"
	}
	switch conclusion {
	case "success":
		return "success"
	case "failure", "timed_out", "action_required", "startup_failure":
		return "failure"
	}
	return "neutral"
}
