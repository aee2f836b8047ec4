package ghclient

import (
	"context"
	"fmt"
	"sync"

	gogithub "github.com/google/go-github/v66/github"
	"github.com/palantir/go-githubapp/githubapp"

	"github.com/bumperdev/bumper/app/workitem"
)

// Connector gives installation clients from a githubapp.ClientCreator.
type Connector struct {
	cc githubapp.ClientCreator

	mu       sync.Mutex
	installs map[string]int64 // repository → installation
}

var _ workitem.Connector = (*Connector)(nil)

// NewConnector wraps a client creator.
func NewConnector(cc githubapp.ClientCreator) *Connector {
	return &Connector{cc: cc, installs: map[string]int64{}}
}

// Installation implements workitem.Connector.
func (c *Connector) Installation(_ context.Context, id int64) (workitem.GitHub, error) {
	gh, err := c.cc.NewInstallationClient(id)
	if err != nil {
		return nil, fmt.Errorf("failed to create a client for installation %d: %w", id, err)
	}
	app, err := c.cc.NewAppClient()
	if err != nil {
		return nil, fmt.Errorf("failed to create the App client: %w", err)
	}
	return &Client{gh: gh, app: app, inst: id}, nil
}

// ForRepository implements workitem.Connector; installation IDs are remembered.
func (c *Connector) ForRepository(ctx context.Context, repo string) (workitem.GitHub, error) {
	c.mu.Lock()
	id, ok := c.installs[repo]
	c.mu.Unlock()
	if !ok {
		owner, name, err := split(repo)
		if err != nil {
			return nil, err
		}
		app, err := c.cc.NewAppClient()
		if err != nil {
			return nil, fmt.Errorf("failed to create the App client: %w", err)
		}
		inst, _, err := app.Apps.FindRepositoryInstallation(ctx, owner, name)
		if err != nil {
			return nil, fmt.Errorf("failed to find the installation of %s: %w", repo, notFound(err))
		}
		id = inst.GetID()
		c.Remember(repo, id)
	}
	return c.Installation(ctx, id)
}

// Remember notes which installation holds a repository (webhooks say so for free).
func (c *Connector) Remember(repo string, installation int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.installs[repo] = installation
}

// Forget drops a repository that left an installation.
func (c *Connector) Forget(repo string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.installs, repo)
}

// Repositories implements workitem.Connector, following every page.
func (c *Connector) Repositories(ctx context.Context) (map[int64][]workitem.Repo, error) {
	app, err := c.cc.NewAppClient()
	if err != nil {
		return nil, fmt.Errorf("failed to create the App client: %w", err)
	}
	out := map[int64][]workitem.Repo{}
	opts := &gogithub.ListOptions{PerPage: perPage}
	for {
		insts, resp, err := app.Apps.ListInstallations(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("failed to list installations: %w", err)
		}
		for _, in := range insts {
			repos, err := c.installationRepos(ctx, in.GetID())
			if err != nil {
				return nil, err
			}
			out[in.GetID()] = repos
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

func (c *Connector) installationRepos(ctx context.Context, id int64) ([]workitem.Repo, error) {
	gh, err := c.cc.NewInstallationClient(id)
	if err != nil {
		return nil, fmt.Errorf("failed to create a client for installation %d: %w", id, err)
	}
	var out []workitem.Repo
	opts := &gogithub.ListOptions{PerPage: perPage}
	for {
		list, resp, err := gh.Apps.ListRepos(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("failed to list the repositories of installation %d: %w", id, err)
		}
		for _, r := range list.Repositories {
			out = append(out, workitem.Repo{FullName: r.GetFullName(), DefaultBranch: r.GetDefaultBranch()})
			c.Remember(r.GetFullName(), id)
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// BotLogin implements workitem.Connector. It asks GitHub each time: the Service asks
// once and keeps the answer.
func (c *Connector) BotLogin(ctx context.Context) (string, error) {
	app, err := c.cc.NewAppClient()
	if err != nil {
		return "", fmt.Errorf("failed to create the App client: %w", err)
	}
	a, _, err := app.Apps.Get(ctx, "")
	if err != nil {
		return "", fmt.Errorf("failed to read the App: %w", err)
	}
	if a.GetSlug() == "" {
		return "", fmt.Errorf("GitHub returned the App without a slug")
	}
	return a.GetSlug() + "[bot]", nil
}
