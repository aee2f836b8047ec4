package runner

import (
	"context"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/firewall"
	"github.com/bumperdev/bumper/firewall/audit"
	"github.com/bumperdev/bumper/sandbox"
	"github.com/bumperdev/bumper/sandbox/image"
	"github.com/bumperdev/bumper/sandbox/slots"
)

// session is the run's sandbox session: its network namespace with the run's firewall
// on the host end, and the VM, which boots later on the workspace.
type session struct {
	*sandbox.Session
	fw *firewall.Firewall
	// wallTime is the VM session's limit: bounds.wall_time, within the token's life.
	wallTime time.Duration
	// image is the digest of the image the VM boots: the runner's, or the environment's.
	image string

	// own is the firewall's address as the VM reaches it, policyFile the base commit's
	// .github/bumper.yml (nil: none): what the denied hosts leave out and what their
	// suggested change edits (settle).
	own        string
	policyFile []byte

	// slot is the runner host's VM slot the run's VMs hold, once it has it: given
	// back when the session is down.
	slot *slots.Slot

	closeOnce sync.Once
	// settled says the evidence holds the firewall's final account (settle).
	settled bool
}

// firewallConfig is the run's firewall: the repository's allowlist at the base commit,
// the git gateway for this one repository with the run's branch as the only ref it may
// push (none for a plan or review run; a fix, revise or update run only moves its pull
// request's branch on from the head it started at), the GitHub API only where the repository opted in
// to reads, the model gateways, the run's cost cap; the token handed over in memory.
func (r *run) firewallConfig(listen string) *firewall.Config {
	cfg, g := r.cfg, r.grant
	c := &firewall.Config{
		Listen: listen, Audit: filepath.Join(cfg.Out, AuditFile), Allow: g.policy.Allowlist, Resolve: cfg.Resolve,
		Gateway: firewall.GatewayConfig{
			GitBase: cfg.ServerURL, Repository: cfg.WorkItem.Repository, RepositoryID: cfg.RepositoryID, CAFile: cfg.CAFile,
			AnthropicBase: cfg.AnthropicBase, OpenAIBase: cfg.OpenAIBase,
		},
		Budget:      firewall.BudgetConfig{USD: runBudget(g.policy.Bounds.CostPerRunUSD, g.BudgetMicroUSD)},
		Credentials: g.creds,
		Secrets:     &firewall.Secrets{GitHubToken: g.InstallationToken, AnthropicKey: cfg.AnthropicKey, OpenAIKey: cfg.OpenAIKey},
	}
	switch cfg.Stage {
	case wire.StageImplement, wire.StageFix, wire.StageRevise, wire.StageUpdate:
		// The run's branch (checkGrant's), pushed by the runner alone: closed while the
		// agent runs. A round on the pull request only moves it on from its head.
		c.Gateway.PushRef, c.Gateway.PushClosed = "refs/heads/"+g.branch, true
		if cfg.Stage != wire.StageImplement {
			c.Gateway.PushFrom = g.HeadCommit
		}
	}
	if len(g.policy.GitHubAPI) > 0 {
		c.Gateway.GitHubAPIBase, c.Gateway.APIAllow = cfg.APIURL, g.policy.GitHubAPI
	}
	if len(g.Dependencies) > 0 {
		c.Gateway.Dependencies, c.Secrets.DependencyToken = g.Dependencies, g.DependencyToken
	}
	return c
}

