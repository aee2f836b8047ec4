package web

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bumperdev/bumper/ghemu/state"
)

// ---- view models: copies of the world taken inside Store.Do, Markdown rendered ----

type repoSummary struct {
	Owner, Name, Description, DefaultBranch string
	Private                                 bool
	OpenIssues, OpenPulls                   int
}

type issueRow struct {
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
	Labels    []label
	Comments  int
	Draft     bool
}

type repoView struct {
	repoSummary
	CloneURL    string
	HeadSHA     string
	HeadSubject string
	Protection  []kv
	Pulls       []issueRow
	Issues      []issueRow
	Closed      []issueRow
	Runs        []runView
	Labels      []label
}

// account is what the index and owner pages show of an account.
type account struct {
	Login, Type, Name string
}

// ---- pages ----

func (v *View) index(w http.ResponseWriter, r *http.Request) error {
	var repos []repoSummary
	var accounts []account
	v.store.Do(func(st *state.World) {
		for _, rp := range st.Repos() {
			repos = append(repos, summarize(rp))
		}
		for _, u := range st.Users() {
			accounts = append(accounts, account{Login: u.Login, Type: u.Type, Name: u.Name})
		}
	})
	v.writePage(w, r, http.StatusOK, "index", page{Title: "GitHub emulator", Data: map[string]any{
		"Repos": repos, "Accounts": accounts,
	}})
	return nil
}

func (v *View) owner(w http.ResponseWriter, r *http.Request, login string) error {
	var repos []repoSummary
	var acct *account
	v.store.Do(func(st *state.World) {
		u := st.User(login)
		if u == nil {
			return
		}
		acct = &account{Login: u.Login, Type: u.Type, Name: u.Name}
		for _, rp := range st.Repos() {
			if state.Key(rp.Owner) == state.Key(login) {
				repos = append(repos, summarize(rp))
			}
		}
	})
	if acct == nil {
		return notFound("Account " + login)
	}
	v.writePage(w, r, http.StatusOK, "owner", page{Title: acct.Login, Owner: acct.Login, Data: map[string]any{
		"Account": *acct, "Repos": repos,
	}})
	return nil
}

func summarize(rp *state.Repo) repoSummary {
	s := repoSummary{Owner: rp.Owner, Name: rp.Name, Description: rp.Description,
		DefaultBranch: rp.DefaultBranch, Private: rp.Private}
	for _, is := range rp.Issues() {
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

func (v *View) repo(w http.ResponseWriter, r *http.Request, owner, name string) error {
	var rv repoView
	var pg page
	found := false
	v.store.Do(func(st *state.World) {
		rp := st.Repo(owner, name)
		if rp == nil {
			return
		}
		found = true
		rv = repoView{repoSummary: summarize(rp), CloneURL: st.BaseURL() + "/" + rp.FullName() + ".git"}
		issues := rp.Issues()
		slices.Reverse(issues) // newest first
		for _, is := range issues {
			row := issueRowOf(rp, is)
			switch {
			case is.State != "open":
				if len(rv.Closed) < 10 {
					rv.Closed = append(rv.Closed, row)
				}
			case is.IsPull:
				rv.Pulls = append(rv.Pulls, row)
			default:
				rv.Issues = append(rv.Issues, row)
			}
		}
		runs := rp.Runs()
		slices.Reverse(runs) // newest first
		for _, run := range runs[:min(len(runs), 10)] {
			rv.Runs = append(rv.Runs, runViewOf(run))
		}
		for _, b := range rp.ProtectedBranches() {
			rv.Protection = append(rv.Protection, kv{Key: b, Value: describeProtection(rp.Protection(b))})
		}
		rv.Labels = labelsOf(rp, labelKeys(rp))
		pg = page{Title: rp.FullName(), Owner: rp.Owner, Repo: rp.Name, Private: rp.Private}
	})
	if !found {
		return notFound("Repository " + owner + "/" + name)
	}
	// A repository created empty has no commit yet; the page says so.
	if ci, err := v.git.Commit(r.Context(), rv.Owner, rv.Name, rv.DefaultBranch); err == nil {
		rv.HeadSHA = ci.SHA
		rv.HeadSubject, _, _ = strings.Cut(ci.Message, "\n")
	}
	pg.Data = rv
	v.writePage(w, r, http.StatusOK, "repo", pg)
	return nil
}

// labelKeys are the keys of all the repository's labels, sorted.
func labelKeys(rp *state.Repo) []string {
	var keys []string
	for _, l := range rp.Labels() {
		keys = append(keys, state.Key(l.Name))
	}
	return keys
}

func describeProtection(p *state.Protection) string {
	if p == nil {
		return "none"
	}
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
	if p.RequiresUpToDate() {
		parts = append(parts, "branches up to date before merging")
	}
	return strings.Join(parts, "; ")
}

func issueRowOf(rp *state.Repo, is *state.Issue) issueRow {
	kind := "/issues/"
	if is.IsPull {
		kind = "/pull/"
	}
	row := issueRow{Path: "/" + rp.FullName() + kind + strconv.Itoa(is.Number), Number: is.Number, Title: is.Title, IsPull: is.IsPull, State: is.State,
		User: is.User, Created: is.CreatedAt, Labels: labelsOf(rp, is.Labels), Comments: is.Comments}
	p := rp.Pull(is.Number)
	row.Tone, row.StateText = issueTone(is, p)
	if p != nil {
		row.Draft = p.Draft
	}
	return row
}
