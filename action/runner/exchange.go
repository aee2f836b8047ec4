package runner

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/action/appclient"
	"github.com/bumperdev/bumper/action/workspace"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/repoconfig"
)

// exchange trades the OIDC token and the nonce for the run's credentials, reads the
// approved task, and the repository's policy at the approved base commit.
func (r *run) exchange(ctx context.Context) (string, error) {
	r.cfg.Mask(r.cfg.Nonce)
	var opts []appclient.Option
	if r.cfg.AllowInsecureHTTP {
		opts = append(opts, appclient.AllowInsecureHTTP())
	}
	client, err := appclient.New(r.cfg.ServeURL, opts...)
	if err != nil {
		return "", fmt.Errorf("failed to reach serve: %w", err)
	}
	oidc, err := r.cfg.OIDCToken(ctx)
	if err != nil {
		return "", fmt.Errorf("failed to get the job's OIDC token: %w", err)
	}
	r.cfg.Mask(oidc)
	grant, err := client.Exchange(ctx, wire.ExchangeRequest{OIDCToken: oidc, Nonce: r.cfg.Nonce, WorkItem: r.cfg.WorkItem, Attempt: r.cfg.Attempt})
	if err != nil {
		return "", err
	}
	r.cfg.Mask(grant.InstallationToken)
	r.cfg.Mask(grant.RunToken)
	r.exchanged = true
	r.grant = grant
	if grant.Stage != r.cfg.Stage {
		return "", fmt.Errorf("serve granted a %s run, but the dispatch said %s: the runner workflow's stage input is not the App's", grant.Stage, r.cfg.Stage)
	}
	if !strings.EqualFold(grant.Repository, r.repo) {
		return "", fmt.Errorf("serve granted credentials for %s, but the work item is in %s", grant.Repository, r.repo)
	}
	if err := r.checkGrant(); err != nil {
		return "", err
	}
	r.tokenMu.Lock()
	r.serve = client.WithRunToken(grant.RunToken)
	r.tokenIssued, r.tokenExpires = r.cfg.Now(), grant.RunTokenExpiresAt
	r.tokenMu.Unlock()
	r.ev.Revision, r.ev.BaseCommit = grant.Revision, grant.BaseCommit
	r.ev.Approvals = append(r.ev.Approvals, grant.Approvals...)
	if r.gh, err = r.github(grant.InstallationToken); err != nil {
		return "", err
	}
	if r.task, err = r.client().Task(ctx); err != nil {
		return "", fmt.Errorf("failed to read the task from serve: %w", err)
	}
	if r.task.BaseCommit != grant.BaseCommit {
		return "", fmt.Errorf("serve's task is for base commit %s, the credentials for %s", r.task.BaseCommit, grant.BaseCommit)
	}
	if err := r.checkTask(); err != nil {
		return "", err
	}
	r.ev.WorkItem.Title = r.task.Title
	if r.policy, err = r.readPolicy(ctx); err != nil {
		return "", err
	}
	if err := checkPins(r.policy, r.cfg.Resolve); err != nil {
		return "", err
	}
	if r.pullStage() {
		r.pull.number = grant.PullRequest
		r.ev.PullRequest = grant.PullRequest
		return fmt.Sprintf("granted %s attempt %d on %s at %.12s (pull request #%d, base %.12s); policy %s", grant.Stage, grant.Attempt,
			r.branch, grant.HeadCommit, grant.PullRequest, grant.BaseCommit, r.policy.Revision), nil
	}
	return fmt.Sprintf("granted %s attempt %d at %.12s; policy %s", grant.Stage, grant.Attempt, grant.BaseCommit, r.policy.Revision), nil
}

// pullStage says the run starts from the work item's pull request (fix and review).
func (r *run) pullStage() bool {
	return r.cfg.Stage == wire.StageFix || r.cfg.Stage == wire.StageReview
}

