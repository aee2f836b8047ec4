package ghclient

import (
	"context"
	"errors"
	"fmt"
	"strings"

	gogithub "github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/app/workitem"
)

// ReviewOf translates a pull request review, its state upper-cased as the REST API
// lists it (webhook payloads write it in lower case).
func ReviewOf(r *gogithub.PullRequestReview) workitem.ReviewInfo {
	return workitem.ReviewInfo{ID: r.GetID(), User: r.GetUser().GetLogin(), UserType: r.GetUser().GetType(),
		Association: r.GetAuthorAssociation(), State: strings.ToUpper(r.GetState()), CommitID: r.GetCommitID(),
		Body: r.GetBody(), SubmittedAt: r.GetSubmittedAt().Time}
}

// Review implements workitem.GitHub, through the pull request's list of reviews (the
// one the App reads for approvals too): one call for up to 100 reviews.
func (c *Client) Review(ctx context.Context, repo string, number int, id int64) (workitem.ReviewInfo, error) {
	reviews, err := c.Reviews(ctx, repo, number)
	if err != nil {
		return workitem.ReviewInfo{}, err
	}
	for _, r := range reviews {
		if r.ID == id {
			return r, nil
		}
	}
	return workitem.ReviewInfo{}, fmt.Errorf("%w: review %d of %s#%d", workitem.ErrNotFound, id, repo, number)
}

// PullComments implements workitem.GitHub; it follows every page.
func (c *Client) PullComments(ctx context.Context, repo string, number int) ([]workitem.PullComment, error) {
	owner, name, err := split(repo)
	if err != nil {
		return nil, err
	}
	var out []workitem.PullComment
	opts := &gogithub.PullRequestListCommentsOptions{Sort: "created", Direction: "asc", ListOptions: gogithub.ListOptions{PerPage: perPage}}
	for {
		page, resp, err := c.gh.PullRequests.ListComments(ctx, owner, name, number, opts)
		if err != nil {
			return nil, notFound(err)
		}
		for _, cm := range page {
			out = append(out, workitem.PullComment{ID: cm.GetID(), ReviewID: cm.GetPullRequestReviewID(), InReplyTo: cm.GetInReplyTo(),
				Author: cm.GetUser().GetLogin(), AuthorType: cm.GetUser().GetType(), Association: cm.GetAuthorAssociation(),
				Body: cm.GetBody(), Path: cm.GetPath(), Line: cm.GetLine(), StartLine: cm.GetStartLine(), Side: cm.GetSide(),
				DiffHunk: cm.GetDiffHunk(), CommitID: cm.GetCommitID(), CreatedAt: cm.GetCreatedAt().Time, UpdatedAt: cm.GetUpdatedAt().Time})
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// UpdateBranch implements workitem.GitHub: GitHub answers 202 and merges in the
// background.
func (c *Client) UpdateBranch(ctx context.Context, repo string, number int, expectedHead string) error {
	owner, name, err := split(repo)
	if err != nil {
		return err
	}
	_, _, err = c.gh.PullRequests.UpdateBranch(ctx, owner, name, number, &gogithub.PullRequestBranchUpdateOptions{ExpectedHeadSHA: &expectedHead})
	var accepted *gogithub.AcceptedError
	if errors.As(err, &accepted) {
		return nil
	}
	return unprocessable(notFound(err))
}

// UpToDateRequired implements workitem.GitHub: GET /repos/{o}/{r}/branches/{b} shows
// the protection's required status checks, strict included, to anyone who can read the
// repository.
func (c *Client) UpToDateRequired(ctx context.Context, repo, branch string) (bool, error) {
	owner, name, err := split(repo)
	if err != nil {
		return false, err
	}
	b, _, err := c.gh.Repositories.GetBranch(ctx, owner, name, branch, 0)
	if err != nil {
		return false, notFound(err)
	}
	rsc := b.GetProtection().GetRequiredStatusChecks()
	return rsc != nil && rsc.Strict, nil
}
