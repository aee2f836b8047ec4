package ghclient

import (
	"context"
	"errors"
	"fmt"
	"time"

	gogithub "github.com/google/go-github/v66/github"
	"github.com/palantir/go-githubapp/githubapp"

	"github.com/bumperdev/bumper/app/report"
)

// Report is the go-github adapter behind report.GitHub, on one installation.
type Report struct{ gh *gogithub.Client }

var _ report.GitHub = (*Report)(nil)

// NewReport wraps an installation's client.
func NewReport(gh *gogithub.Client) *Report { return &Report{gh: gh} }

// ReportScope is what `bumper report` reads: through which installation, as which bot,
// and which repositories.
type ReportScope struct {
	GitHub       *Report
	Bot          string
	Repositories []string
}

// ConnectReport finds the App's installation on repo ("owner/name") or on the
// organization org (exactly one of them), as `bumper doctor` does with serve's
// credentials, and the repositories to read: repo, or every repository the
// installation on org may reach.
func ConnectReport(ctx context.Context, cc githubapp.ClientCreator, repo, org string) (ReportScope, error) {
	if (repo == "") == (org == "") {
		return ReportScope{}, errors.New("failed to connect: name a repository or an organization, not both")
	}
	ac, err := cc.NewAppClient()
	if err != nil {
		return ReportScope{}, fmt.Errorf("failed to create the App client: %w", err)
	}
	a, _, err := ac.Apps.Get(ctx, "")
	if err != nil {
		return ReportScope{}, fmt.Errorf("failed to read the App (are its credentials current?): %w", err)
	}
	if a.GetSlug() == "" {
		return ReportScope{}, errors.New("failed to read the App: GitHub returned it without a slug")
	}
	var inst *gogithub.Installation
	if repo != "" {
		owner, name, err := split(repo)
		if err != nil {
			return ReportScope{}, err
		}
		if inst, _, err = ac.Apps.FindRepositoryInstallation(ctx, owner, name); err != nil {
			return ReportScope{}, fmt.Errorf("failed to find the App's installation on %s: %w", repo, err)
		}
	} else if inst, _, err = ac.Apps.FindOrganizationInstallation(ctx, org); err != nil {
		return ReportScope{}, fmt.Errorf("failed to find the App's installation on %s: %w", org, err)
	}
	gh, err := cc.NewInstallationClient(inst.GetID())
	if err != nil {
		return ReportScope{}, fmt.Errorf("failed to create a client for installation %d: %w", inst.GetID(), err)
	}
	scope := ReportScope{GitHub: NewReport(gh), Bot: a.GetSlug() + "[bot]"}
	if repo != "" {
		scope.Repositories = []string{repo}
		return scope, nil
	}
	opts := &gogithub.ListOptions{PerPage: perPage}
	for {
		list, resp, err := gh.Apps.ListRepos(ctx, opts)
		if err != nil {
			return ReportScope{}, fmt.Errorf("failed to list the repositories of installation %d: %w", inst.GetID(), err)
		}
		for _, r := range list.Repositories {
			if !r.GetArchived() {
				scope.Repositories = append(scope.Repositories, r.GetFullName())
			}
		}
		if resp.NextPage == 0 {
			return scope, nil
		}
		opts.Page = resp.NextPage
	}
}

func reportIssue(is *gogithub.Issue) report.Issue {
	out := report.Issue{Number: is.GetNumber(), Title: is.GetTitle(), Body: is.GetBody(),
		CreatedAt: is.GetCreatedAt().Time, UpdatedAt: is.GetUpdatedAt().Time}
	for _, l := range is.Labels {
		out.Labels = append(out.Labels, l.GetName())
	}
	return out
}

// Issues implements report.GitHub; it follows every page.
func (c *Report) Issues(ctx context.Context, repo string, since time.Time) ([]report.Issue, error) {
	return c.issues(ctx, repo, &gogithub.IssueListByRepoOptions{State: "all", Since: since})
}

// IssuesWithLabel implements report.GitHub; it follows every page.
func (c *Report) IssuesWithLabel(ctx context.Context, repo, label string) ([]report.Issue, error) {
	return c.issues(ctx, repo, &gogithub.IssueListByRepoOptions{State: "all", Labels: []string{label}})
}

