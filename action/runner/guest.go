package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/action/credentials"
	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/harness"
	"github.com/bumperdev/bumper/action/workspace"
	"github.com/bumperdev/bumper/sandbox"
	"github.com/bumperdev/bumper/sandbox/netns"
)

// Sentinel is the model key the VM sees; the firewall's gateways put the real one in
// its place on the way out.
const Sentinel = "bumper-sentinel-key"

// guestGateway is where the guest reaches the firewall's gateways: the namespace's
// gateway address, whose proxy port the run's nftables rules send to the firewall.
var guestGateway = "http://" + net.JoinHostPort(sandbox.GuestGateway, strconv.Itoa(netns.ProxyPort))

// guest is the run's VM once it booted on the workspace: where the agent, verification
// and the runner's own commands run.
type guest struct {
	s  *session
	ws *workspace.Workspace
	// last is what the VM said of the last command beyond its exit status: why /out
	// could not come back, what processes the command left.
	last sandbox.Result
	// collected says /out came back (collectOut): it is read once.
	collected bool
}

// boot starts the VM on the prepared workspace.
func (r *run) boot(ctx context.Context, s *session, ws *workspace.Workspace) (*guest, string, error) {
	if err := s.Start(ctx, ws.Dir); err != nil {
		return nil, "", fmt.Errorf("failed to boot the VM: %w", err)
	}
	vm := &guest{s: s, ws: ws}
	// A first, empty command: a restored VM loads its state only when asked to run
	// something, and a snapshot that fails to load is found (and a cold boot made) only
	// then. Both belong to the boot, not to the agent's time.
	var out strings.Builder
	if st, err := vm.exec(ctx, []string{"true"}, nil, &out, &out); err != nil || st.Code != 0 {
		return vm, "", fmt.Errorf("the VM booted but cannot run a command (exit %d): %w %s", st.Code, err, cut(out.String(), 500))
	}
	rep := s.Report()
	r.rec.ev.Sandbox = &evidence.Sandbox{VMM: r.cfg.VMM, Accel: rep.Accel.Accel, AccelReason: rep.Accel.Reason,
		ImageDigest: s.image, VCPUs: r.cfg.VM.CPUs, MemoryMB: r.cfg.VM.MemoryMB,
		Boot: rep.Boot.Mode, BootReason: rep.Boot.Reason}
	return vm, fmt.Sprintf("%s boot under %s (%s)", rep.Boot.Mode, rep.Accel.Accel, rep.Boot.Reason), nil
}

// exec runs one command in the VM, in the repository: the harness's and
// verification's way in.
func (vm *guest) exec(ctx context.Context, argv, env []string, stdout, stderr io.Writer, in ...harness.Input) (harness.ExitStatus, error) {
	return vm.execIn(workspace.GuestRepo)(ctx, argv, env, stdout, stderr, in...)
}

// execIn runs commands in the VM in dir (the guest's default is the workspace disk's
// root): a review run's reviewer runs in the base commit's tree.
func (vm *guest) execIn(dir string) harness.Exec {
	return func(ctx context.Context, argv, env []string, stdout, stderr io.Writer, in ...harness.Input) (harness.ExitStatus, error) {
		inputs, err := sandboxInput(in)
		if err != nil {
			return harness.ExitStatus{Code: -1, Error: err.Error()}, err
		}
		argv = append([]string{"sh", "-c", `cd "$0" && exec "$@"`, dir}, argv...)
		res, err := vm.s.Run(ctx, argv, env, stdout, stderr, inputs...)
		vm.last = sandbox.Result{}
		if res != nil {
			vm.last = *res
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
			return st, failWith(evidence.OutcomeTimedOut, "the run's wall time of %v ran out: %s", vm.s.wallTime.Round(time.Second), res.Error)
		}
		return st, nil
	}
}

