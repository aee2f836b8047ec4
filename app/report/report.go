// Package report is `bumper report`: what Bumper's work items came to, read from GitHub
// (the issues with a `bumper:<state>` label, their status records, their pull requests
// and those pull requests' commits), summed per repository and in total, and written as
// a table, JSON, CSV or the Markdown of the `bumper:report` issue. It is written against
// the small GitHub interface below; app/ghclient implements it with go-github.
package report

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
)

// Label marks the one issue per repository that --post keeps up to date. It starts
// with ledger.LabelPrefix but names no state, so no work item is ever read from it.
const Label = "bumper:report"

// GitHub is what a report reads and, with --post, writes.
type GitHub interface {
	// Issues lists a repository's issues (not pull requests), open and closed, updated
	// at or after since (every issue when since is zero).
	Issues(ctx context.Context, repo string, since time.Time) ([]Issue, error)
	// Comments lists an issue's comments, oldest first.
	Comments(ctx context.Context, repo string, issue int) ([]Comment, error)
	// PullRequest reads one pull request.
	PullRequest(ctx context.Context, repo string, number int) (Pull, error)
	// PullCommits lists a pull request's commits.
	PullCommits(ctx context.Context, repo string, number int) ([]Commit, error)
	// IssuesWithLabel lists the issues, open and closed, that carry label.
	IssuesWithLabel(ctx context.Context, repo, label string) ([]Issue, error)
	// CreateIssue opens an issue with labels and returns its number.
	CreateIssue(ctx context.Context, repo, title, body string, labels []string) (int, error)
	// EditIssueBody replaces an issue's body.
	EditIssueBody(ctx context.Context, repo string, number int, body string) error
}

