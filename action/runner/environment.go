package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bumperdev/bumper/action/envbuild"
	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/harness"
	"github.com/bumperdev/bumper/action/workspace"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/environment"
	"github.com/bumperdev/bumper/internal/repoconfig"
	"github.com/bumperdev/bumper/sandbox/image"
	"github.com/rs/zerolog"
)

// buildEnvironment makes the image the run's VM boots when the policy needs more than
// the runner's default image: the harness's CLI at its pinned release, and the
// repository's environment. It finds the repository's environment in the runner's image cache, or
// builds it (the setup in a VM of its own, behind a firewall of its own that allows
// only environment.allow, with no GitHub token and no model key), and makes it the
// image the run's VM boots. The key is read from the base commit's objects in the
// workspace, so it covers exactly what was approved, and scoped to the repository, so
// no other repository's setup made the image; the setup runs on a copy of that
// checkout. A setup that fails fails the run, and nothing is cached.
func (r *run) buildEnvironment(ctx context.Context, s *session, ws *workspace.Workspace) (string, error) {
	env := r.grant.policy.Environment
	if r.cfg.Environments.CacheDir == "" {
		return "", fmt.Errorf("%s at the base commit declares %s, but this runner was given a prebuilt image (the action's image input), and such images are built from the image cache: leave the image input empty so the runner builds its images", repoconfig.Path, r.imageNeeds())
	}
	bc := r.cfg.Environments
	if cli, ok := harness.DefaultCLI(r.harnessPolicy().Name); ok {
		// The pin is checked before anything is built for it.
		if _, err := harness.New(r.harnessPolicy()); err != nil {
			return "", failWith(evidence.OutcomeError, "failed to set up the harness: %w", err)
		}
		bc.Harness = &image.Harness{Name: cli.Harness, Version: r.harnessPolicy().Version}
	}
	if env == nil {
		return harnessImage(ctx, s, bc)
	}
	return r.environmentImage(ctx, s, ws, env, bc)
}

// environmentImage finds or builds the repository's environment env from the base image
// bc (envbuild.Build) and makes it the image the session's VM boots; the evidence says
// what it found or built, and where the setup's output and decisions are.
func (r *run) environmentImage(ctx context.Context, s *session, ws *workspace.Workspace, env *repoconfig.Environment, bc image.BuildConfig) (string, error) {
	start := r.cfg.Now()
	logPath := filepath.Join(r.rec.out, EnvironmentLogFile)
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o640)
	if err != nil {
		return "", fmt.Errorf("failed to create the environment's log: %w", err)
	}
	vm := r.cfg.VM
	vm.SnapshotDir, vm.WorkspaceDir = "", ""
	// The setup shares the run's time: what it takes, the agent does not get.
	vm.Timeout = envbuild.DefaultSetupTimeout
	if d, ok := ctx.Deadline(); ok {
		vm.Timeout = max(min(vm.Timeout, time.Until(d)), time.Minute)
	}
	setupLog := r.rec.logTo(logFile, EnvironmentLogFile)
	res, err := envbuild.Build(ctx, envbuild.Options{
		RepoDir: ws.RepoDir, Tree: environment.GitTree{Repo: ws.RepoDir, Commit: r.grant.BaseCommit}, Repository: r.cfg.WorkItem.Repository,
		Env: *env, Image: bc, VM: vm, Resolve: r.cfg.Resolve, CAFile: r.cfg.CAFile, Credentials: r.grant.creds,
		Audit: filepath.Join(r.rec.out, EnvironmentAuditFile),
		Log:   setupLog,
	})
	err = errors.Join(err, setupLog.Close(), logFile.Close())
	ev := &evidence.Environment{Packages: env.Packages, Setup: env.Setup, DurationMS: r.cfg.Now().Sub(start).Milliseconds()}
	if res != nil {
		ev.ID, ev.BaseImageDigest, ev.Built, ev.SetupMS = res.Key.Digest, res.Base.Manifest().Digest, res.Built, res.Setup.Milliseconds()
		if res.Image != nil {
			ev.ImageDigest = res.Image.Manifest().Digest
		}
	}
	if _, serr := os.Stat(filepath.Join(r.rec.out, EnvironmentAuditFile)); serr == nil {
		// The setup ran (whatever came of it): its output and decisions are evidence.
		ev.Log, ev.AuditLog = EnvironmentLogFile, EnvironmentAuditFile
		d, derr := envbuild.Denials(filepath.Join(r.rec.out, EnvironmentAuditFile), r.grant.policyFile)
		if derr != nil {
			zerolog.Ctx(ctx).Warn().Err(derr).Msg("failed to read the setup's denied hosts")
		}
		if d != nil {
			ev.Denials = d
			zerolog.Ctx(ctx).Warn().Int(logKeyDeniedHosts, d.DeniedHostCount()).Str(logKeyDenials, d.Text()).Msg("the environment's setup was denied hosts")
		}
	} else {
		_ = os.Remove(logPath)
	}
	if err != nil {
		if ev.ID != "" {
			r.rec.ev.Environment = ev
		}
		return "", fmt.Errorf("failed to build the repository's environment: %w", err)
	}
	r.rec.ev.Environment = ev
	if err := s.bootImage(res.Image); err != nil {
		return "", err
	}
	how := "found in the cache"
	if res.Built {
		how = fmt.Sprintf("built (setup %v)", res.Setup.Round(100*time.Millisecond))
	}
	return fmt.Sprintf("%.19s %s; image %.19s", res.Key.Digest, how, s.image), nil
}

// logKeyDeniedHosts counts the hosts the environment's setup was refused,
// and logKeyDenials holds them with the suggested change to environment.allow.
const (
	logKeyDeniedHosts = "denied_hosts"
	logKeyDenials     = "denials"
)

// imageNeeds says what of the policy needs an image of its own: the harness's CLI, the
// environment, or both.
func (r *run) imageNeeds() string {
	var needs []string
	if cli, ok := harness.DefaultCLI(r.harnessPolicy().Name); ok {
		needs = append(needs, "harness: "+cli.Harness)
	}
	if r.grant.policy.Environment != nil {
		needs = append(needs, "environment:")
	}
	return strings.Join(needs, " and ")
}

// harnessPolicy is the stage's harness: a review run's reviewer
// (repoconfig.Config.ReviewerHarness: its own, else the repository's), every other
// run's agent.
func (r *run) harnessPolicy() repoconfig.Harness {
	if r.cfg.Stage == wire.StageReview {
		return r.grant.policy.ReviewerHarness()
	}
	return r.grant.policy.Harness
}

// needsImage says the run cannot boot the runner's default image.
func (r *run) needsImage() bool { return r.imageNeeds() != "" }

// harnessImage finds or builds the image with the harness's CLI (no environment), and
// makes it the image the session's VM boots.
func harnessImage(ctx context.Context, s *session, bc image.BuildConfig) (string, error) {
	im, err := image.Build(ctx, bc)
	if err != nil {
		return "", fmt.Errorf("failed to build the image with the %s harness %s: %w", bc.Harness.Name, bc.Harness.Version, err)
	}
	if err := s.bootImage(im); err != nil {
		return "", err
	}
	return fmt.Sprintf("image %.19s with %s %s", s.image, bc.Harness.Name, bc.Harness.Version), nil
}
