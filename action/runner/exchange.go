package runner

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/bumperdev/bumper/internal/ghretry"

	"github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/action/appclient"
	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/workspace"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/firewall/credential"
	"github.com/bumperdev/bumper/internal/repoconfig"
)

// grant is what serve granted the run, checked against the dispatch, with the approved
// task and the repository's policy at the approved base commit. It does not change once
// the exchange is done.
type grant struct {
	wire.ExchangeResponse
	// branch is the run's work branch as checkGrant let it through: the only branch it
	// may push (fix and implement runs).
	branch string
	task   wire.Task
	policy repoconfig.Config
	// creds are the runner host's credentials the policy asked for and the repository
	// is granted (credentials.Host.Grant); their values go to the firewall only.
	creds []credential.Credential
	// policyFile is .github/bumper.yml as the base commit has it; nil when it has none.
	policyFile []byte
	// gh is the runner's own client of GitHub's API, with the installation token.
	gh *github.Client
}

// exchanged is what the exchange phase made, as far as it got.
type exchanged struct {
	// granted is serve's answer once it granted credentials, whether or not they prove
	// to be the run's: the installation token is revoked when the run ends.
	granted *wire.ExchangeResponse
	// link is serve, with the run token, once the grant proved to be the run's.
	link *link
	// grant is the whole grant, once the phase ended well.
	grant *grant
}

// exchange trades the OIDC token and the nonce for the run's credentials, reads the
// approved task, and the repository's policy at the approved base commit.
func exchange(ctx context.Context, cfg Config, ev *evidence.Evidence) (x exchanged, detail string, err error) {
	cfg.Mask(cfg.Nonce)
	var opts []appclient.Option
	if cfg.AllowInsecureHTTP {
		opts = append(opts, appclient.AllowInsecureHTTP())
	}
	client, err := appclient.New(cfg.ServeURL, opts...)
	if err != nil {
		return x, "", fmt.Errorf("failed to reach serve: %w", err)
	}
	oidc, err := cfg.OIDCToken(ctx)
	if err != nil {
		return x, "", fmt.Errorf("failed to get the job's OIDC token: %w", err)
	}
	cfg.Mask(oidc)
	resp, err := client.Exchange(ctx, wire.ExchangeRequest{OIDCToken: oidc, Nonce: cfg.Nonce, WorkItem: cfg.WorkItem.String(), Attempt: cfg.Attempt})
	if err != nil {
		return x, "", err
	}
	cfg.Mask(resp.InstallationToken)
	cfg.Mask(resp.RunToken)
	if resp.DependencyToken != "" {
		cfg.Mask(resp.DependencyToken)
	}
	x.granted = &resp
	if resp.Stage != cfg.Stage {
		return x, "", fmt.Errorf("serve granted a %s run, but the dispatch said %s: the runner workflow's stage input is not the App's", resp.Stage, cfg.Stage)
	}
	if !strings.EqualFold(resp.Repository, cfg.WorkItem.Repository) {
		return x, "", fmt.Errorf("serve granted credentials for %s, but the work item is in %s", resp.Repository, cfg.WorkItem.Repository)
	}
	branch, err := checkGrant(cfg, resp)
	if err != nil {
		return x, "", err
	}
	x.link = newLink(client.WithRunToken(resp.RunToken), resp.RunTokenExpiresAt, cfg.Now)
	ev.Revision, ev.BaseCommit = resp.Revision, resp.BaseCommit
	ev.Approvals = append(ev.Approvals, resp.Approvals...) // evidence.Approval is wire.Approval
	g := &grant{ExchangeResponse: resp, branch: branch}
	if g.gh, err = githubClient(cfg, resp.InstallationToken); err != nil {
		return x, "", err
	}
	if g.task, err = x.link.client().Task(ctx); err != nil {
		return x, "", fmt.Errorf("failed to read the task from serve: %w", err)
	}
	if g.task.BaseCommit != resp.BaseCommit {
		return x, "", fmt.Errorf("serve's task is for base commit %s, the credentials for %s", g.task.BaseCommit, resp.BaseCommit)
	}
	if err := checkTask(g.task, resp, branch); err != nil {
		return x, "", err
	}
	ev.WorkItem.Title = g.task.Title
	if cfg.Stage == wire.StageRevise || cfg.Stage == wire.StageUpdate {
		ev.Round = evidence.NewRound(g.task)
	}
	if g.policy, g.policyFile, err = readPolicy(ctx, g.gh, cfg.WorkItem.Repository, resp.BaseCommit); err != nil {
		return x, "", err
	}
	if err := checkPins(g.policy, cfg.Resolve); err != nil {
		return x, "", err
	}
	if g.creds, err = cfg.Credentials.Grant(cfg.WorkItem.Repository, g.policy.Credentials); err != nil {
		return x, "", fmt.Errorf("failed to grant the run's credentials: %w", err)
	}
	for _, c := range g.creds {
		cfg.Mask(c.Value)
		grant := evidence.CredentialGrant{Name: c.Name}
		for _, h := range c.Hosts {
			grant.Hosts = append(grant.Hosts, h.String())
		}
		ev.Credentials = append(ev.Credentials, grant)
	}
	if err := checkDependencies(cfg, g.policy, resp); err != nil {
		return x, "", err
	}
	ev.Dependencies = resp.Dependencies
	x.grant = g
	if wire.PullStage(cfg.Stage) {
		ev.PullRequest = resp.PullRequest
		merge := ""
		if resp.UpdateTo != "" {
			merge = fmt.Sprintf(", merging %.12s", resp.UpdateTo)
		}
		return x, fmt.Sprintf("granted %s attempt %d on %s at %.12s (pull request #%d, base %.12s%s); policy %s", resp.Stage, resp.Attempt,
			branch, resp.HeadCommit, resp.PullRequest, resp.BaseCommit, merge, g.policy.Revision), nil
	}
	return x, fmt.Sprintf("granted %s attempt %d at %.12s; policy %s", resp.Stage, resp.Attempt, resp.BaseCommit, g.policy.Revision), nil
}

