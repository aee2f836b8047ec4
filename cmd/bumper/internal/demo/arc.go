package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	gogithub "github.com/google/go-github/v66/github"
	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/app"
	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/ghemu"
	"github.com/bumperdev/bumper/internal/scriptedmodel"
)

// The files a run leaves that the demo copies to Out, and where they come from.
var (
	implementFiles = []string{"evidence.json", "evidence.md", "audit.jsonl", "pr.diff"}
	reviewFiles    = []string{"verdict.json"}
)

const (
	labelTrigger = "agent:implement"
	botLogin     = ghemu.DefaultAppSlug + "[bot]"
	// stateWait bounds the wait for serve to answer a comment or a label.
	stateWait = time.Minute
	// reviewDispatchWait bounds the wait for the review run after the pull request.
	reviewDispatchWait = 2 * time.Minute
)

// prepareOut makes Out and its logs directory, and the demo's working directory.
func (d *demo) prepareOut() error {
	d.logs = filepath.Join(d.cfg.Out, "logs")
	if err := os.MkdirAll(d.logs, 0o755); err != nil {
		return fmt.Errorf("failed to create %s: %w", d.logs, err)
	}
	for _, f := range append(slices.Clone(implementFiles), append(reviewFiles, "pull-request.html")...) {
		// A file of an earlier demo must not pass for this one's.
		if err := os.Remove(filepath.Join(d.cfg.Out, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("failed to remove an earlier demo's %s: %w", f, err)
		}
	}
	work, err := os.MkdirTemp("", "bumper-demo-")
	if err != nil {
		return fmt.Errorf("failed to create the demo's working directory: %w", err)
	}
	d.work = work
	d.closers = append(d.closers, func() { _ = os.RemoveAll(work) })
	return nil
}

// close stops everything the demo started, last first.
func (d *demo) close() {
	for i := len(d.closers) - 1; i >= 0; i-- {
		d.closers[i]()
	}
}

// logFile opens a log in Out/logs, closed with the demo.
func (d *demo) logFile(name string) (*os.File, error) {
	f, err := os.Create(filepath.Join(d.logs, name))
	if err != nil {
		return nil, fmt.Errorf("failed to create the log %s: %w", name, err)
	}
	d.closers = append(d.closers, func() { _ = f.Close() })
	return f, nil
}

// startEmulator starts the GitHub emulator with the repository, its local runner
// running `bumper run` for each dispatched run, and reserves serve's address (the
// runner's environment names it).
func (d *demo) startEmulator(ctx context.Context, user *userRepo) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("failed to listen for serve on loopback: %w", err)
	}
	d.serveLn = ln
	d.serveURL = "http://" + ln.Addr().String()
	env, err := d.runnerEnv()
	if err != nil {
		return "", err
	}
	var seed *ghemu.Seed
	if user != nil {
		seed = user.seed()
	} else {
		files, err := sampleFiles()
		if err != nil {
			return "", err
		}
		if files[policyPath], err = agentPolicy(files[policyPath], d.cfg.Agent, d.cfg.AgentCmd, d.cfg.ModelBaseURL == ""); err != nil {
			return "", err
		}
		seed = sampleSeed(files)
	}
	logf, err := d.logFile("emulator.log")
	if err != nil {
		return "", err
	}
	out := filepath.Join(d.work, "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", fmt.Errorf("failed to create the runs' output directory: %w", err)
	}
	d.runsOut = out
	runner := &ghemu.Runner{
		// As the action's step would: each run's files in a directory of its own, which
		// outlives the job's temporary directory, for the demo to copy.
		Command: []string{"sh", "-c", `INPUT_OUT="$0/$GITHUB_RUN_ID" exec "$1" run`, out, d.cfg.Binary},
		WorkDir: filepath.Join(d.work, "runner"),
		Timeout: d.cfg.RunTimeout,
		Env:     env,
	}
	e, err := ghemu.New(ghemu.Options{StateDir: filepath.Join(d.work, "emulator"), Seed: seed, Runner: runner,
		Logger: zerolog.New(logf).With().Timestamp().Logger()})
	if err != nil {
		return "", fmt.Errorf("failed to create the emulator: %w", err)
	}
	d.closers = append(d.closers, func() { _ = e.Close() })
	if err := e.Start(ctx, d.cfg.Listen); err != nil {
		return "", err
	}
	d.e = e
	if user != nil {
		if err := user.push(ctx, e, d.work); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("%s with %s/%s (a maintainer with write permission, a reader with read)", e.BaseURL(), d.owner, d.repo), nil
}