// checkGrant holds the grant's branch and pull request to the run's own issue and
// stage, before anything is fetched or pushed with it: the branch is bumper/<issue>-<n>
// of this issue (an implement or plan run's own attempt; an earlier attempt's for the
// pull request a fix or review run starts from), and a fix or review run names its
// pull request and the full head commit it starts from. The push rules and the
// workspace are made from what passes here.
func (r *run) checkGrant() error {
	g := r.grant
	branch := g.Branch
	if branch == "" && !r.pullStage() {
		// A serve that names no branch means the attempt's own, the only one an
		// implement run ever had.
		branch = workspace.Branch(r.issue, r.cfg.Attempt)
	}
	n, ok := workspace.BranchAttempt(branch, r.issue)
	switch {
	case !ok:
		return fmt.Errorf("serve granted the branch %q: a run of #%d works only on bumper/%d-<attempt>; refusing to fetch or push it", branch, r.issue, r.issue)
	case !r.pullStage() && n != r.cfg.Attempt:
		return fmt.Errorf("serve granted the branch %q to a %s run of attempt %d: it must be bumper/%d-%d, the attempt's own", branch, r.cfg.Stage, r.cfg.Attempt, r.issue, r.cfg.Attempt)
	case r.pullStage() && n >= r.cfg.Attempt:
		return fmt.Errorf("serve granted the branch %q to a %s run of attempt %d: a %s run works on the branch of the earlier attempt that opened the pull request", branch, r.cfg.Stage, r.cfg.Attempt, r.cfg.Stage)
	case r.pullStage() && g.PullRequest < 1:
		return fmt.Errorf("serve granted a %s run without its pull request: a %s run starts from the work item's pull request", r.cfg.Stage, r.cfg.Stage)
	case r.pullStage() && !workspace.IsCommitID(g.HeadCommit):
		return fmt.Errorf("serve granted a %s run whose head commit %q is not a full commit id (40 lower-case hexadecimal digits)", r.cfg.Stage, g.HeadCommit)
	case !workspace.IsCommitID(g.BaseCommit):
		return fmt.Errorf("serve granted a run whose base commit %q is not a full commit id", g.BaseCommit)
	}
	r.branch = branch
	return nil
}

// checkTask refuses a task that names another pull request, branch or head than the
// grant: the agent would be told about one and the run would work on another.
func (r *run) checkTask() error {
	t := r.task
	if t.PullRequest != 0 && t.PullRequest != r.grant.PullRequest || t.Branch != "" && t.Branch != r.branch ||
		t.HeadCommit != "" && t.HeadCommit != r.grant.HeadCommit {
		return fmt.Errorf("serve's task names pull request #%d, branch %q, head %q; the credentials #%d, %q, %q", t.PullRequest, t.Branch, t.HeadCommit,
			r.grant.PullRequest, r.branch, r.grant.HeadCommit)
	}
	return nil
}

// start is the commit the run's work branch starts at: a fix or review run's pull
// request head, else the approved base commit.
func (r *run) start() string {
	if r.pullStage() {
		return r.grant.HeadCommit
	}
	return r.grant.BaseCommit
}

// github is the runner's own client of GitHub's API, holding the installation token:
// the only writer of the pull request, the check run and the token's revocation.
func (r *run) github(token string) (*github.Client, error) {
	base, err := url.Parse(strings.TrimRight(r.cfg.APIURL, "/") + "/")
	if err != nil {
		return nil, fmt.Errorf("failed to use the API URL %q: %w", r.cfg.APIURL, err)
	}
	hc := *r.cfg.HTTPClient
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	gh := github.NewClient(&hc).WithAuthToken(token)
	gh.BaseURL = base
	return gh, nil
}

// readPolicy reads .github/bumper.yml at the approved base commit through GitHub's API,
// never from the agent's tree: the agent cannot widen its own allowlist, budget or
// verification by editing the file. No file is the default policy; a file that does not
// parse fails the run (the App refused to approve it too).
func (r *run) readPolicy(ctx context.Context) (repoconfig.Config, error) {
	owner, name, _ := strings.Cut(r.repo, "/")
	fc, _, resp, err := r.gh.Repositories.GetContents(ctx, owner, name, repoconfig.Path, &github.RepositoryContentGetOptions{Ref: r.grant.BaseCommit})
	if resp != nil && resp.StatusCode == http.StatusNotFound {
		return repoconfig.Default(), nil
	}
	if err != nil {
		return repoconfig.Config{}, fmt.Errorf("failed to read %s at %.12s: %w", repoconfig.Path, r.grant.BaseCommit, err)
	}
	if fc == nil {
		return repoconfig.Config{}, fmt.Errorf("failed to read %s at %.12s: it is a directory", repoconfig.Path, r.grant.BaseCommit)
	}
	raw, err := fc.GetContent()
	if err != nil {
		return repoconfig.Config{}, fmt.Errorf("failed to decode %s: %w", repoconfig.Path, err)
	}
	p, err := repoconfig.Parse([]byte(raw))
	if err != nil {
		return repoconfig.Config{}, errors.Join(err, errors.New("fix the file on the base branch, then /retry"))
	}
	return p, nil
}
