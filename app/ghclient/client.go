// Package ghclient adapts go-github to the small interfaces the App's domain code is
// written against (workitem.GitHub and workitem.Connector).
package ghclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	gogithub "github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/app/authz"
	"github.com/bumperdev/bumper/app/workitem"
)

// perPage is the page size of every listing: GitHub's maximum, for the fewest calls.
const perPage = 100

// Client is one installation's view of GitHub.
type Client struct {
	gh   *gogithub.Client
	app  *gogithub.Client
	inst int64
}

var _ workitem.GitHub = (*Client)(nil)

func split(repo string) (string, string, error) {
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || owner == "" || name == "" {
		return "", "", fmt.Errorf("repository %q: want owner/name", repo)
	}
	return owner, name, nil
}

func status(err error) int {
	var er *gogithub.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return er.Response.StatusCode
	}
	return 0
}

// unprocessable marks GitHub's 422 (what was sent is refused, such as a comment longer
// than it allows) for the App to say so.
func unprocessable(err error) error {
	if status(err) == http.StatusUnprocessableEntity {
		return fmt.Errorf("%w: %w", workitem.ErrUnprocessable, err)
	}
	return err
}

// refExists says a ref creation failed because the ref is there: GitHub's 422
// "Reference already exists". Its other 422s (an object that does not exist, a name that
// is not a valid ref) are errors: taken for "exists", they would make a replica stand
// down from a dispatch nobody made, or refuse a nonce nobody used.
func refExists(err error) bool {
	var er *gogithub.ErrorResponse
	return status(err) == http.StatusUnprocessableEntity && errors.As(err, &er) &&
		strings.Contains(strings.ToLower(er.Message), "already exists")
}

// notFound marks GitHub's 404, and the 410 it answers for a deleted issue, as
// workitem.ErrNotFound.
func notFound(err error) error {
	if code := status(err); code == http.StatusNotFound || code == http.StatusGone {
		return fmt.Errorf("%w: %w", workitem.ErrNotFound, err)
	}
	return err
}

// Permission implements workitem.GitHub.
func (c *Client) Permission(ctx context.Context, repo, user string) (string, error) {
	owner, name, err := split(repo)
	if err != nil {
		return "", err
	}
	p, _, err := c.gh.Repositories.GetPermissionLevel(ctx, owner, name, user)
	if status(err) == http.StatusNotFound {
		return "none", nil
	}
	if err != nil {
		return "", err
	}
	return authz.Effective(p.GetPermission(), p.GetRoleName()), nil
}

// File implements workitem.GitHub.
func (c *Client) File(ctx context.Context, repo, path, ref string) ([]byte, error) {
	owner, name, err := split(repo)
	if err != nil {
		return nil, err
	}
	var opts *gogithub.RepositoryContentGetOptions
	if ref != "" {
		opts = &gogithub.RepositoryContentGetOptions{Ref: ref}
	}
	fc, _, _, err := c.gh.Repositories.GetContents(ctx, owner, name, path, opts)
	if err != nil {
		return nil, notFound(err)
	}
	if fc == nil {
		return nil, fmt.Errorf("%s is a directory, not a file", path)
	}
	s, err := fc.GetContent()
	if err != nil {
		return nil, fmt.Errorf("failed to decode %s: %w", path, err)
	}
	return []byte(s), nil
}

// BranchHead implements workitem.GitHub.
func (c *Client) BranchHead(ctx context.Context, repo, branch string) (string, error) {
	owner, name, err := split(repo)
	if err != nil {
		return "", err
	}
	ref, _, err := c.gh.Git.GetRef(ctx, owner, name, "heads/"+branch)
	if err != nil {
		return "", notFound(err)
	}
	return ref.GetObject().GetSHA(), nil
}

// IssueOf translates go-github's issue; the comment count is left unknown (-1).
func IssueOf(is *gogithub.Issue) workitem.Issue {
	out := workitem.Issue{Number: is.GetNumber(), Title: is.GetTitle(), Body: is.GetBody(), Comments: -1, Author: is.GetUser().GetLogin()}
	for _, l := range is.Labels {
		out.Labels = append(out.Labels, l.GetName())
	}
	return out
}