// runnerEnv is the runner host's settings for `bumper run`: serve's address, the image
// cache, TCG allowed (this may be a machine without KVM), and the model API when the
// agent is a CLI. The key goes to the runner's environment only: `bumper run` hands it
// to the firewall and takes it out of its own environment before QEMU starts.
func (d *demo) runnerEnv() ([]string, error) {
	env := []string{"INPUT_URL=" + d.serveURL, "INPUT_CACHE=" + d.cfg.Cache, "INPUT_ALLOW_TCG=true", "INPUT_MEMORY=1G", "INPUT_CPUS=2"}
	agent := d.cfg.Agent
	if d.cfg.RepoDir != "" {
		agent = d.userHarness
	}
	// A model key in the user's environment reaches a run only when the user asked for
	// that model (--model-base-url): the runner would otherwise inherit it.
	for _, a := range []string{AgentClaudeCode, AgentCodex} {
		if d.cfg.ModelBaseURL == "" || a != agent {
			env = append(env, keyVar(a)+"=")
		}
	}
	switch {
	case d.cfg.ModelBaseURL != "":
		env = append(env, baseVar(agent)+"="+d.cfg.ModelBaseURL)
	case agent == AgentClaudeCode || agent == AgentCodex:
		key := "sk-demo-" + randomHex(16)
		m, err := scriptedmodel.Start(modelScript(), scriptedmodel.Options{Key: key})
		if err != nil {
			return nil, err
		}
		d.model = m
		d.closers = append(d.closers, func() { _ = m.Close() })
		env = setEnv(env, baseVar(agent), m.URL())
		env = setEnv(env, keyVar(agent), key)
	}
	return env, nil
}

// setEnv sets key to value in env, replacing an entry it has.
func setEnv(env []string, key, value string) []string {
	for i, kv := range env {
		if strings.HasPrefix(kv, key+"=") {
			env[i] = key + "=" + value
			return env
		}
	}
	return append(env, key+"="+value)
}

// startServe starts the App on the reserved address, pointed at the emulator, and has
// the emulator deliver the App's webhooks to it.
func (d *demo) startServe(ctx context.Context) (string, error) {
	logf, err := d.logFile("serve.log")
	if err != nil {
		return "", err
	}
	cfg := app.DefaultConfig()
	cfg.GitHub.WebURL = d.e.BaseURL()
	cfg.GitHub.V3APIURL = d.e.BaseURL() + "/"
	cfg.GitHub.App.IntegrationID = d.e.AppID()
	cfg.GitHub.App.PrivateKey = string(d.e.AppKeyPEM())
	cfg.GitHub.App.WebhookSecret = d.e.WebhookSecret()
	cfg.Bumper.OIDCIssuer = d.e.OIDCIssuerURL()
	cfg.Bumper.RunTokenKey = randomHex(32)
	cfg.Server.Address = d.serveLn.Addr().String()
	d.sctx = zerolog.New(logf).Level(zerolog.InfoLevel).With().Timestamp().Logger().WithContext(ctx)
	srv, err := app.New(d.sctx, cfg, app.Options{})
	if err != nil {
		return "", fmt.Errorf("failed to start serve: %w", err)
	}
	d.srv = srv
	// The emulator learns serve's address only now, so no webhook arrives before serve
	// can take it.
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(d.serveLn) }()
	d.closers = append(d.closers, func() { _ = hs.Close() })
	d.e.SetWebhookURL(d.serveURL + cfg.Server.WebhookPath)
	if _, err := srv.Rebuild(d.sctx); err != nil {
		return "", fmt.Errorf("serve failed to read the work items from GitHub: %w", err)
	}
	return d.serveURL + " (webhooks at " + cfg.Server.WebhookPath + ")", nil
}

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