func (c *Report) issues(ctx context.Context, repo string, opts *gogithub.IssueListByRepoOptions) ([]report.Issue, error) {
	owner, name, err := split(repo)
	if err != nil {
		return nil, err
	}
	opts.PerPage = perPage
	var out []report.Issue
	for {
		page, resp, err := c.gh.Issues.ListByRepo(ctx, owner, name, opts)
		if err != nil {
			return nil, fmt.Errorf("failed to list the issues of %s: %w", repo, err)
		}
		for _, is := range page {
			if !is.IsPullRequest() {
				out = append(out, reportIssue(is))
			}
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// Comments implements report.GitHub; it follows every page.
func (c *Report) Comments(ctx context.Context, repo string, issue int) ([]report.Comment, error) {
	owner, name, err := split(repo)
	if err != nil {
		return nil, err
	}
	opts := &gogithub.IssueListCommentsOptions{ListOptions: gogithub.ListOptions{PerPage: perPage}}
	var out []report.Comment
	for {
		page, resp, err := c.gh.Issues.ListComments(ctx, owner, name, issue, opts)
		if err != nil {
			return nil, fmt.Errorf("failed to list the comments of %s#%d: %w", repo, issue, err)
		}
		for _, cm := range page {
			out = append(out, report.Comment{ID: cm.GetID(), Author: cm.GetUser().GetLogin(), Body: cm.GetBody()})
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// PullRequest implements report.GitHub.
func (c *Report) PullRequest(ctx context.Context, repo string, number int) (report.Pull, error) {
	owner, name, err := split(repo)
	if err != nil {
		return report.Pull{}, err
	}
	pr, _, err := c.gh.PullRequests.Get(ctx, owner, name, number)
	if err != nil {
		return report.Pull{}, fmt.Errorf("failed to read %s#%d: %w", repo, number, err)
	}
	return report.Pull{Number: pr.GetNumber(), Author: pr.GetUser().GetLogin(), State: pr.GetState(), Merged: pr.GetMerged(),
		CreatedAt: pr.GetCreatedAt().Time, MergedAt: pr.GetMergedAt().Time}, nil
}

// PullCommits implements report.GitHub; it follows every page (GitHub lists 250 at most).
func (c *Report) PullCommits(ctx context.Context, repo string, number int) ([]report.Commit, error) {
	owner, name, err := split(repo)
	if err != nil {
		return nil, err
	}
	opts := &gogithub.ListOptions{PerPage: perPage}
	var out []report.Commit
	for {
		page, resp, err := c.gh.PullRequests.ListCommits(ctx, owner, name, number, opts)
		if err != nil {
			return nil, fmt.Errorf("failed to list the commits of %s#%d: %w", repo, number, err)
		}
		for _, rc := range page {
			out = append(out, report.Commit{SHA: rc.GetSHA(), AuthorLogin: rc.GetAuthor().GetLogin(),
				AuthorName: rc.GetCommit().GetAuthor().GetName(), AuthorEmail: rc.GetCommit().GetAuthor().GetEmail()})
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// CreateIssue implements report.GitHub.
func (c *Report) CreateIssue(ctx context.Context, repo, title, body string, labels []string) (int, error) {
	owner, name, err := split(repo)
	if err != nil {
		return 0, err
	}
	is, _, err := c.gh.Issues.Create(ctx, owner, name, &gogithub.IssueRequest{Title: &title, Body: &body, Labels: &labels})
	if err != nil {
		return 0, fmt.Errorf("failed to open an issue in %s: %w", repo, unprocessable(err))
	}
	return is.GetNumber(), nil
}

// EditIssueBody implements report.GitHub.
func (c *Report) EditIssueBody(ctx context.Context, repo string, number int, body string) error {
	owner, name, err := split(repo)
	if err != nil {
		return err
	}
	if _, _, err := c.gh.Issues.Edit(ctx, owner, name, number, &gogithub.IssueRequest{Body: &body}); err != nil {
		return fmt.Errorf("failed to edit %s#%d: %w", repo, number, unprocessable(err))
	}
	return nil
}
