// Package demo is `bumper demo`: the whole product on one machine, on loopback. The
// GitHub emulator holds a sample repository (or the user's checkout), the App (serve's
// code, in this process) takes its webhooks, and the emulator's local runner runs each
// dispatched run with the real `bumper run` (firewall, microVM). The demo then acts as
// the people would, step by step, and says where to look at the result. It lives under
// cmd/bumper because it wires the emulator to the product, which only cmd/bumper may
// (internal/archtest).
package demo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"time"

	gogithub "github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/app"
	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/internal/repoconfig"
	"github.com/bumperdev/bumper/internal/scriptedmodel"
)

// Config is what `bumper demo`'s flags say.
type Config struct {
	// Out receives the run's files (evidence.json, evidence.md, verdict.json,
	// audit.jsonl, pr.diff) and the logs.
	Out string
	// RepoDir, when set, is the user's checkout the demo runs on, and IssueFile its task.
	RepoDir, IssueFile string
	// Agent is command, claude-code or codex; AgentCmd the user's program for the
	// command harness; ModelBaseURL a real model API for the CLIs (empty: the scripted
	// model server).
	Agent, AgentCmd, ModelBaseURL string
	// Keep leaves the servers up after the arc, until ctx ends.
	Keep bool
	// Listen is the emulator's address ("127.0.0.1:0": a free port).
	Listen string
	// Cache is the runner's image cache.
	Cache string
	// Binary is the bumper binary the local runner runs (and the VM's guest agent).
	Binary string
	// Stdout shows the steps; TTY makes them spinners.
	Stdout io.Writer
	TTY    bool
	// Getenv reads the environment (the model keys).
	Getenv func(string) string
	// EUID is the effective user id (root is needed).
	EUID int
	// RunTimeout caps each run.
	RunTimeout time.Duration
	// Ready, when set, learns where to look as soon as the arc is done, while the
	// servers are still up: with Keep, a browser (the demo's browser test) can open the
	// pull request page then, and end the demo by ending ctx.
	Ready func(Result)
}

// ErrBadFlags marks a refusal of the flags themselves (a usage error).
var ErrBadFlags = errors.New("bad flags")

// flagError is a refusal of the flags: it reads as its reason and is ErrBadFlags.
type flagError struct{ err error }

func (e flagError) Error() string        { return e.err.Error() }
func (e flagError) Unwrap() error        { return e.err }
func (e flagError) Is(target error) bool { return target == ErrBadFlags }

// StepError is a failed step: which one, why, and the log that explains it.
type StepError struct {
	Step string
	Err  error
	// Log is the end of the log that explains it (the run's job log, serve's log).
	Log string
}

func (e *StepError) Error() string {
	if errors.Is(e.Err, ErrBadFlags) {
		return e.Err.Error()
	}
	return fmt.Sprintf("step %q failed: %v", e.Step, e.Err)
}
func (e *StepError) Unwrap() error { return e.Err }

// Result is where a finished demo left things.
type Result struct {
	PullURL string
	Files   []string
	// Thread is the maintainer's review thread the conversation round answered; 0
	// without a round.
	Thread int64
}

// demo is one run of the arc.
type demo struct {
	cfg      Config
	p        *progress
	work     string
	logs     string
	e        *ghemu.Emulator
	srv      *app.Server
	serveURL string
	owner    string
	repo     string
	issue    Issue
	model    *scriptedmodel.Server
	closers  []func()
	// pending are the notes of the step running, printed under it when it ends.
	pending []string
	// implRun and reviewRun are the runs the arc waits for; pull the pull request.
	implRun, reviewRun *ghemu.RunInfo
	// conv is the conversation round, once the maintainer reviewed.
	conv    *conversation
	pull    *gogithub.PullRequest
	pullURL string
	// current is the run being waited for, whose log explains a failure.
	current *ghemu.RunInfo
	// serveLn is serve's listener, reserved before the emulator starts; sctx carries
	// serve's logger.
	serveLn net.Listener
	sctx    context.Context
	// runsOut holds each run's output directory, by run id.
	runsOut  string
	issueNum int
	// reviewerOff is the repository's `reviewer: false`; userHarness the harness of
	// the user's repository (--repo).
	reviewerOff bool
	userHarness string
	start       time.Time
}

