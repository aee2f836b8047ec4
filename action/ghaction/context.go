package ghaction

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sethvargo/go-githubactions"
)

// Context is what the run knows of its workflow run, from the environment GitHub's
// runner gives a step (go-githubactions' context, plus the variables it does not read).
// Outside Actions most fields are empty; ServerURL and APIURL then default to
// github.com's.
type Context struct {
	// InActions is true under GitHub Actions (GITHUB_ACTIONS=true).
	InActions bool
	ServerURL string // GITHUB_SERVER_URL, https://github.com
	APIURL    string // GITHUB_API_URL, https://api.github.com
	// Repository is the repository the workflow runs in, owner/repo.
	Repository  string
	RunID       string // GITHUB_RUN_ID
	RunAttempt  string // GITHUB_RUN_ATTEMPT
	RunNumber   string // GITHUB_RUN_NUMBER
	Workflow    string // GITHUB_WORKFLOW, the workflow's name
	WorkflowRef string // GITHUB_WORKFLOW_REF, owner/repo/.github/workflows/F@refs/heads/B
	EventName   string // GITHUB_EVENT_NAME, workflow_dispatch
	Actor       string // GITHUB_ACTOR
	Ref         string // GITHUB_REF
	SHA         string // GITHUB_SHA
	Job         string // GITHUB_JOB
	RunnerName  string // RUNNER_NAME
	RunnerOS    string // RUNNER_OS
	RunnerArch  string // RUNNER_ARCH
	// RunnerTemp is RUNNER_TEMP, emptied by the runner at the end of each job.
	RunnerTemp string
}

// ReadContext reads the run's context from a's environment.
func ReadContext(a *githubactions.Action) (Context, error) {
	gc, err := a.Context()
	if err != nil {
		return Context{}, fmt.Errorf("failed to read the Actions context: %w", err)
	}
	num := func(n int64) string {
		if n == 0 {
			return ""
		}
		return strconv.FormatInt(n, 10)
	}
	return Context{
		InActions: gc.Actions, ServerURL: strings.TrimSuffix(gc.ServerURL, "/"), APIURL: strings.TrimSuffix(gc.APIURL, "/"),
		Repository: gc.Repository, RunID: num(gc.RunID), RunAttempt: num(gc.RunAttempt), RunNumber: num(gc.RunNumber),
		Workflow: gc.Workflow, WorkflowRef: a.Getenv("GITHUB_WORKFLOW_REF"), EventName: gc.EventName, Actor: gc.Actor,
		Ref: gc.Ref, SHA: gc.SHA, Job: gc.Job, RunnerName: a.Getenv("RUNNER_NAME"), RunnerOS: a.Getenv("RUNNER_OS"),
		RunnerArch: a.Getenv("RUNNER_ARCH"), RunnerTemp: a.Getenv("RUNNER_TEMP"),
	}, nil
}

// RunURL is the workflow run's page, or "" outside Actions.
func (c Context) RunURL() string {
	if c.ServerURL == "" || c.Repository == "" || c.RunID == "" {
		return ""
	}
	u := c.ServerURL + "/" + c.Repository + "/actions/runs/" + c.RunID
	if c.RunAttempt != "" && c.RunAttempt != "1" {
		u += "/attempts/" + c.RunAttempt
	}
	return u
}
