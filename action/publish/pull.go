package publish

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/evidence/evidencemd"
	"github.com/bumperdev/bumper/action/workspace"
	"github.com/bumperdev/bumper/internal/ghref"
	"github.com/bumperdev/bumper/internal/textcut"
)

// GitHub's limits on a pull request.
const (
	// BodyLimit is the most characters of a pull request's body.
	BodyLimit = evidencemd.CommentLimit
	// TitleLimit is the most characters of its title.
	TitleLimit = 256
	// MaxSummary is the most bytes of the summary kept in the body.
	MaxSummary = 8 << 10
)

// ErrNotTheApps: an open pull request from the work branch exists but the App did not
// open it (or it comes from a fork); it is never taken as the run's.
var ErrNotTheApps = errors.New("an open pull request from the work branch was not opened by the App")

// PullRequestOptions says what pull request to open.
type PullRequestOptions struct {
	// Repository is owner/name.
	Repository string
	// Issue and Attempt name the work branch bumper/<issue>-<attempt>; the body says
	// "Fixes #<issue>".
	Issue, Attempt int
	// Base is the branch the change goes into (the work item's base branch).
	Base string
	// Title is the issue's title (as approved); line breaks become spaces, references,
	// mentions and URLs are neutralized (ghref.Neutralize) and it is cut at TitleLimit
	// characters.
	Title string
	// BotLogin is the App's bot ("slug[bot]"): only a pull request it opened is reused.
	BotLogin string
	// Summary is the runner's own Markdown about the run (anything the agent wrote
	// belongs in the evidence, which quotes it), at most MaxSummary bytes kept.
	Summary string
	// Evidence is rendered below the summary with evidencemd.Render.
	Evidence *evidence.Evidence
}

// PullRequest is the run's pull request.
type PullRequest struct {
	Number  int
	URL     string
	HeadSHA string
	// Created: this call opened it; false when an open one by the App was found.
	Created bool
	// Cuts say what was cut from the body to stay within BodyLimit (empty: nothing).
	Cuts []string
}

// OpenPullRequest opens the pull request from bumper/<issue>-<attempt> to Base with
// gh, the runner's client holding the run's installation token: the issue's title, a
// body of "Fixes #<issue>", the summary and the evidence. If the work branch already
// has an open pull request opened by the App (a retried run), that one is returned
// and nothing is opened; one opened by anyone else is ErrNotTheApps.
func OpenPullRequest(ctx context.Context, gh *github.Client, o PullRequestOptions) (*PullRequest, error) {
	owner, name, err := o.check(gh)
	if err != nil {
		return nil, err
	}
	branch := workspace.Branch(o.Issue, o.Attempt)
	// No look first: GitHub refuses a second open pull request from the branch (422),
	// and only then is the open one looked for, which saves a call on every first try.
	body, cuts := pullBody(o)
	var created *github.PullRequest
	// A 5xx may or may not have opened it; trying again is safe for the same reason the
	// 422 below is read: GitHub opens one pull request per branch at most.
	for try := 1; ; try++ {
		created, _, err = gh.PullRequests.Create(ctx, owner, name, &github.NewPullRequest{
			Title: github.String(pullTitle(o.Title, o.Issue)), Head: github.String(branch), Base: github.String(o.Base),
			Body: github.String(body), MaintainerCanModify: github.Bool(true),
		})
		var ge *github.ErrorResponse
		if err == nil || try == pullAttempts || !errors.As(err, &ge) || ge.Response == nil || ge.Response.StatusCode < http.StatusInternalServerError {
			break
		}
		t := time.NewTimer(time.Duration(try) * pullPause)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("failed to open the pull request from %s to %s in %s: %w", branch, o.Base, o.Repository, err)
		case <-t.C:
		}
	}
	if err != nil {
		// Another try of this run may have opened it meanwhile.
		var ge *github.ErrorResponse
		if errors.As(err, &ge) && ge.Response != nil && ge.Response.StatusCode == http.StatusUnprocessableEntity {
			if pr, ferr := findPull(ctx, gh, owner, name, branch, o.BotLogin); pr != nil || ferr != nil {
				return pr, ferr
			}
		}
		return nil, fmt.Errorf("failed to open the pull request from %s to %s in %s: %w", branch, o.Base, o.Repository, err)
	}
	return &PullRequest{Number: created.GetNumber(), URL: created.GetHTMLURL(), HeadSHA: created.GetHead().GetSHA(), Created: true, Cuts: cuts}, nil
}

// OpenPullRequest's tries after GitHub's 5xx, and the pause before the next.
const (
	pullAttempts = 4
	pullPause    = 500 * time.Millisecond
)