// sandboxInput is a harness's Input as the sandbox takes it: its Feed is the sandbox's
// Input, given to Ready before the command runs.
func sandboxInput(in []harness.Input) ([]*sandbox.Input, error) {
	switch {
	case len(in) == 0:
		return nil, nil
	case len(in) > 1:
		return nil, fmt.Errorf("a command takes one input, not %d", len(in))
	}
	h := in[0]
	cfg := sandbox.InputConfig{Stdin: h.Stdin, Steering: h.Steering}
	if h.Placed != nil {
		cfg.Placed = func(name string, at time.Time, err error) {
			if errors.Is(err, sandbox.ErrInputEnded) {
				err = harness.ErrCommandEnded
			}
			h.Placed(name, at, err)
		}
	}
	s := sandbox.NewInput(cfg)
	if h.Ready != nil {
		h.Ready(s)
	}
	return []*sandbox.Input{s}, nil
}

// collectOut copies the guest's /out to the workspace's out directory, and what the
// artifact keeps of it to the artifact, once: it does nothing when /out came back
// already.
func (vm *guest) collectOut(ctx context.Context, rec *recorder) error {
	if vm.collected {
		return nil
	}
	if vm.last.OutError != "" {
		// The guest wrote an empty archive instead: reading it would find no bundle, no
		// plan and no ledger, and say the agent did nothing.
		return failWith(evidence.OutcomeFailure, "the VM's /out did not come back: %s", cut(vm.last.OutError, 300))
	}
	rep, err := vm.s.CollectOut(vm.ws.OutDir)
	if err != nil {
		return fmt.Errorf("failed to read the VM's /out: %w", err)
	}
	vm.collected = true
	if rep.SkippedCount > 0 {
		zerolog.Ctx(ctx).Warn().Int(logKeyCount, rep.SkippedCount).Strs(logKeyReason, rep.Skipped).Msg("entries of the VM's /out refused (the first ones listed)")
	}
	data, err := readSmall(filepath.Join(vm.ws.OutDir, filepath.Base(evidence.DecisionsFile)), 1<<20)
	present := err == nil
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		rec.ev.Ledger = evidence.Ledger{Status: evidence.LedgerInvalid, Error: err.Error()}
		return nil
	}
	rec.ev.Ledger = evidence.NewLedger(data, present)
	if present {
		rec.keep(DecisionsFile, data)
	}
	return nil
}

// readSmall reads a regular file of at most limit bytes, never through a link: what the
// guest left is untrusted.
func readSmall(path string, limit int64) ([]byte, error) {
	info, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", filepath.Base(path))
	}
	if info.Size() > limit {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d allowed", filepath.Base(path), info.Size(), limit)
	}
	return os.ReadFile(path)
}

// agentEnv is what every agent round gets beyond the harness's own variables: the
// model gateways with the sentinel key, the git gateway, and no proxy for the gateway
// address (it is served directly, not forwarded).
func (r *run) agentEnv() []string {
	g := r.grant
	env := []string{
		"NO_PROXY=" + sandbox.GuestGateway, "no_proxy=" + sandbox.GuestGateway,
		"BUMPER_GIT_URL=" + guestGateway + "/git/" + r.cfg.WorkItem.Repository + ".git",
		"BUMPER_BRANCH=" + g.branch,
		"BUMPER_BASE_COMMIT=" + g.BaseCommit,
	}
	if r.pullStage() {
		env = append(env, "BUMPER_HEAD_COMMIT="+g.HeadCommit, "BUMPER_PULL_REQUEST="+strconv.Itoa(g.PullRequest))
	}
	if g.UpdateTo != "" {
		env = append(env, workspace.MergeEnvUpdateTo+"="+g.UpdateTo)
	}
	if r.cfg.AnthropicBase != "" {
		env = append(env, "ANTHROPIC_BASE_URL="+guestGateway+"/anthropic", "ANTHROPIC_API_KEY="+Sentinel)
	}
	if r.cfg.OpenAIBase != "" {
		env = append(env, "OPENAI_BASE_URL="+guestGateway+"/openai/v1", "OPENAI_API_KEY="+Sentinel)
	}
	if len(g.policy.GitHubAPI) > 0 {
		env = append(env, "BUMPER_GITHUB_API_URL="+guestGateway+"/api/github")
	}
	env = append(env, credentials.GuestEnv(g.creds)...)
	return append(env, dependencyEnv(r.cfg.ServerURL, g.Dependencies)...)
}
