package demo

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	gogithub "github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/ghemu"
)

// settle waits until the emulator delivered every webhook and serve handled it, and what
// that caused, a few times over.
func (d *demo) settle(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, stateWait)
	defer cancel()
	for range 4 {
		if err := d.e.WaitWebhooks(ctx); err != nil {
			return fmt.Errorf("failed to wait for the webhooks: %w", err)
		}
		if err := d.srv.Drain(ctx); err != nil {
			return fmt.Errorf("failed to wait for serve: %w", err)
		}
	}
	return nil
}

// client is a person's GitHub client.
func (d *demo) client(login string) *gogithub.Client {
	c := gogithub.NewClient(nil).WithAuthToken(d.e.UserToken(login))
	c.BaseURL, _ = url.Parse(d.e.BaseURL() + "/")
	return c
}

// state is the issue's bumper:<state> label.
func (d *demo) state(ctx context.Context) (string, error) {
	labels, _, err := d.client(ghemu.DefaultMaintainer).Issues.ListLabelsByIssue(ctx, d.owner, d.repo, d.issueNum, nil)
	if err != nil {
		return "", fmt.Errorf("failed to read the issue's labels: %w", err)
	}
	for _, l := range labels {
		if strings.HasPrefix(l.GetName(), "bumper:") {
			return l.GetName(), nil
		}
	}
	return "", nil
}

// waitState waits until the issue's state label is want.
func (d *demo) waitState(ctx context.Context, want string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		got, err := d.state(ctx)
		if err != nil {
			return err
		}
		if got == want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the issue is %q after %v, not %s: %s", got, within, want, d.statusSummary(ctx))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// botComments are the App's comments on the issue: its status comment, and the others.
func (d *demo) botComments(ctx context.Context, n int) (status string, others []string, err error) {
	cs, _, err := d.client(ghemu.DefaultMaintainer).Issues.ListComments(ctx, d.owner, d.repo, n,
		&gogithub.IssueListCommentsOptions{ListOptions: gogithub.ListOptions{PerPage: 100}})
	if err != nil {
		return "", nil, fmt.Errorf("failed to read the comments of #%d: %w", n, err)
	}
	for _, c := range cs {
		if c.GetUser().GetLogin() != botLogin {
			continue
		}
		if ledger.IsStatusComment(c.GetBody()) {
			status = c.GetBody()
		} else {
			others = append(others, c.GetBody())
		}
	}
	return status, others, nil
}

// statusSummary is the human part of the status comment, on one line, for an error.
func (d *demo) statusSummary(ctx context.Context) string {
	status, _, err := d.botComments(ctx, d.issueNum)
	if err != nil || status == "" {
		return "no status comment"
	}
	return "the status comment says: " + strings.Join(excerpt(statusText(status), 3), " / ")
}

// statusText is the status comment's text for people: without its marker and the
// signed record that follows the summary.
func statusText(body string) string {
	body = strings.TrimPrefix(body, ledger.StatusMarker)
	text, _, _ := strings.Cut(body, ledger.RecordOpen)
	return text
}

// waitRun waits for a run to complete, showing the phase its job log is in, and wants
// it to succeed.
func (d *demo) waitRun(ctx context.Context, s *step, run *ghemu.RunInfo) error {
	d.current = run
	ctx, cancel := context.WithTimeout(ctx, d.cfg.RunTimeout+time.Minute)
	defer cancel()
	for {
		r, err := d.e.Run(d.owner, d.repo, run.ID)
		if err != nil {
			return fmt.Errorf("failed to read workflow run %d: %w", run.ID, err)
		}
		if r.Status == "completed" {
			*run = r
			if r.Conclusion != "success" {
				return fmt.Errorf("workflow run %d ended %s: %s", run.ID, r.Conclusion, d.lastError(run.ID))
			}
			return d.settle(ctx)
		}
		s.update(d.phase(run.ID))
		select {
		case <-ctx.Done():
			return fmt.Errorf("workflow run %d still %s: %w", run.ID, r.Status, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// phase is the last group the run's job log opened (the action's phases: inputs,
// environment, boot, agent, verification, publish), or "queued".
func (d *demo) phase(id int64) string {
	log, _ := d.e.RunLog(d.owner, d.repo, id)
	if p := lastGroup(string(log)); p != "" {
		return p
	}
	return "queued"
}

// lastError is the run's reason: bumper run's error, the log's first error line (the
// runner's "Process completed with exit code 1." comes after it).
func (d *demo) lastError(id int64) string {
	log, _ := d.e.RunLog(d.owner, d.repo, id)
	if e := firstError(string(log)); e != "" {
		return e
	}
	return "see its job log below"
}

// The job log as GitHub's runner writes it holds the job's own group and error commands
// as "##[group]title" and "##[error]message" at the start of a line. What the agent and
// the verification print is quoted (commands stopped), so their "::group::" stays text,
// and bumper breaks every "##[" it prints: only the job's own commands have these forms.
const (
	groupMark = "##[group]"
	errorMark = "##[error]"
)

// lastGroup is the title of the last group the job opened, "" if none.
func lastGroup(log string) string {
	lines := strings.Split(log, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if title, ok := strings.CutPrefix(lines[i], groupMark); ok {
			return strings.TrimSpace(title)
		}
	}
	return ""
}

// firstError is the message of the job's first error, "" if none.
func firstError(log string) string {
	for _, l := range strings.Split(log, "\n") {
		if msg, ok := strings.CutPrefix(l, errorMark); ok {
			return strings.TrimSpace(msg)
		}
	}
	return ""
}

// checks lists the check runs on the pull request's head: name and conclusion.
func (d *demo) checks(ctx context.Context) (string, error) {
	res, _, err := d.client(ghemu.DefaultMaintainer).Checks.ListCheckRunsForRef(ctx, d.owner, d.repo, d.pull.GetHead().GetSHA(), nil)
	if err != nil {
		return "", fmt.Errorf("failed to list the check runs: %w", err)
	}
	var out []string
	for _, c := range res.CheckRuns {
		out = append(out, c.GetName()+" "+orStatus(c.GetConclusion(), c.GetStatus()))
	}
	return strings.Join(out, ", "), nil
}

func orStatus(conclusion, status string) string {
	if conclusion != "" {
		return conclusion
	}
	return status
}