func (o PullRequestOptions) check(gh *github.Client) (owner, name string, err error) {
	var errs []error
	owner, name, err = splitRepo(o.Repository)
	if err != nil {
		errs = append(errs, err)
	}
	if gh == nil {
		errs = append(errs, errors.New("no GitHub client"))
	}
	if o.Issue < 1 || o.Attempt < 1 {
		errs = append(errs, fmt.Errorf("issue %d and attempt %d must be positive", o.Issue, o.Attempt))
	}
	if o.Base == "" || strings.HasPrefix(o.Base, "refs/") {
		errs = append(errs, fmt.Errorf("base branch %q: give the branch's name (main)", o.Base))
	}
	if login, ok := strings.CutSuffix(o.BotLogin, "[bot]"); !ok || login == "" {
		errs = append(errs, fmt.Errorf("bot login %q is not an App's (slug[bot])", o.BotLogin))
	}
	if err := errors.Join(errs...); err != nil {
		return "", "", fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	return owner, name, nil
}

// findPull returns the open pull request from branch (in the repository itself)
// opened by bot, nil if there is none, or ErrNotTheApps if another's is open.
func findPull(ctx context.Context, gh *github.Client, owner, name, branch, bot string) (*PullRequest, error) {
	opts := &github.PullRequestListOptions{State: "open", Head: owner + ":" + branch, ListOptions: github.ListOptions{PerPage: 100}}
	var other *github.PullRequest
	for {
		prs, resp, err := gh.PullRequests.List(ctx, owner, name, opts)
		if err != nil {
			return nil, fmt.Errorf("failed to list the pull requests from %s in %s/%s: %w", branch, owner, name, err)
		}
		for _, pr := range prs {
			if pr.GetHead().GetRef() != branch {
				continue
			}
			fromBase := strings.EqualFold(pr.GetHead().GetRepo().GetFullName(), owner+"/"+name)
			if fromBase && strings.EqualFold(pr.GetUser().GetLogin(), bot) {
				return &PullRequest{Number: pr.GetNumber(), URL: pr.GetHTMLURL(), HeadSHA: pr.GetHead().GetSHA()}, nil
			}
			if fromBase && other == nil {
				other = pr
			}
		}
		if resp == nil || resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	if other != nil {
		return nil, fmt.Errorf("%w: #%d was opened by %s; refusing to use it or open another", ErrNotTheApps, other.GetNumber(), other.GetUser().GetLogin())
	}
	return nil, nil
}

// pullTitle is the issue's title on one line, neutralized (ghref: the issue's author
// wrote it, and a title naming "#7" would cross-reference it), within TitleLimit
// characters.
func pullTitle(title string, issue int) string {
	t := strings.Join(strings.FieldsFunc(title, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	t = ghref.Neutralize(t)
	if t == "" {
		t = "Fix #" + strconv.Itoa(issue)
	}
	return textcut.FitRunes(t, TitleLimit, textcut.Ellipsis)
}

// pullBody is "Fixes #N", the summary and the evidence, within BodyLimit; it says what
// it cut.
func pullBody(o PullRequestOptions) (string, []string) {
	var cuts []string
	summary := strings.TrimSpace(strings.ToValidUTF8(o.Summary, "\uFFFD"))
	if len(summary) > MaxSummary {
		kept := textcut.Bytes(summary, MaxSummary)
		cuts = append(cuts, fmt.Sprintf("summary: cut at %d of %d bytes", len(kept), len(summary)))
		summary = kept + "\n\n*(summary cut)*"
	}
	head := "Fixes #" + strconv.Itoa(o.Issue) + "\n\n"
	if summary != "" {
		head += summary + "\n\n"
	}
	if o.Evidence == nil {
		return strings.TrimSpace(head) + "\n", cuts
	}
	if n := o.Evidence.Egress.Denials.DeniedHostCount(); n > 0 {
		head += deniedLine(n) + "\n\n"
	}
	// Markdown counts bytes, which are never fewer than characters.
	md, of := evidencemd.Render(o.Evidence, BodyLimit-len(head))
	for _, c := range of.Cuts {
		cuts = append(cuts, "evidence "+c.Section+": "+c.Detail)
	}
	return head + md, cuts
}

// splitRepo splits "owner/name".
func splitRepo(repo string) (owner, name string, err error) {
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("repository %q is not owner/name", repo)
	}
	return owner, name, nil
}

// deniedLine is the pull request's one line on the hosts the firewall refused the run
// (twenty refusals of one host are one host); the hosts and the change are in the
// evidence below it.
func deniedLine(n int) string {
	if n == 1 {
		return "**1 host was denied** — a suggested policy change is in the evidence (Egress)."
	}
	return fmt.Sprintf("**%d hosts were denied** — a suggested policy change is in the evidence (Egress).", n)
}
