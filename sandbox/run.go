package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/sandbox/netns"
	"github.com/bumperdev/bumper/sandbox/reaper"
	"github.com/bumperdev/bumper/sandbox/workspace"
)

// HostProxyPort is the port the run's proxy listens on at the host end of its veth. The
// address is unique per run, so the port can be the same for all.
const HostProxyPort = 3128

// ProxyStarter starts a proxy listening on listen and returns a function that stops it.
// The firewall package provides one; this package never imports it.
type ProxyStarter func(ctx context.Context, listen string) (stop func() error, err error)

// Spec is one sandboxed command.
type Spec struct {
	// Config is the VM.
	Config Config
	// Argv is the command; Env adds KEY=VALUE entries to its environment.
	Argv, Env []string
	// OutDir receives the guest's /out (empty: discarded).
	OutDir string
	// StartProxy, when set, gives the VM a NIC in a locked-down network namespace whose
	// only way out is this proxy; nil means no NIC at all.
	StartProxy ProxyStarter
	// Stdout and Stderr receive the command's output as it runs.
	Stdout, Stderr io.Writer
}

// Report is what a sandboxed command did.
type Report struct {
	Result
	// Accel is the accelerator used and why.
	Accel AccelChoice
	// Boot says whether the VM was restored from a snapshot or booted cold, and why.
	Boot BootInfo
	// SnapshotMade says this run first made the snapshot it then restored.
	SnapshotMade bool
	// SnapshotBroken, when set, says the snapshot failed to restore, was moved aside
	// and the run booted cold instead.
	SnapshotBroken string
	// Steps are the boot steps with durations.
	Steps []Step
	// Ready is the time from the start of Run (after any snapshot preparation) to the
	// command being sent: after the agent's hello on a cold boot, as soon as the agent
	// channel opens on a restore (the request then waits while QEMU loads the state).
	Ready time.Duration
	// FirstOutput is the time from the same start to the command's first output (or to
	// its end, if it printed nothing): what a user waits for.
	FirstOutput time.Duration
	// Teardown is how long shutdown and cleanup took.
	Teardown time.Duration
	// Out says what came back from /out.
	Out *workspace.Report
}

// Run boots a VM for spec, runs its command, collects /out and tears everything down.
// The error is for failures of the sandbox itself; the command's own failure is in the
// Report.
func Run(ctx context.Context, spec Spec) (_ *Report, err error) {
	start := time.Now()
	cfg := spec.Config.withDefaults()
	if spec.Stdout == nil {
		spec.Stdout = io.Discard
	}
	if spec.Stderr == nil {
		spec.Stderr = io.Discard
	}
	id := randomID()
	var cleanups []func() error
	defer func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			err = errors.Join(err, cleanups[i]())
		}
	}()
	if reaped, err := reaper.Reap(cfg.StateDir); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("failed to reap stale runs")
	} else if len(reaped) > 0 {
		zerolog.Ctx(ctx).Info().Strs(logKeyReaped, reaped).Msg("reaped runs left by dead owners")
	}
	rec, err := reaper.Own(id)
	if err != nil {
		return nil, err
	}
	rec.Network = spec.StartProxy != nil
	if err := reaper.Write(cfg.StateDir, rec); err != nil {
		return nil, err
	}
	cleanups = append(cleanups, func() error { return reaper.Remove(cfg.StateDir, id) })
	if spec.StartProxy != nil {
		n, err := netns.Create(netns.Config{ID: id, StateDir: cfg.StateDir}, HostProxyPort)
		if err != nil {
			return nil, fmt.Errorf("failed to create the run's network: %w", err)
		}
		cleanups = append(cleanups, n.Close)
		stop, err := spec.StartProxy(ctx, n.ProxyListenAddr(HostProxyPort))
		if err != nil {
			return nil, fmt.Errorf("failed to start the proxy: %w", err)
		}
		cleanups = append(cleanups, stop)
		cfg.Network = &Network{TAP: n.TAP, ProxyURL: guestProxyURL()}
	}
	var snapshotMade bool
	if cfg.SnapshotDir != "" {
		// The first run of an image makes its snapshot (a cold boot and a save), which
		// then serves every later run.
		if snapshotMade, err = PrepareSnapshot(ctx, cfg); err != nil {
			zerolog.Ctx(ctx).Warn().Err(err).Msg("failed to prepare a snapshot; booting cold")
		} else if snapshotMade {
			zerolog.Ctx(ctx).Info().Msg("made a snapshot for warm starts")
		}
		start = time.Now()
	}
	var broken string
	for {
		m, err := New(ctx, cfg, WithID(id), withRecord(&rec))
		if err != nil {
			return nil, err
		}
		if err := m.Start(ctx); err != nil {
			return nil, err
		}
		rep := &Report{Accel: m.Accel(), Boot: m.Boot(), SnapshotMade: snapshotMade, SnapshotBroken: broken, Steps: m.Steps(), Ready: time.Since(start)}
		first := &firstWrite{}
		res, runErr := m.Run(ctx, spec.Argv, spec.Env, first.wrap(spec.Stdout), first.wrap(spec.Stderr))
		rep.FirstOutput = first.since(start)
		var re *RestoreError
		if errors.As(runErr, &re) && broken == "" {
			// The command never ran: move the snapshot aside (the next run makes a new
			// one) and boot cold this once.
			_ = m.waitDone() // QEMU has exited; its cleanups finish before the cold boot
			broken = quarantineSnapshot(re)
			zerolog.Ctx(ctx).Info().Str(logKeyReason, broken).Msg("warm start failed; booting cold")
			continue
		}
		return finishRun(ctx, m, rep, res, runErr, spec.OutDir)
	}
}

// finishRun collects /out and tears the machine down after its command ran.
func finishRun(ctx context.Context, m *Machine, rep *Report, res *Result, runErr error, outDir string) (*Report, error) {
	if runErr == nil {
		rep.Result = *res
		if outDir != "" {
			rep.Out, runErr = m.CollectOut(outDir)
		}
	}
	down := time.Now()
	serr := m.Shutdown(ctx)
	rep.Teardown = time.Since(down)
	return rep, errors.Join(runErr, serr)
}

// ParseSize parses a memory or disk size: a number of MiB, or a number with a K, M, G or
// T suffix (powers of 1024, optional trailing B or iB). It returns MiB.
func ParseSize(s string) (int, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	mult := 1.0
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K':
			mult = 1.0 / 1024
		case 'M':
			mult = 1
		case 'G':
			mult = 1024
		case 'T':
			mult = 1024 * 1024
		}
		if mult != 1 || t[n-1] == 'M' {
			t = t[:n-1]
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("size %q: want a positive number of MiB or a size like 512M or 2G", s)
	}
	mib := v * mult
	if mib < 1 || mib > 1<<30 {
		return 0, fmt.Errorf("size %q is out of range", s)
	}
	return int(mib), nil
}

// firstWrite notes when the first of the writers it wraps was first written to.
type firstWrite struct {
	mu sync.Mutex
	at time.Time
}

func (f *firstWrite) wrap(w io.Writer) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		f.mu.Lock()
		if f.at.IsZero() && len(p) > 0 {
			f.at = time.Now()
		}
		f.mu.Unlock()
		return w.Write(p)
	})
}

// since is the time from start to the first write, or to now if nothing was written.
func (f *firstWrite) since(start time.Time) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.at.IsZero() {
		return time.Since(start)
	}
	return f.at.Sub(start)
}

type writerFunc func([]byte) (int, error)

func (w writerFunc) Write(p []byte) (int, error) { return w(p) }
