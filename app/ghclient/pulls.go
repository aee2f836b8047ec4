package ghclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"

	gogithub "github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/app/workitem"
)

// OpenPulls implements workitem.GitHub; it follows every page.
func (c *Client) OpenPulls(ctx context.Context, repo, base string) ([]workitem.Pull, error) {
	owner, name, err := split(repo)
	if err != nil {
		return nil, err
	}
	opts := &gogithub.PullRequestListOptions{State: "open", Base: base, ListOptions: gogithub.ListOptions{PerPage: perPage}}
	var out []workitem.Pull
	for {
		page, resp, err := c.gh.PullRequests.List(ctx, owner, name, opts)
		if err != nil {
			return nil, err
		}
		for _, pr := range page {
			out = append(out, PullOf(pr))
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// PullFiles implements workitem.GitHub; it follows every page (GitHub lists at most
// 3000 files).
func (c *Client) PullFiles(ctx context.Context, repo string, number int) ([]workitem.PullFile, error) {
	owner, name, err := split(repo)
	if err != nil {
		return nil, err
	}
	var out []workitem.PullFile
	opts := &gogithub.ListOptions{PerPage: perPage}
	for {
		files, resp, err := c.gh.PullRequests.ListFiles(ctx, owner, name, number, opts)
		if err != nil {
			return nil, notFound(err)
		}
		for _, f := range files {
			out = append(out, workitem.PullFile{Path: f.GetFilename(), Patch: f.GetPatch()})
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// CreateReview implements workitem.GitHub.
func (c *Client) CreateReview(ctx context.Context, repo string, number int, r workitem.Review) (int64, error) {
	owner, name, err := split(repo)
	if err != nil {
		return 0, err
	}
	req := &gogithub.PullRequestReviewRequest{CommitID: &r.CommitID, Body: &r.Body, Event: &r.Event}
	for _, cm := range r.Comments {
		req.Comments = append(req.Comments, &gogithub.DraftReviewComment{Path: gogithub.String(cm.Path),
			Line: gogithub.Int(cm.Line), Side: gogithub.String(cm.Side), Body: gogithub.String(cm.Body)})
	}
	rv, _, err := c.gh.PullRequests.CreateReview(ctx, owner, name, number, req)
	if err != nil {
		return 0, err
	}
	return rv.GetID(), nil
}

// CreateCheckRun implements workitem.GitHub.
func (c *Client) CreateCheckRun(ctx context.Context, repo string, cr workitem.CheckRun) (int64, error) {
	owner, name, err := split(repo)
	if err != nil {
		return 0, err
	}
	opts := gogithub.CreateCheckRunOptions{Name: cr.Name, HeadSHA: cr.HeadSHA, Status: gogithub.String("completed"),
		Conclusion: gogithub.String(cr.Conclusion),
		Output:     &gogithub.CheckRunOutput{Title: gogithub.String(cr.Title), Summary: gogithub.String(cr.Summary)}}
	if cr.Text != "" {
		opts.Output.Text = gogithub.String(cr.Text)
	}
	if cr.DetailsURL != "" {
		opts.DetailsURL = gogithub.String(cr.DetailsURL)
	}
	run, _, err := c.gh.Checks.CreateCheckRun(ctx, owner, name, opts)
	if err != nil {
		return 0, err
	}
	return run.GetID(), nil
}

// CheckRuns implements workitem.GitHub; it follows every page.
func (c *Client) CheckRuns(ctx context.Context, repo, sha string) ([]workitem.CheckRun, error) {
	owner, name, err := split(repo)
	if err != nil {
		return nil, err
	}
	var out []workitem.CheckRun
	opts := &gogithub.ListCheckRunsOptions{Filter: gogithub.String("latest"), ListOptions: gogithub.ListOptions{PerPage: perPage}}
	for {
		res, resp, err := c.gh.Checks.ListCheckRunsForRef(ctx, owner, name, sha, opts)
		if err != nil {
			return nil, notFound(err)
		}
		for _, r := range res.CheckRuns {
			out = append(out, workitem.CheckRun{ID: r.GetID(), Name: r.GetName(), HeadSHA: r.GetHeadSHA(), Status: r.GetStatus(),
				Conclusion: r.GetConclusion(), Title: r.GetOutput().GetTitle(), Summary: r.GetOutput().GetSummary(),
				Text: r.GetOutput().GetText(), DetailsURL: r.GetHTMLURL(), AppID: r.GetApp().GetID()})
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	// Newest first within a name: IDs grow with time.
	sort.SliceStable(out, func(i, j int) bool { return out[i].ID > out[j].ID })
	return out, nil
}

// RequiredChecks implements workitem.GitHub: GET /repos/{o}/{r}/branches/{b} shows the
// required checks to anyone who can read the repository; the full protection needs
// the administration permission.
func (c *Client) RequiredChecks(ctx context.Context, repo, branch string) ([]workitem.RequiredCheck, error) {
	owner, name, err := split(repo)
	if err != nil {
		return nil, err
	}
	b, _, err := c.gh.Repositories.GetBranch(ctx, owner, name, branch, 0)
	if err != nil {
		return nil, notFound(err)
	}
	return requiredChecks(b.GetProtection().GetRequiredStatusChecks()), nil
}

// requiredChecks reads both of GitHub's forms: checks (with the App each is pinned to)
// and the older contexts (names only); a name in both is taken from checks.
func requiredChecks(rsc *gogithub.RequiredStatusChecks) []workitem.RequiredCheck {
	if rsc == nil {
		return nil
	}
	var out []workitem.RequiredCheck
	seen := map[string]bool{}
	if rsc.Checks != nil {
		for _, ch := range *rsc.Checks {
			if !seen[ch.Context] {
				seen[ch.Context] = true
				out = append(out, workitem.RequiredCheck{Name: ch.Context, AppID: ch.GetAppID()})
			}
		}
	}
	if rsc.Contexts != nil {
		for _, n := range *rsc.Contexts {
			if !seen[n] {
				seen[n] = true
				out = append(out, workitem.RequiredCheck{Name: n})
			}
		}
	}
	return out
}

// Reviews implements workitem.GitHub; it follows every page.
func (c *Client) Reviews(ctx context.Context, repo string, number int) ([]workitem.ReviewInfo, error) {
	owner, name, err := split(repo)
	if err != nil {
		return nil, err
	}
	var out []workitem.ReviewInfo
	opts := &gogithub.ListOptions{PerPage: perPage}
	for {
		rs, resp, err := c.gh.PullRequests.ListReviews(ctx, owner, name, number, opts)
		if err != nil {
			return nil, notFound(err)
		}
		for _, r := range rs {
			out = append(out, ReviewOf(r))
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// BranchProtection implements workitem.GitHub.
func (c *Client) BranchProtection(ctx context.Context, repo, branch string) (workitem.Protection, error) {
	owner, name, err := split(repo)
	if err != nil {
		return workitem.Protection{}, err
	}
	p, _, err := c.gh.Repositories.GetBranchProtection(ctx, owner, name, branch)
	switch {
	case errors.Is(err, gogithub.ErrBranchNotProtected), status(err) == http.StatusNotFound:
		return workitem.Protection{}, fmt.Errorf("%w: %s is not protected", workitem.ErrNotFound, branch)
	case status(err) == http.StatusForbidden:
		return workitem.Protection{}, fmt.Errorf("%w: %w", workitem.ErrForbidden, err)
	case err != nil:
		return workitem.Protection{}, err
	}
	var out workitem.Protection
	if r := p.GetRequiredPullRequestReviews(); r != nil {
		out.RequiredReviews = r.RequiredApprovingReviewCount
		if b := r.GetBypassPullRequestAllowances(); b != nil {
			for _, a := range b.Apps {
				out.BypassApps = append(out.BypassApps, a.GetSlug())
			}
		}
	}
	out.EnforceAdmins = p.GetEnforceAdmins().Enabled
	out.RequiredChecks = requiredChecks(p.GetRequiredStatusChecks())
	return out, nil
}