func (d *demo) openAndLabel(ctx context.Context, s *step) (string, error) {
	c := d.client(ghemu.DefaultMaintainer)
	is, _, err := c.Issues.Create(ctx, d.owner, d.repo, &gogithub.IssueRequest{Title: &d.issue.Title, Body: &d.issue.Body})
	if err != nil {
		return "", fmt.Errorf("failed to open the issue: %w", err)
	}
	d.issueNum = is.GetNumber()
	if _, _, err := c.Issues.AddLabelsToIssue(ctx, d.owner, d.repo, d.issueNum, []string{labelTrigger}); err != nil {
		return "", fmt.Errorf("failed to label the issue: %w", err)
	}
	if err := d.settle(ctx); err != nil {
		return "", err
	}
	if err := d.waitState(ctx, "bumper:"+string(ledger.AwaitingApproval), stateWait); err != nil {
		return "", err
	}
	status, _, err := d.botComments(ctx, d.issueNum)
	if err != nil {
		return "", err
	}
	d.pending = append([]string{"Bumper's status comment:"}, indent(excerpt(statusText(status), 4))...)
	return fmt.Sprintf("issue #%d %q is bumper:awaiting-approval", d.issueNum, d.issue.Title), nil
}

func (d *demo) readerApproves(ctx context.Context, s *step) (string, error) {
	_, before, err := d.botComments(ctx, d.issueNum)
	if err != nil {
		return "", err
	}
	body := "/approve"
	if _, _, err := d.client(ghemu.DefaultReader).Issues.CreateComment(ctx, d.owner, d.repo, d.issueNum, &gogithub.IssueComment{Body: &body}); err != nil {
		return "", fmt.Errorf("failed to comment as the reader: %w", err)
	}
	if err := d.settle(ctx); err != nil {
		return "", err
	}
	_, after, err := d.botComments(ctx, d.issueNum)
	if err != nil {
		return "", err
	}
	if len(after) <= len(before) {
		return "", errors.New("the App did not answer the reader's /approve")
	}
	st, err := d.state(ctx)
	if err != nil {
		return "", err
	}
	if st != "bumper:"+string(ledger.AwaitingApproval) {
		return "", fmt.Errorf("after the reader's /approve the issue is %q, want it still awaiting approval", st)
	}
	runs, err := d.e.Runs(d.owner, d.repo)
	if err != nil {
		return "", fmt.Errorf("failed to list the workflow runs: %w", err)
	}
	if len(runs) != 0 {
		return "", fmt.Errorf("the reader's /approve dispatched %d runs, want none", len(runs))
	}
	d.pending = append([]string{"Bumper's reply:"}, indent(excerpt(after[len(after)-1], 2))...)
	return "refused (read permission); nothing dispatched", nil
}