// checkGrant holds the grant's branch and pull request to the run's own issue and
// stage, before anything is fetched or pushed with it, and returns the branch: it is
// bumper/<issue>-<n> of this issue (an implement or plan run's own attempt; an earlier
// attempt's for the pull request a fix, review, revise or update run starts from), and
// such a run names its pull request and the full head commit it starts from; an update
// run, and only it, names the base branch's head it merges. The push rules and the
// workspace are made from what passes here.
func checkGrant(cfg Config, g wire.ExchangeResponse) (string, error) {
	issue, attempt, stage := cfg.WorkItem.Issue, cfg.Attempt, cfg.Stage
	branch := g.Branch
	if branch == "" && !wire.PullStage(stage) {
		// A serve that names no branch means the attempt's own, the only one an
		// implement run ever had.
		branch = workspace.Branch(issue, attempt)
	}
	n, ok := workspace.BranchAttempt(branch, issue)
	switch {
	case !ok:
		return "", fmt.Errorf("serve granted the branch %q: a run of #%d works only on bumper/%d-<attempt>; refusing to fetch or push it", branch, issue, issue)
	case !wire.PullStage(stage) && n != attempt:
		return "", fmt.Errorf("serve granted the branch %q to a %s run of attempt %d: it must be bumper/%d-%d, the attempt's own", branch, stage, attempt, issue, attempt)
	case wire.PullStage(stage) && n >= attempt:
		return "", fmt.Errorf("serve granted the branch %q to a %s run of attempt %d: a %s run works on the branch of the earlier attempt that opened the pull request", branch, stage, attempt, stage)
	case wire.PullStage(stage) && g.PullRequest < 1:
		return "", fmt.Errorf("serve granted a %s run without its pull request: a %s run starts from the work item's pull request", stage, stage)
	case wire.PullStage(stage) && !workspace.IsCommitID(g.HeadCommit):
		return "", fmt.Errorf("serve granted a %s run whose head commit %q is not a full commit id (40 lower-case hexadecimal digits)", stage, g.HeadCommit)
	case !workspace.IsCommitID(g.BaseCommit):
		return "", fmt.Errorf("serve granted a run whose base commit %q is not a full commit id", g.BaseCommit)
	case stage == wire.StageUpdate && (!workspace.IsCommitID(g.UpdateTo) || g.UpdateTo == g.HeadCommit):
		return "", fmt.Errorf("serve granted an update run whose base branch head to merge, %q, is not a full commit id other than the pull request's head", g.UpdateTo)
	case stage != wire.StageUpdate && g.UpdateTo != "":
		return "", fmt.Errorf("serve granted a %s run a base branch head to merge (%q): only an update run merges one", stage, g.UpdateTo)
	}
	return branch, nil
}

