package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/harness"
	"github.com/bumperdev/bumper/action/workspace"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/firewall"
	"github.com/bumperdev/bumper/sandbox"
	"github.com/bumperdev/bumper/sandbox/netns"
)

// Sentinel is the model key the VM sees; the firewall's gateways put the real one in
// its place on the way out.
const Sentinel = "bumper-sentinel-key"

// guestGateway is where the guest reaches the firewall's gateways: the namespace's
// gateway address, whose proxy port the run's nftables rules send to the firewall.
var guestGateway = "http://" + net.JoinHostPort(sandbox.GuestGateway, strconv.Itoa(netns.ProxyPort))

// firewallConfig is the run's firewall: the repository's allowlist at the base commit,
// the git gateway for this one repository with the run's branch as the only ref it may
// push (none for a plan or review run; a fix run only moves its pull request's branch
// on from the head it started at), the GitHub API only where the repository opted in
// to reads, the model gateways, the run's cost cap; the token handed over in memory.
func (r *run) firewallConfig(listen string) *firewall.Config {
	c := &firewall.Config{
		Listen: listen, Audit: filepath.Join(r.cfg.Out, AuditFile), Allow: r.policy.Allowlist, Resolve: r.cfg.Resolve,
		Gateway: firewall.GatewayConfig{
			GitBase: r.cfg.ServerURL, Repository: r.repo, RepositoryID: r.cfg.RepositoryID, CAFile: r.cfg.CAFile,
			AnthropicBase: r.cfg.AnthropicBase, OpenAIBase: r.cfg.OpenAIBase,
		},
		Budget:  firewall.BudgetConfig{USD: r.policy.Bounds.CostPerRunUSD},
		Secrets: &firewall.Secrets{GitHubToken: r.grant.InstallationToken, AnthropicKey: r.cfg.AnthropicKey, OpenAIKey: r.cfg.OpenAIKey},
	}
	switch r.cfg.Stage {
	case wire.StageImplement, wire.StageFix:
		// The run's branch (checkGrant's), pushed by the runner alone: closed while the
		// agent runs.
		c.Gateway.PushRef, c.Gateway.PushClosed = "refs/heads/"+r.branch, true
		if r.cfg.Stage == wire.StageFix {
			c.Gateway.PushFrom = r.grant.HeadCommit
		}
	}
	if len(r.policy.GitHubAPI) > 0 {
		c.Gateway.GitHubAPIBase, c.Gateway.APIAllow = r.cfg.APIURL, r.policy.GitHubAPI
	}
	return c
}

// startFirewall opens the run's sandbox session: its network namespace and, on the host
// end of it, the firewall. The VM boots later, once the workspace is ready.
func (r *run) startFirewall(ctx context.Context) (string, error) {
	vmcfg := r.cfg.VM
	vmcfg.Timeout = r.policy.Bounds.WallTime
	if vmcfg.Timeout <= 0 {
		vmcfg.Timeout = DefaultWallTime
	}
	// The installation token (an hour, GitHub's fixed lifetime) must outlive the VM by
	// what the push, the pull request and the revocation need.
	if exp := r.grant.TokenExpiresAt; !exp.IsZero() {
		if left := exp.Sub(r.cfg.Now()) - TokenMargin; left < vmcfg.Timeout {
			vmcfg.Timeout = max(left, time.Minute)
		}
	}
	r.wallTime = vmcfg.Timeout
	start := func(ctx context.Context, listen string) (func() error, error) {
		fw, err := firewall.New(r.firewallConfig(listen))
		if err != nil {
			return nil, err
		}
		if err := fw.Start(ctx); err != nil {
			return nil, err
		}
		r.fw = fw
		return func() error { return fw.Stop(context.WithoutCancel(ctx)) }, nil
	}
	vm, err := sandbox.Open(ctx, sandbox.SessionSpec{Config: vmcfg, StartProxy: start})
	if err != nil {
		return "", fmt.Errorf("failed to start the run's network and firewall: %w", err)
	}
	r.stopMu.Lock()
	r.vm = vm
	r.stopMu.Unlock()
	if reason := r.stopped(); reason != "" {
		// serve said stop while the session opened: the poller found no VM to kill.
		return "", fmt.Errorf("%w: %s", errStopped, reason)
	}
	c := r.firewallConfig(vm.ProxyAddr())
	return fmt.Sprintf("listening on %s; %d allowlist entries; push %s; GitHub API %s; budget %s; wall time %v",
		vm.ProxyAddr(), len(c.Allow), orNone(c.Gateway.PushRef), apiRules(c), budget(c.Budget.USD), r.wallTime.Round(time.Second)), nil
}

func orNone(s string) string {
	if s == "" {
		return "refused"
	}
	return s
}

func apiRules(c *firewall.Config) string {
	if c.Gateway.GitHubAPIBase == "" {
		return "none"
	}
	return strings.Join(c.Gateway.APIAllow, ", ")
}

func budget(usd float64) string {
	if usd <= 0 {
		return "metered, no cap"
	}
	return fmt.Sprintf("$%.2f", usd)
}