// Issue is what a report reads of an issue.
type Issue struct {
	Number    int
	Title     string
	Body      string
	Labels    []string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Comment is an issue comment.
type Comment struct {
	ID     int64
	Author string
	Body   string
}

// Pull is what a report reads of a pull request.
type Pull struct {
	Number    int
	Author    string
	State     string // open or closed
	Merged    bool
	CreatedAt time.Time
	MergedAt  time.Time // zero unless merged
}

// Commit is a pull request's commit and who wrote it: AuthorLogin is the GitHub account
// GitHub matched the commit's author to (empty when it matched none), AuthorName and
// AuthorEmail the commit's own author line.
type Commit struct {
	SHA         string
	AuthorLogin string
	AuthorName  string
	AuthorEmail string
}

// Options say what to read.
type Options struct {
	// Repositories are the repositories ("owner/name") to read.
	Repositories []string
	// Since keeps the items whose issue was created or updated at or after it; zero
	// keeps all.
	Since time.Time
	// Bot is the App's bot login ("slug[bot]"): only its status comments are records,
	// and only its commits leave a pull request zero-touch.
	Bot string
	// Sealer verifies the records' signatures; nil reads them unverified
	// (ledger.DecodeUnverified) and the report says so.
	Sealer *ledger.Sealer
}

// Item is one work item as the report found it.
type Item struct {
	Repository string
	Issue      int
	// State is the record's state, or the issue's state label when the record could not
	// be read.
	State ledger.State
	// Record is the status record; nil when Problem says why it could not be read.
	Record  *ledger.Record
	Problem string
	// Pull is the item's pull request, nil without one.
	Pull *Pull
	// ZeroTouch: the pull request was merged and every one of its commits is the bot's.
	ZeroTouch bool
}

// Collect reads the work items of the repositories opts names.
func Collect(ctx context.Context, gh GitHub, opts Options) ([]Item, error) {
	if opts.Bot == "" {
		return nil, errors.New("failed to read the work items: the App's bot login is not known")
	}
	var out []Item
	for _, repo := range opts.Repositories {
		issues, err := gh.Issues(ctx, repo, opts.Since)
		if err != nil {
			return nil, fmt.Errorf("failed to list the issues of %s: %w", repo, err)
		}
		for _, is := range issues {
			st, ok := stateOf(is.Labels)
			if !ok {
				continue
			}
			if !opts.Since.IsZero() && is.CreatedAt.Before(opts.Since) && is.UpdatedAt.Before(opts.Since) {
				continue
			}
			it, err := collectItem(ctx, gh, opts, repo, is, st)
			if err != nil {
				return nil, err
			}
			out = append(out, it)
		}
	}
	return out, nil
}

// stateOf finds an issue's state label; a label of the prefix that names no state (such
// as Label) is not one.
func stateOf(labels []string) (ledger.State, bool) {
	for _, l := range labels {
		name, ok := strings.CutPrefix(l, ledger.LabelPrefix)
		if !ok {
			continue
		}
		if st, err := ledger.ParseState(name); err == nil {
			return st, true
		}
	}
	return "", false
}

func collectItem(ctx context.Context, gh GitHub, opts Options, repo string, is Issue, st ledger.State) (Item, error) {
	it := Item{Repository: repo, Issue: is.Number, State: st}
	comments, err := gh.Comments(ctx, repo, is.Number)
	if err != nil {
		return it, fmt.Errorf("failed to list the comments of %s: %w", ledger.ID(repo, is.Number), err)
	}
	it.Problem = "no status comment by " + opts.Bot
	for _, c := range comments {
		if !ledger.IsStatusComment(c.Body) || !strings.EqualFold(c.Author, opts.Bot) {
			continue
		}
		var rec *ledger.Record
		if opts.Sealer != nil {
			rec, err = opts.Sealer.Decode(c.Body)
		} else {
			rec, err = ledger.DecodeUnverified(c.Body)
		}
		switch {
		case err != nil:
			it.Problem = err.Error()
		case !strings.EqualFold(rec.Repository, repo) || rec.Issue != is.Number:
			it.Problem = fmt.Sprintf("the record is of %s", rec.ID())
		default:
			it.Record, it.Problem, it.State = rec, "", rec.State
		}
		break
	}
	if it.Record == nil || it.Record.PullRequest == 0 {
		return it, nil
	}
	p, err := gh.PullRequest(ctx, repo, it.Record.PullRequest)
	if err != nil {
		return it, fmt.Errorf("failed to read pull request #%d of %s: %w", it.Record.PullRequest, it.Record.ID(), err)
	}
	it.Pull = &p
	if p.Merged {
		commits, err := gh.PullCommits(ctx, repo, p.Number)
		if err != nil {
			return it, fmt.Errorf("failed to list the commits of pull request #%d of %s: %w", p.Number, it.Record.ID(), err)
		}
		it.ZeroTouch = len(commits) > 0 && !slices.ContainsFunc(commits, func(c Commit) bool { return !ByBot(c, opts.Bot) })
	}
	return it, nil
}

// ByBot reports whether the bot wrote a commit: GitHub matched its author to the bot,
// or, matched to no account, its author line is the bot's git identity (the bot login
// as the name, or GitHub's noreply address of the bot).
func ByBot(c Commit, bot string) bool {
	if c.AuthorLogin != "" {
		return strings.EqualFold(c.AuthorLogin, bot)
	}
	local, domain, ok := strings.Cut(strings.ToLower(c.AuthorEmail), "@")
	if ok && strings.HasPrefix(domain, "users.noreply.") {
		_, login, hasID := strings.Cut(local, "+")
		if !hasID {
			login = local
		}
		return login == strings.ToLower(bot)
	}
	return c.AuthorEmail == "" && strings.EqualFold(c.AuthorName, bot)
}

// Durations sums up how long something took across items.
type Durations struct {
	Count int           `json:"count"`
	P50   time.Duration `json:"p50_ns"`
	Mean  time.Duration `json:"mean_ns"`
}

func durations(ds []time.Duration) Durations {
	if len(ds) == 0 {
		return Durations{}
	}
	slices.Sort(ds)
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	p50 := ds[(len(ds)-1)/2]
	if len(ds)%2 == 0 {
		p50 = (ds[len(ds)/2-1] + ds[len(ds)/2]) / 2
	}
	return Durations{Count: len(ds), P50: p50, Mean: sum / time.Duration(len(ds))}
}

// Summary is one repository's figures, or all of them together.
type Summary struct {
	// Repository is "owner/name", or "total".
	Repository string `json:"repository"`
	Items      int    `json:"items"`
	// States counts the items by state (every state, zero included).
	States map[ledger.State]int `json:"states"`
	// Merged, ClosedUnmerged and Open count the items' pull requests.
	Merged         int `json:"merged"`
	ClosedUnmerged int `json:"closed_unmerged"`
	Open           int `json:"open"`
	// ZeroTouch counts the merged pull requests whose every commit is the bot's.
	ZeroTouch int `json:"zero_touch"`
	// Runs counts every run the records hold; Attempts the implementation runs; Rounds
	// the fix, revise and update rounds on a pull request.
	Runs     int `json:"runs"`
	Attempts int `json:"attempts"`
	Rounds   int `json:"rounds"`
	// ApprovalToPull and ApprovalToMerge: from the approval a pull request's run was
	// dispatched under to the pull request's opening, and to its merge.
	ApprovalToPull  Durations `json:"approval_to_pull"`
	ApprovalToMerge Durations `json:"approval_to_merge"`
	// SpendMicroUSD is the model spend of every run of the items, as the runs reported it.
	SpendMicroUSD int64 `json:"spend_micro_usd"`
	// Unreadable counts the items whose record could not be read: they count by their
	// state label only.
	Unreadable int `json:"unreadable"`
}

// SpendPerItem is the mean spend per item, in micro-USD.
func (s Summary) SpendPerItem() int64 { return div(s.SpendMicroUSD, s.Items) }

// SpendPerMerged is what each merged pull request cost, in micro-USD: the spend of
// every item (failed and open ones too) over the merged pull requests.
func (s Summary) SpendPerMerged() int64 { return div(s.SpendMicroUSD, s.Merged) }

func div(n int64, d int) int64 {
	if d == 0 {
		return 0
	}
	return (n + int64(d)/2) / int64(d)
}

// Report is the summaries of a set of repositories.
type Report struct {
	Since time.Time `json:"since,omitzero"`
	// Verified says whether the records' signatures were checked (serve's key given).
	Verified     bool      `json:"verified"`
	Repositories []Summary `json:"repositories"`
	Total        Summary   `json:"total"`
	// Problems name the items whose record could not be read, and why.
	Problems []string `json:"problems,omitempty"`
}

// Build sums items up per repository (every repository named, even without items) and
// in total.
func Build(items []Item, repositories []string, since time.Time, verified bool) Report {
	r := Report{Since: since, Verified: verified, Total: newSummary("total")}
	by := map[string]*Summary{}
	for _, repo := range repositories {
		s := newSummary(repo)
		by[strings.ToLower(repo)] = &s
	}
	toPull := map[string][]time.Duration{}
	toMerge := map[string][]time.Duration{}
	for _, it := range items {
		key := strings.ToLower(it.Repository)
		s := by[key]
		if s == nil {
			n := newSummary(it.Repository)
			s = &n
			by[key] = s
		}
		for _, t := range []*Summary{s, &r.Total} {
			add(t, it)
		}
		if it.Problem != "" {
			r.Problems = append(r.Problems, fmt.Sprintf("%s: %s", ledger.ID(it.Repository, it.Issue), it.Problem))
		}
		if d, ok := sinceApproval(it, func(p *Pull) time.Time { return p.CreatedAt }); ok {
			toPull[key] = append(toPull[key], d)
			toPull[""] = append(toPull[""], d)
		}
		if d, ok := sinceApproval(it, func(p *Pull) time.Time { return p.MergedAt }); ok {
			toMerge[key] = append(toMerge[key], d)
			toMerge[""] = append(toMerge[""], d)
		}
	}
	keys := make([]string, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s := by[k]
		s.ApprovalToPull, s.ApprovalToMerge = durations(toPull[k]), durations(toMerge[k])
		r.Repositories = append(r.Repositories, *s)
	}
	r.Total.ApprovalToPull, r.Total.ApprovalToMerge = durations(toPull[""]), durations(toMerge[""])
	return r
}

func newSummary(repo string) Summary {
	s := Summary{Repository: repo, States: map[ledger.State]int{}}
	for _, st := range ledger.States() {
		s.States[st] = 0
	}
	return s
}

func add(s *Summary, it Item) {
	s.Items++
	s.States[it.State]++
	if it.Record == nil {
		s.Unreadable++
	} else {
		for _, a := range it.Record.Attempts {
			s.Runs++
			s.SpendMicroUSD += a.CostMicroUSD
			switch a.Stage {
			case wire.StageImplement:
				s.Attempts++
			case wire.StageFix, wire.StageRevise, wire.StageUpdate:
				s.Rounds++
			}
		}
	}
	switch p := it.Pull; {
	case p == nil:
	case p.Merged:
		s.Merged++
		if it.ZeroTouch {
			s.ZeroTouch++
		}
	case p.State == "closed":
		s.ClosedUnmerged++
	default:
		s.Open++
	}
}

// sinceApproval is how long after the approval its run was dispatched under the pull
// request reached the moment at gives (zero: not reached): the latest approval made
// before the pull request was opened.
func sinceApproval(it Item, at func(*Pull) time.Time) (time.Duration, bool) {
	if it.Record == nil || it.Pull == nil || at(it.Pull).IsZero() {
		return 0, false
	}
	var approved time.Time
	for _, a := range it.Record.Approvals {
		if !a.At.After(it.Pull.CreatedAt) && a.At.After(approved) {
			approved = a.At
		}
	}
	if approved.IsZero() {
		return 0, false
	}
	return at(it.Pull).Sub(approved), true
}

// ParseSince reads --since: a number of days ("7d") or weeks ("2w"), a Go duration
// ("36h"), a date ("2026-03-01", UTC) or a time (RFC 3339), before now; "all" or "0"
// is every item (the zero time).
func ParseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "all" || s == "0":
		return time.Time{}, nil
	case strings.HasSuffix(s, "d") || strings.HasSuffix(s, "w"):
		n, err := strconv.Atoi(s[:len(s)-1])
		if err == nil && n > 0 {
			days := n
			if strings.HasSuffix(s, "w") {
				days = 7 * n
			}
			return now.AddDate(0, 0, -days), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("failed to read --since %q: want 7d, 2w, 36h, 2026-03-01, an RFC 3339 time, or all", s)
}