// report says where to look.
func (d *demo) report(files []string) {
	w := d.cfg.Stdout
	fmt.Fprintf(w, "\nThe whole arc worked, in %s.\n", time.Since(d.start).Round(time.Second))
	if d.conv != nil {
		for _, l := range d.conv.summary() {
			fmt.Fprintln(w, l)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "The pull request page: %s\n", d.pullURL)
	if d.cfg.Keep {
		fmt.Fprintf(w, "  (the web view: issues, the pull request's evidence, checks, review and diff, the workflow runs)\n")
	} else {
		fmt.Fprintf(w, "  (served while the demo runs: run it with --keep to browse it; a copy is in %s)\n", filepath.Join(d.cfg.Out, "pull-request.html"))
	}
	fmt.Fprintf(w, "\nThe run's files, in %s:\n", d.cfg.Out)
	for _, f := range files {
		fmt.Fprintf(w, "  %s\n", filepath.Base(f))
	}
	runs := "implement/, review/"
	if d.conv != nil {
		runs += ", and the round's revise/ and review-2/"
	}
	fmt.Fprintf(w, "  runs/    every file of each run (the agent's transcript, the verification's output): %s\n", runs)
	fmt.Fprintf(w, "  logs/    the emulator's, serve's and the runs' job logs\n")
}

// keepNote says, with --keep, where the emulator stays up and who can carry on the
// conversation there: the local users and their tokens, for the web view's sign-in,
// the REST API and git.
func keepNote(w io.Writer, base string, users []ghemu.UserInfo) {
	fmt.Fprintf(w, "\nThe emulator and serve stay up (--keep): %s; Ctrl-C stops them.\n", base)
	fmt.Fprintf(w, "Carry on the conversation in a browser: sign in at %s/login as one of the emulator's users, with\n", base)
	fmt.Fprintf(w, "their token as the password, to comment, review with inline comments and merge (from this machine only).\n")
	for _, u := range users {
		fmt.Fprintf(w, "  user %-12s token %s\n", u.Login, u.Token)
	}
	fmt.Fprintf(w, "The same tokens work with the REST API (Authorization: token TOKEN, at %s/) and git (x-access-token:TOKEN).\n", base)
}

// randomHex is n random bytes in hex: secrets that live as long as the demo.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Run walks the arc. It returns a *StepError when a step fails.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := checkFlags(&cfg, cfg.Getenv); err != nil {
		return nil, &StepError{Step: "check the flags", Err: flagError{err}}
	}
	if err := checkHost(cfg.Binary, cfg.EUID); err != nil {
		return nil, &StepError{Step: "check this machine", Err: err}
	}
	d := &demo{cfg: cfg, p: &progress{w: cfg.Stdout, tty: cfg.TTY, now: time.Now}, owner: ghemu.DefaultOrg, repo: ghemu.DefaultRepo, start: time.Now()}
	defer d.close()
	var user *userRepo
	if cfg.RepoDir != "" {
		u, err := inspectRepo(ctx, cfg.RepoDir)
		if err != nil {
			return nil, &StepError{Step: "check --repo", Err: err}
		}
		if u.policy.Harness.Name != repoconfig.HarnessCommand && cfg.ModelBaseURL == "" {
			return nil, &StepError{Step: "check --repo", Err: fmt.Errorf("%s runs %s, which needs a model: give --model-base-url URL and the key in %s", policyPath, u.policy.Harness.Name, keyVar(u.policy.Harness.Name))}
		}
		if cfg.ModelBaseURL != "" && cfg.Getenv(keyVar(u.policy.Harness.Name)) == "" {
			return nil, &StepError{Step: "check --repo", Err: fmt.Errorf("--model-base-url needs the API key in %s", keyVar(u.policy.Harness.Name))}
		}
		if d.issue, err = ReadIssue(cfg.IssueFile); err != nil {
			return nil, &StepError{Step: "check --issue", Err: err}
		}
		user, d.repo, d.userHarness, d.reviewerOff = u, u.name, u.policy.Harness.Name, !u.policy.ReviewerOn()
	} else {
		d.issue = sampleIssue()
	}
	if err := d.prepareOut(); err != nil {
		return nil, &StepError{Step: "prepare " + cfg.Out, Err: err}
	}
	type arcStep struct {
		title string
		do    func(context.Context, *step) (string, error)
	}
	steps := []arcStep{
		{"Start the GitHub emulator", func(ctx context.Context, s *step) (string, error) { return d.startEmulator(ctx, user) }},
		{"Start bumper serve (the App)", func(ctx context.Context, s *step) (string, error) { return d.startServe(ctx) }},
		{"The maintainer opens an issue and labels it agent:implement", d.openAndLabel},
		{"A reader comments /approve", d.readerApproves},
		{"The maintainer comments /approve", d.maintainerApproves},
		{"The run: firewall, microVM, agent, verification", d.implement},
		{"The pull request with its evidence", d.pullRequest},
		{"The review run: the reviewer's verdict", d.review},
	}
	skipped := d.conversationSkipped()
	if skipped == "" {
		steps = append(steps,
			arcStep{"The maintainer asks for a change in an inline comment", d.maintainerReviews},
			arcStep{"The revise round: a commit on the same branch and a reply in the thread", d.reviseRound},
			arcStep{"The review run on the round's head", d.reviewAgain})
	}
	for _, s := range steps {
		st := d.p.start(s.title)
		res, err := s.do(ctx, st)
		if err != nil {
			st.fail(err)
			// What the runs left is evidence of the failure too.
			if files, cerr := d.collect(); cerr == nil && len(files) > 0 {
				fmt.Fprintf(cfg.Stdout, "The runs' files so far are in %s.\n", cfg.Out)
			}
			return nil, &StepError{Step: s.title, Err: err, Log: d.explain()}
		}
		st.ok(res)
		d.p.note(d.pending...)
		d.pending = nil
	}
	if skipped != "" {
		fmt.Fprintf(cfg.Stdout, "No conversation round: %s.\n", skipped)
	}
	files, err := d.collect()
	if err != nil {
		return nil, &StepError{Step: "copy the run's files", Err: err}
	}
	d.report(files)
	res := &Result{PullURL: d.pullURL, Files: files}
	if d.conv != nil {
		res.Thread = d.conv.commentID
	}
	if cfg.Ready != nil {
		cfg.Ready(*res)
	}
	if cfg.Keep {
		keepNote(cfg.Stdout, d.e.BaseURL(), d.e.Users())
		<-ctx.Done()
	}
	return res, nil
}