// prepareWorkspace fetches the approved base commit through the firewall's git gateway
// (so the fetch is in the run's audit log) and lays out the VM's workspace disk.
func (r *run) prepareWorkspace(ctx context.Context) (string, error) {
	files, err := r.task.Files()
	if err != nil {
		return "", err
	}
	files[wire.TaskMarkdown] = append(files[wire.TaskMarkdown], conventions(r.cfg.Stage)...)
	ws, err := workspace.Prepare(ctx, workspace.Options{
		GitURL: "http://" + r.vm.ProxyAddr() + "/git/" + r.repo + ".git", Base: r.grant.BaseCommit,
		Issue: r.issue, Attempt: r.cfg.Attempt, Branch: r.branch, Start: r.start(), Review: r.cfg.Stage == wire.StageReview,
		Task: files, Dir: r.cfg.WorkDir,
	})
	if err != nil {
		if errors.Is(err, workspace.ErrBranchMoved) {
			return "", failWith(evidence.OutcomeFailure, "%w", err)
		}
		return "", fmt.Errorf("failed to prepare the workspace: %w", err)
	}
	r.ws = ws
	if r.cfg.Stage == wire.StageReview {
		if err := r.reviewInputs(ctx); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("%.12s on %s", r.start(), ws.Branch), nil
}

// boot starts the VM on the prepared workspace.
func (r *run) boot(ctx context.Context) (string, error) {
	if err := r.vm.Start(ctx, r.ws.Dir); err != nil {
		return "", fmt.Errorf("failed to boot the VM: %w", err)
	}
	r.vmStarted = true
	// A first, empty command: a restored VM loads its state only when asked to run
	// something, and a snapshot that fails to load is found (and a cold boot made) only
	// then. Both belong to the boot, not to the agent's time.
	var out strings.Builder
	if st, err := r.exec(ctx, []string{"true"}, nil, &out, &out); err != nil || st.Code != 0 {
		return "", fmt.Errorf("the VM booted but cannot run a command (exit %d): %w %s", st.Code, err, cut(out.String(), 500))
	}
	rep := r.vm.Report()
	r.ev.Sandbox = &evidence.Sandbox{VMM: r.cfg.VMM, Accel: rep.Accel.Accel, AccelReason: rep.Accel.Reason,
		ImageDigest: r.imageDigest, VCPUs: r.cfg.VM.CPUs, MemoryMB: r.cfg.VM.MemoryMB,
		Boot: rep.Boot.Mode, BootReason: rep.Boot.Reason}
	return fmt.Sprintf("%s boot under %s (%s)", rep.Boot.Mode, rep.Accel.Accel, rep.Boot.Reason), nil
}

// session is the run's sandbox session, nil before it opened; the stop poller reads it
// from its own goroutine.
func (r *run) session() *sandbox.Session {
	r.stopMu.Lock()
	defer r.stopMu.Unlock()
	return r.vm
}

// exec runs one command in the VM, in the repository: the harness's and
// verification's way in.
func (r *run) exec(ctx context.Context, argv, env []string, stdout, stderr io.Writer) (harness.ExitStatus, error) {
	return r.execIn(workspace.GuestRepo)(ctx, argv, env, stdout, stderr)
}

// execIn runs commands in the VM in dir (the guest's default is the workspace disk's
// root): a review run's reviewer runs in the base commit's tree.
func (r *run) execIn(dir string) harness.Exec {
	return func(ctx context.Context, argv, env []string, stdout, stderr io.Writer) (harness.ExitStatus, error) {
		argv = append([]string{"sh", "-c", `cd "$0" && exec "$@"`, dir}, argv...)
		res, err := r.vm.Run(ctx, argv, env, stdout, stderr)
		r.last = sandbox.Result{}
		if res != nil {
			r.last = *res
		}
		if err != nil {
			if cause := context.Cause(ctx); cause != nil {
				if errors.Is(cause, context.DeadlineExceeded) {
					cause = failWith(evidence.OutcomeTimedOut, "the run's time ran out: the installation token must outlive the push by %v", TokenMargin)
				}
				return harness.ExitStatus{Code: -1, Error: cause.Error()}, cause
			}
			return harness.ExitStatus{Code: -1, Error: err.Error()}, err
		}
		st := harness.ExitStatus{Code: res.ExitCode, Signal: res.Signal, Error: res.Error, TimedOut: res.TimedOut}
		if res.TimedOut {
			return st, failWith(evidence.OutcomeTimedOut, "the run's wall time of %v ran out: %s", r.wallTime.Round(time.Second), res.Error)
		}
		return st, nil
	}
}

// closeVM shuts the VM down and stops the firewall, once; the audit log is then final.
func (r *run) closeVM(ctx context.Context) {
	r.closeOnce.Do(func() {
		if r.vm == nil {
			return
		}
		if err := r.vm.Close(context.WithoutCancel(ctx)); err != nil {
			zerolog.Ctx(ctx).Warn().Err(err).Msg("failed to shut the VM down cleanly")
		}
		r.vmClosed = true
	})
}

// agentEnv is what every agent round gets beyond the harness's own variables: the
// model gateways with the sentinel key, the git gateway, and no proxy for the gateway
// address (it is served directly, not forwarded).
func (r *run) agentEnv() []string {
	env := []string{
		"NO_PROXY=" + sandbox.GuestGateway, "no_proxy=" + sandbox.GuestGateway,
		"BUMPER_GIT_URL=" + guestGateway + "/git/" + r.repo + ".git",
		"BUMPER_BRANCH=" + r.branch,
		"BUMPER_BASE_COMMIT=" + r.grant.BaseCommit,
	}
	if r.pullStage() {
		env = append(env, "BUMPER_HEAD_COMMIT="+r.grant.HeadCommit, "BUMPER_PULL_REQUEST="+strconv.Itoa(r.grant.PullRequest))
	}
	if r.cfg.AnthropicBase != "" {
		env = append(env, "ANTHROPIC_BASE_URL="+guestGateway+"/anthropic", "ANTHROPIC_API_KEY="+Sentinel)
	}
	if r.cfg.OpenAIBase != "" {
		env = append(env, "OPENAI_BASE_URL="+guestGateway+"/openai/v1", "OPENAI_API_KEY="+Sentinel)
	}
	if len(r.policy.GitHubAPI) > 0 {
		env = append(env, "BUMPER_GITHUB_API_URL="+guestGateway+"/api/github")
	}
	return env
}