func (d *demo) maintainerApproves(ctx context.Context, s *step) (string, error) {
	body := "/approve"
	if _, _, err := d.client(ghemu.DefaultMaintainer).Issues.CreateComment(ctx, d.owner, d.repo, d.issueNum, &gogithub.IssueComment{Body: &body}); err != nil {
		return "", fmt.Errorf("failed to comment as the maintainer: %w", err)
	}
	if err := d.settle(ctx); err != nil {
		return "", err
	}
	runs, err := d.e.Runs(d.owner, d.repo)
	if err != nil {
		return "", fmt.Errorf("failed to list the workflow runs: %w", err)
	}
	if len(runs) != 1 {
		return "", fmt.Errorf("%d workflow runs after the maintainer's /approve, want 1: %s", len(runs), d.statusSummary(ctx))
	}
	d.implRun = &runs[0]
	return fmt.Sprintf("workflow run %d dispatched (%s, stage %s)", runs[0].ID, runs[0].WorkflowPath, runs[0].Inputs["stage"]), nil
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
// environment, boot, agent, verification, publish).
func (d *demo) phase(id int64) string {
	log, _ := d.e.RunLog(d.owner, d.repo, id)
	lines := strings.Split(string(log), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if _, g, ok := strings.Cut(lines[i], "::group::"); ok {
			return strings.TrimSpace(g)
		}
	}
	return "queued"
}

// lastError is the run's ::error:: line, its reason.
func (d *demo) lastError(id int64) string {
	log, _ := d.e.RunLog(d.owner, d.repo, id)
	lines := strings.Split(string(log), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if _, e, ok := strings.Cut(lines[i], "::error::"); ok {
			return strings.TrimSpace(e)
		}
	}
	return "see its job log below"
}

func (d *demo) implement(ctx context.Context, s *step) (string, error) {
	start := time.Now()
	if err := d.waitRun(ctx, s, d.implRun); err != nil {
		return "", err
	}
	return fmt.Sprintf("workflow run %d succeeded in %s", d.implRun.ID, time.Since(start).Round(time.Second)), nil
}

func (d *demo) pullRequest(ctx context.Context, s *step) (string, error) {
	c := d.client(ghemu.DefaultMaintainer)
	prs, _, err := c.PullRequests.List(ctx, d.owner, d.repo, &gogithub.PullRequestListOptions{State: "open"})
	if err != nil {
		return "", fmt.Errorf("failed to list the pull requests: %w", err)
	}
	if len(prs) != 1 {
		return "", fmt.Errorf("%d open pull requests after the run, want 1: %s", len(prs), d.statusSummary(ctx))
	}
	d.pull = prs[0]
	d.pullURL = prs[0].GetHTMLURL()
	files, _, err := c.PullRequests.ListFiles(ctx, d.owner, d.repo, d.pull.GetNumber(), nil)
	if err != nil {
		return "", fmt.Errorf("failed to list the pull request's files: %w", err)
	}
	var changed []string
	for _, f := range files {
		changed = append(changed, fmt.Sprintf("%s (+%d -%d)", f.GetFilename(), f.GetAdditions(), f.GetDeletions()))
	}
	d.pending = []string{
		fmt.Sprintf("%s → %s, by %s: %s", d.pull.GetHead().GetRef(), d.pull.GetBase().GetRef(), d.pull.GetUser().GetLogin(), strings.Join(changed, ", ")),
	}
	if checks, err := d.checks(ctx); err == nil && checks != "" {
		d.pending = append(d.pending, "checks: "+checks)
	}
	return fmt.Sprintf("#%d %q", d.pull.GetNumber(), d.pull.GetTitle()), nil
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

func (d *demo) review(ctx context.Context, s *step) (string, error) {
	if d.reviewerOff {
		return "the reviewer is off in " + policyPath + " (reviewer: false)", nil
	}
	deadline := time.Now().Add(reviewDispatchWait)
	for d.reviewRun == nil {
		runs, err := d.e.Runs(d.owner, d.repo)
		if err != nil {
			return "", fmt.Errorf("failed to list the workflow runs: %w", err)
		}
		for i := range runs {
			if runs[i].Inputs["stage"] == string(wire.StageReview) {
				d.reviewRun = &runs[i]
			}
		}
		if d.reviewRun != nil {
			break
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no review run was dispatched within %v of the pull request: %s", reviewDispatchWait, d.statusSummary(ctx))
		}
		s.update("waiting for serve to dispatch the review run")
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	if err := d.waitRun(ctx, s, d.reviewRun); err != nil {
		return "", err
	}
	c := d.client(ghemu.DefaultMaintainer)
	reviews, _, err := c.PullRequests.ListReviews(ctx, d.owner, d.repo, d.pull.GetNumber(), nil)
	if err != nil {
		return "", fmt.Errorf("failed to list the pull request's reviews: %w", err)
	}
	var review *gogithub.PullRequestReview
	for _, r := range reviews {
		if r.GetUser().GetLogin() == botLogin {
			review = r
		}
	}
	if review == nil {
		return "", fmt.Errorf("the review run succeeded but no review by %s is on #%d: %s", botLogin, d.pull.GetNumber(), d.statusSummary(ctx))
	}
	checks, err := d.checks(ctx)
	if err != nil {
		return "", err
	}
	if !strings.Contains(checks, "bumper/verdict ") {
		return "", fmt.Errorf("no bumper/verdict check run on the pull request's head (its checks: %s)", checks)
	}
	d.pending = append([]string{"the review (" + review.GetState() + "):"}, indent(excerpt(review.GetBody(), 3))...)
	d.pending = append(d.pending, "checks: "+checks)
	return fmt.Sprintf("workflow run %d: a %s review on #%d", d.reviewRun.ID, review.GetState(), d.pull.GetNumber()), nil
}

// collect copies the runs' files to Out: the implementing run's evidence, audit log and
// diff, the review's verdict, every file of both runs under runs/, the job logs, and the
// pull request's page as the web view serves it.
func (d *demo) collect() ([]string, error) {
	var files []string
	copyRun := func(run *ghemu.RunInfo, top []string, name string) error {
		if run == nil {
			return nil
		}
		src := filepath.Join(d.runsOut, strconv.FormatInt(run.ID, 10))
		dst := filepath.Join(d.cfg.Out, "runs", name)
		if err := os.RemoveAll(dst); err != nil {
			return fmt.Errorf("failed to clear %s: %w", dst, err)
		}
		if _, err := os.Stat(src); errors.Is(err, os.ErrNotExist) {
			return nil // the run never started
		}
		if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
			return fmt.Errorf("failed to copy run %d's files: %w", run.ID, err)
		}
		for _, f := range top {
			if _, err := os.Stat(filepath.Join(src, f)); err != nil && run.Conclusion != "success" {
				continue // a failed run may have stopped before writing it
			}
			if err := copyFile(filepath.Join(src, f), filepath.Join(d.cfg.Out, f)); err != nil {
				return err
			}
			files = append(files, filepath.Join(d.cfg.Out, f))
		}
		if log, err := d.e.RunLog(d.owner, d.repo, run.ID); err == nil {
			_ = os.WriteFile(filepath.Join(d.logs, name+"-job.log"), log, 0o644)
		}
		return nil
	}
	if err := copyRun(d.implRun, implementFiles, "implement"); err != nil {
		return nil, err
	}
	if err := copyRun(d.reviewRun, reviewFiles, "review"); err != nil {
		return nil, err
	}
	if page, err := fetch(d.pullURL); d.pullURL != "" && err == nil {
		p := filepath.Join(d.cfg.Out, "pull-request.html")
		if err := os.WriteFile(p, page, 0o644); err == nil {
			files = append(files, p)
		}
	}
	return files, nil
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("failed to read the run's %s: %w", filepath.Base(src), err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		return fmt.Errorf("failed to write %s: %w", dst, err)
	}
	return nil
}

func fetch(u string) ([]byte, error) {
	resp, err := http.Get(u) //nolint:gosec,noctx // the emulator's own page, on loopback
	if err != nil {
		return nil, fmt.Errorf("failed to fetch %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("failed to fetch %s: %s", u, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// explain is what a failed step's reader needs: the end of the job log of the run the
// demo was waiting for, and the end of serve's log.
func (d *demo) explain() string {
	var b strings.Builder
	if d.e != nil && d.current != nil {
		log, _ := d.e.RunLog(d.owner, d.repo, d.current.ID)
		fmt.Fprintf(&b, "The end of workflow run %d's job log (all of it: %s):\n%s\n", d.current.ID,
			filepath.Join(d.logs, "failed-job.log"), tail(string(log), 40))
		_ = os.WriteFile(filepath.Join(d.logs, "failed-job.log"), log, 0o644)
	}
	if log, err := os.ReadFile(filepath.Join(d.logs, "serve.log")); err == nil && len(log) > 0 {
		fmt.Fprintf(&b, "serve's warnings and errors (all of its log: %s):\n%s\n", filepath.Join(d.logs, "serve.log"), tail(problems(string(log)), 15))
	}
	return b.String()
}

// problems are the warning and error lines of a zerolog JSON log.
func problems(log string) string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, `"level":"warn"`) || strings.Contains(l, `"level":"error"`) {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		return "(none)"
	}
	return strings.Join(out, "\n")
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func indent(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = "  " + l
	}
	return out
}