// openSession opens the run's sandbox session: its network namespace and, on the host
// end of it, the firewall. The VM boots later, once the workspace is ready.
func (r *run) openSession(ctx context.Context) (*session, string, error) {
	vmcfg := r.cfg.VM
	vmcfg.Timeout = r.grant.policy.Bounds.WallTime
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
	var fw *firewall.Firewall
	start := func(ctx context.Context, listen string) (func() error, error) {
		f, err := firewall.New(r.firewallConfig(listen))
		if err != nil {
			return nil, err
		}
		if err := f.Start(ctx); err != nil {
			return nil, err
		}
		fw = f
		return func() error { return f.Stop(context.WithoutCancel(ctx)) }, nil
	}
	vm, err := sandbox.Open(ctx, sandbox.SessionSpec{Config: vmcfg, StartProxy: start})
	if err != nil {
		return nil, "", fmt.Errorf("failed to start the run's network and firewall: %w", err)
	}
	s := &session{Session: vm, fw: fw, wallTime: vmcfg.Timeout, image: r.cfg.ImageDigest, own: vm.ProxyAddr(), policyFile: r.grant.policyFile}
	if reason := r.link.guard(vm); reason != "" {
		// serve said stop while the session opened: the poller found no VM to kill.
		return s, "", fmt.Errorf("%w: %s", errStopped, reason)
	}
	c := r.firewallConfig(vm.ProxyAddr())
	return s, fmt.Sprintf("listening on %s; %d allowlist entries; push %s; GitHub API %s; budget %s; wall time %v",
		vm.ProxyAddr(), len(c.Allow), orNone(c.Gateway.PushRef), apiRules(c), budget(c.Budget.USD), s.wallTime.Round(time.Second)), nil
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

// bootImage makes im the image the VM boots.
func (s *session) bootImage(im *image.Image) error {
	if err := s.UseImage(sandbox.ImageFiles(im)); err != nil {
		return err
	}
	s.image = im.Manifest().Digest
	return nil
}

// shutDown shuts the VM down and stops the firewall, once; the audit log is then final.
func (s *session) shutDown(ctx context.Context) {
	s.closeOnce.Do(func() {
		if err := s.Close(context.WithoutCancel(ctx)); err != nil {
			zerolog.Ctx(ctx).Warn().Err(err).Msg("failed to shut the VM down cleanly")
		}
		if err := s.slot.Release(); err != nil {
			zerolog.Ctx(ctx).Warn().Err(err).Msg("failed to give the VM slot back (it is freed when this process ends)")
		}
	})
}

// overBudget fails the run once the firewall refused a model call for want of budget.
func (s *session) overBudget() error {
	u, ok := s.fw.Usage()
	if !ok || u.Refused == 0 {
		return nil
	}
	return failWith(evidence.OutcomeOverBudget, "the run's model budget of $%.2f is spent ($%.4f metered over %d calls; %d refused)", u.BudgetUSD, u.SpentUSD, u.Calls, u.Refused)
}

// settle adds what the firewall and the VM know to the evidence once the session is
// down (shutDown): cost, egress, the audit head, how the VM booted. It is done once:
// nothing of it changes after that, and the audit log need not be read and verified
// again.
func (s *session) settle(ctx context.Context, ev *evidence.Evidence, out string) {
	if s.settled {
		return
	}
	if ev.Sandbox != nil {
		rep := s.Report()
		ev.Sandbox.Boot, ev.Sandbox.BootReason = rep.Boot.Mode, rep.Boot.Reason
	}
	if u, ok := s.fw.Usage(); ok {
		ev.Cost.MeteredMicroUSD = int64(math.Round(u.SpentUSD * 1e6))
		ev.Cost.MeteredCalls = int64(u.Calls)
		ev.Cost.Estimated, ev.Cost.EstimatedCalls = u.Estimated > 0, int64(u.Estimated)
		ev.Cost.BudgetMicroUSD = int64(math.Round(u.BudgetUSD * 1e6))
		if self := ev.Cost.SelfReportedMicroUSD; self != nil {
			ev.Cost.SelfReportedDisagrees = evidence.Disagree(*self, ev.Cost.MeteredMicroUSD)
		}
	}
	h, ok := s.fw.AuditHead()
	if !ok {
		return
	}
	ev.Audit = &evidence.Audit{Head: "sha256:" + h.Hash, Entries: int64(h.Lines)}
	entries, err := readAudit(filepath.Join(out, AuditFile), h.Hash)
	if err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("failed to read the audit log for the egress summary")
		return
	}
	ev.Egress = evidence.SummarizeEgress(entries)
	ev.Egress.Denials = evidence.SummarizeDenials(entries, append(ownAddrs(s.own), sandbox.GuestGateway), evidence.PolicyKeyAllowlist, s.policyFile)
	s.settled = true
}

// readAudit reads the firewall's audit log into what the egress summary needs, checking
// its chain up to head, the firewall's own last hash (the chain alone cannot tell that
// the last line was changed). The firewall has stopped when this runs, its log flushed.
func readAudit(path, head string) ([]evidence.AuditEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := audit.Verify(f, head); err != nil {
		return nil, fmt.Errorf("the run's audit log does not verify: %w", err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		return nil, err
	}
	return evidence.ReadAuditLines(f)
}

// ownAddrs are the forms the firewall's address takes in a target: host:port and host
// alone (a plain request to it without a port, or a CONNECT to another port of it).
func ownAddrs(addr string) []string {
	if addr == "" {
		return nil
	}
	out := []string{addr}
	if host, _, err := net.SplitHostPort(addr); err == nil {
		out = append(out, host)
	}
	return out
}

// runBudget is the run's model budget in dollars: the policy's bounds.cost_per_run_usd,
// lowered to what serve granted (what the work item's budget leaves, in millionths;
// 0 grants no cap of its own). 0 is no cap.
func runBudget(policyUSD float64, grantedMicro int64) float64 {
	if grantedMicro <= 0 {
		return policyUSD
	}
	granted := float64(grantedMicro) / 1e6
	if policyUSD <= 0 || granted < policyUSD {
		return granted
	}
	return policyUSD
}