// checkTask refuses a task that names another pull request, branch, head or base
// branch head to merge than the grant: the agent would be told about one and the run
// would work on another. A revise or update task names its round; a revise task holds
// at most wire.MaxReviewComments comments, as serve bounds them.
func checkTask(t wire.Task, g wire.ExchangeResponse, branch string) error {
	if t.PullRequest != 0 && t.PullRequest != g.PullRequest || t.Branch != "" && t.Branch != branch ||
		t.HeadCommit != "" && t.HeadCommit != g.HeadCommit {
		return fmt.Errorf("serve's task names pull request #%d, branch %q, head %q; the credentials #%d, %q, %q", t.PullRequest, t.Branch, t.HeadCommit,
			g.PullRequest, branch, g.HeadCommit)
	}
	switch {
	case t.UpdateTo != g.UpdateTo:
		return fmt.Errorf("serve's task merges %q, the credentials %q", t.UpdateTo, g.UpdateTo)
	case (g.Stage == wire.StageRevise || g.Stage == wire.StageUpdate) && t.Round < 1:
		return fmt.Errorf("serve's %s task names no round (%d)", g.Stage, t.Round)
	case len(t.Review) > wire.MaxReviewComments:
		return fmt.Errorf("serve's task holds %d review comments; a round answers at most %d", len(t.Review), wire.MaxReviewComments)
	case len(t.Review) > 0 && g.Stage != wire.StageRevise:
		return fmt.Errorf("serve's %s task holds review comments: only a revise run answers them", g.Stage)
	}
	return nil
}

// githubClient is the runner's own client of GitHub's API, holding the installation
// token: the only writer of the pull request, the check run and the token's revocation.
func githubClient(cfg Config, token string) (*github.Client, error) {
	base, err := url.Parse(strings.TrimRight(cfg.APIURL, "/") + "/")
	if err != nil {
		return nil, fmt.Errorf("failed to use the API URL %q: %w", cfg.APIURL, err)
	}
	hc := *cfg.HTTPClient
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	// GitHub's 5xx and secondary rate limits are waited out here, below go-github, as
	// serve's are (internal/ghretry): a run that opened its pull request must not fail
	// on a busy minute.
	hc.Transport = ghretry.New(hc.Transport)
	gh := github.NewClient(&hc).WithAuthToken(token)
	gh.BaseURL = base
	return gh, nil
}

// readPolicy reads .github/bumper.yml at the approved base commit through GitHub's API,
// never from the agent's tree: the agent cannot widen its own allowlist, budget or
// verification by editing the file. No file is the default policy; a file that does not
// parse fails the run (the App refused to approve it too). The file's bytes come back
// too, for the change a run's denied hosts suggest.
func readPolicy(ctx context.Context, gh *github.Client, repo, base string) (repoconfig.Config, []byte, error) {
	owner, name, _ := strings.Cut(repo, "/")
	fc, _, resp, err := gh.Repositories.GetContents(ctx, owner, name, repoconfig.Path, &github.RepositoryContentGetOptions{Ref: base})
	if resp != nil && resp.StatusCode == http.StatusNotFound {
		return repoconfig.Default(), nil, nil
	}
	if err != nil {
		return repoconfig.Config{}, nil, fmt.Errorf("failed to read %s at %.12s: %w", repoconfig.Path, base, err)
	}
	if fc == nil {
		return repoconfig.Config{}, nil, fmt.Errorf("failed to read %s at %.12s: it is a directory", repoconfig.Path, base)
	}
	raw, err := fc.GetContent()
	if err != nil {
		return repoconfig.Config{}, nil, fmt.Errorf("failed to decode %s: %w", repoconfig.Path, err)
	}
	p, err := repoconfig.Parse([]byte(raw))
	if err != nil {
		return repoconfig.Config{}, nil, errors.Join(err, errors.New("fix the file on the base branch, then /retry"))
	}
	return p, []byte(raw), nil
}