// IssuesWithLabel implements workitem.GitHub; it follows every page.
func (c *Client) IssuesWithLabel(ctx context.Context, repo, label string) ([]workitem.Issue, error) {
	owner, name, err := split(repo)
	if err != nil {
		return nil, err
	}
	opts := &gogithub.IssueListByRepoOptions{State: "all", Labels: []string{label},
		ListOptions: gogithub.ListOptions{PerPage: perPage}}
	var out []workitem.Issue
	for {
		page, resp, err := c.gh.Issues.ListByRepo(ctx, owner, name, opts)
		if err != nil {
			return nil, err
		}
		for _, is := range page {
			if !is.IsPullRequest() {
				out = append(out, IssueOf(is))
			}
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// Comments implements workitem.GitHub; it follows every page.
func (c *Client) Comments(ctx context.Context, repo string, issue int) ([]workitem.Comment, error) {
	owner, name, err := split(repo)
	if err != nil {
		return nil, err
	}
	opts := &gogithub.IssueListCommentsOptions{ListOptions: gogithub.ListOptions{PerPage: perPage}}
	var out []workitem.Comment
	for {
		page, resp, err := c.gh.Issues.ListComments(ctx, owner, name, issue, opts)
		if err != nil {
			return nil, notFound(err)
		}
		for _, cm := range page {
			out = append(out, commentOf(cm))
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// commentOf translates an issue comment.
func commentOf(cm *gogithub.IssueComment) workitem.Comment {
	return workitem.Comment{ID: cm.GetID(), Author: cm.GetUser().GetLogin(), AuthorType: cm.GetUser().GetType(),
		Body: cm.GetBody(), CreatedAt: cm.GetCreatedAt().Time, UpdatedAt: cm.GetUpdatedAt().Time}
}

// Issue implements workitem.GitHub.
func (c *Client) Issue(ctx context.Context, repo string, number int) (workitem.Issue, error) {
	owner, name, err := split(repo)
	if err != nil {
		return workitem.Issue{}, err
	}
	is, _, err := c.gh.Issues.Get(ctx, owner, name, number)
	if err != nil {
		return workitem.Issue{}, notFound(err)
	}
	return IssueOf(is), nil
}

// Comment implements workitem.GitHub.
func (c *Client) Comment(ctx context.Context, repo string, id int64) (workitem.Comment, error) {
	owner, name, err := split(repo)
	if err != nil {
		return workitem.Comment{}, err
	}
	cm, _, err := c.gh.Issues.GetComment(ctx, owner, name, id)
	if err != nil {
		return workitem.Comment{}, notFound(err)
	}
	return commentOf(cm), nil
}

// PullRequest implements workitem.GitHub.
func (c *Client) PullRequest(ctx context.Context, repo string, number int) (workitem.Pull, error) {
	owner, name, err := split(repo)
	if err != nil {
		return workitem.Pull{}, err
	}
	pr, _, err := c.gh.PullRequests.Get(ctx, owner, name, number)
	if err != nil {
		return workitem.Pull{}, notFound(err)
	}
	return PullOf(pr), nil
}

// PullOf translates a pull request.
func PullOf(pr *gogithub.PullRequest) workitem.Pull {
	return workitem.Pull{Number: pr.GetNumber(), Author: pr.GetUser().GetLogin(),
		HeadRepo: pr.GetHead().GetRepo().GetFullName(), HeadRef: pr.GetHead().GetRef(), HeadSHA: pr.GetHead().GetSHA(),
		BaseRef: pr.GetBase().GetRef(), State: pr.GetState(), Merged: pr.GetMerged(), Mergeable: pr.Mergeable,
		MergeableState: pr.GetMergeableState()}
}

// CreateComment implements workitem.GitHub.
func (c *Client) CreateComment(ctx context.Context, repo string, issue int, body string) (int64, error) {
	owner, name, err := split(repo)
	if err != nil {
		return 0, err
	}
	cm, _, err := c.gh.Issues.CreateComment(ctx, owner, name, issue, &gogithub.IssueComment{Body: &body})
	if err != nil {
		return 0, unprocessable(err)
	}
	return cm.GetID(), nil
}

// EditComment implements workitem.GitHub.
func (c *Client) EditComment(ctx context.Context, repo string, id int64, body string) error {
	owner, name, err := split(repo)
	if err != nil {
		return err
	}
	_, _, err = c.gh.Issues.EditComment(ctx, owner, name, id, &gogithub.IssueComment{Body: &body})
	return unprocessable(notFound(err))
}

// AddLabel implements workitem.GitHub.
func (c *Client) AddLabel(ctx context.Context, repo string, issue int, label string) error {
	owner, name, err := split(repo)
	if err != nil {
		return err
	}
	_, _, err = c.gh.Issues.AddLabelsToIssue(ctx, owner, name, issue, []string{label})
	return err
}

// RemoveLabel implements workitem.GitHub.
func (c *Client) RemoveLabel(ctx context.Context, repo string, issue int, label string) error {
	owner, name, err := split(repo)
	if err != nil {
		return err
	}
	_, err = c.gh.Issues.RemoveLabelForIssue(ctx, owner, name, issue, label)
	if status(err) == http.StatusNotFound {
		return nil
	}
	return err
}

// CreateRef implements workitem.GitHub: 422 means the ref exists.
func (c *Client) CreateRef(ctx context.Context, repo, ref, sha string) (bool, error) {
	owner, name, err := split(repo)
	if err != nil {
		return false, err
	}
	// A create-if-absent is how replicas agree (DESIGN.md), so an answer that does not say
	// plainly who made the ref is checked: a 422 "already exists" may be GitHub's own race
	// with nobody's ref behind it, and a 5xx may or may not have created it. The ref is
	// read; absent, the create is tried again; present, it is someone's (after a 5xx
	// perhaps this request's, which the callers' re-drives cover).
	for try := 1; ; try++ {
		_, _, err = c.gh.Git.CreateRef(ctx, owner, name, &gogithub.Reference{Ref: &ref, Object: &gogithub.GitObject{SHA: &sha}})
		if err == nil {
			return true, nil
		}
		if !refExists(err) && status(err) < http.StatusInternalServerError {
			return false, err
		}
		_, _, gerr := c.gh.Git.GetRef(ctx, owner, name, ref)
		switch {
		case gerr == nil:
			return false, nil
		case status(gerr) != http.StatusNotFound:
			return false, fmt.Errorf("failed to create %s (%w), and to read it back: %w", ref, err, gerr)
		case try == createRefAttempts:
			return false, fmt.Errorf("failed to create %s after %d tries: %w", ref, try, err)
		}
		t := time.NewTimer(time.Duration(try) * createRefPause)
		select {
		case <-ctx.Done():
			t.Stop()
			return false, fmt.Errorf("failed to create %s: %w", ref, context.Cause(ctx))
		case <-t.C:
		}
	}
}

// CreateRef's tries when GitHub answers without creating, and the pause before the
// next (growing with each).
const (
	createRefAttempts = 5
	createRefPause    = 100 * time.Millisecond
	// dispatchAttempts bounds Dispatch's tries after GitHub's 5xx.
	dispatchAttempts = 3
)

// RefExists implements workitem.GitHub.
func (c *Client) RefExists(ctx context.Context, repo, ref string) (bool, error) {
	owner, name, err := split(repo)
	if err != nil {
		return false, err
	}
	_, _, err = c.gh.Git.GetRef(ctx, owner, name, ref)
	if status(err) == http.StatusNotFound {
		return false, nil
	}
	return err == nil, err
}

// Dispatch implements workitem.GitHub. It asks for the run's details
// (return_run_details), which go-github v66 predates, so the request is built by hand.
func (c *Client) Dispatch(ctx context.Context, repo, workflow, ref string, inputs map[string]string) (int64, error) {
	owner, name, err := split(repo)
	if err != nil {
		return 0, err
	}
	body := struct {
		Ref              string            `json:"ref"`
		Inputs           map[string]string `json:"inputs"`
		ReturnRunDetails bool              `json:"return_run_details"`
	}{ref, inputs, true}
	req, err := c.gh.NewRequest(http.MethodPost, fmt.Sprintf("repos/%s/%s/actions/workflows/%s/dispatches", owner, name, workflow), body)
	if err != nil {
		return 0, err
	}
	var out struct {
		RunID int64 `json:"workflow_run_id"`
	}
	// A 5xx may or may not have started a run. Dispatching again is safe: each dispatch
	// carries the attempt's single-use nonce, so of two runs only the first to exchange
	// it gets credentials, and the other ends at its exchange having done nothing.
	for try := 1; ; try++ {
		_, err = c.gh.Do(ctx, req, &out)
		if err == nil || status(err) < http.StatusInternalServerError || try == dispatchAttempts {
			break
		}
		if req, err = c.gh.NewRequest(http.MethodPost, fmt.Sprintf("repos/%s/%s/actions/workflows/%s/dispatches", owner, name, workflow), body); err != nil {
			return 0, err
		}
		t := time.NewTimer(time.Duration(try) * createRefPause * 5)
		select {
		case <-ctx.Done():
			t.Stop()
			return 0, context.Cause(ctx)
		case <-t.C:
		}
	}
	if err != nil {
		return 0, err
	}
	if out.RunID == 0 {
		return 0, errors.New("GitHub did not return the dispatched run's ID")
	}
	return out.RunID, nil
}

// runPagesSearched bounds RunByTitle's search: the repository's newest
// workflow_dispatch runs, a page of 100 at a time.
const runPagesSearched = 3

// RunByTitle implements workitem.GitHub: the repository's newest workflow_dispatch runs,
// newest first, until one older than since.
func (c *Client) RunByTitle(ctx context.Context, repo, title, actor string, since time.Time) (int64, error) {
	owner, name, err := split(repo)
	if err != nil {
		return 0, err
	}
	opts := &gogithub.ListWorkflowRunsOptions{Event: "workflow_dispatch", ListOptions: gogithub.ListOptions{PerPage: perPage}}
	for page := 1; page <= runPagesSearched; page++ {
		opts.Page = page
		runs, resp, err := c.gh.Actions.ListRepositoryWorkflowRuns(ctx, owner, name, opts)
		if err != nil {
			return 0, fmt.Errorf("failed to list the workflow runs of %s: %w", repo, err)
		}
		for _, r := range runs.WorkflowRuns {
			if r.GetCreatedAt().Before(since) {
				return 0, nil
			}
			if r.GetDisplayTitle() == title && strings.EqualFold(r.GetActor().GetLogin(), actor) {
				return r.GetID(), nil
			}
		}
		if resp.NextPage == 0 {
			break
		}
	}
	return 0, nil
}

// RepoToken implements workitem.GitHub: the token can reach only repo, with only perms.
func (c *Client) RepoToken(ctx context.Context, repo string, perms map[string]string) (string, time.Time, error) {
	_, name, err := split(repo)
	if err != nil {
		return "", time.Time{}, err
	}
	raw, err := json.Marshal(perms)
	if err != nil {
		return "", time.Time{}, err
	}
	var p gogithub.InstallationPermissions
	if err := json.Unmarshal(raw, &p); err != nil {
		return "", time.Time{}, fmt.Errorf("failed to read the token permissions: %w", err)
	}
	tok, _, err := c.app.Apps.CreateInstallationToken(ctx, c.inst, &gogithub.InstallationTokenOptions{
		Repositories: []string{name}, Permissions: &p})
	if err != nil {
		return "", time.Time{}, err
	}
	return tok.GetToken(), tok.GetExpiresAt().Time, nil
}

// ReadToken implements workitem.GitHub: contents read (and the metadata GitHub adds) on
// exactly repos, which must all be the installation's.
func (c *Client) ReadToken(ctx context.Context, repos []string) (string, time.Time, error) {
	names := make([]string, len(repos))
	for i, r := range repos {
		_, name, err := split(r)
		if err != nil {
			return "", time.Time{}, err
		}
		names[i] = name
	}
	tok, _, err := c.app.Apps.CreateInstallationToken(ctx, c.inst, &gogithub.InstallationTokenOptions{
		Repositories: names, Permissions: &gogithub.InstallationPermissions{Contents: gogithub.String("read")}})
	if err != nil {
		return "", time.Time{}, unprocessable(err)
	}
	return tok.GetToken(), tok.GetExpiresAt().Time, nil
}
