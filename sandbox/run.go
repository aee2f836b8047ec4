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

	"github.com/bumperdev/bumper/sandbox/vmdisk"
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

// Report is what a sandboxed command (Run), or a session so far (Session.Report), did.
type Report struct {
	// Result is how the command ended; for a session, the last Run's.
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
	// Ready is the time from the start of the boot (Session.Start, after any snapshot
	// preparation) to the VM being ready for the first command: after the agent's hello
	// on a cold boot, as soon as the agent channel opens on a restore (the first request
	// then waits while QEMU loads the state).
	Ready time.Duration
	// FirstOutput is the time from the same start to the first command's first output
	// (or to its end, if it printed nothing): what a user waits for.
	FirstOutput time.Duration
	// Teardown is how long shutdown and cleanup took (Session.Close).
	Teardown time.Duration
	// Out says what came back from /out (for a session, at the last CollectOut).
	Out *vmdisk.Report
}

// Run boots a VM for spec, runs its command, collects /out and tears everything down:
// a Session that runs one command. The error is for failures of the sandbox itself; the
// command's own failure is in the Report.
func Run(ctx context.Context, spec Spec) (*Report, error) {
	s, err := Open(ctx, SessionSpec{Config: spec.Config, StartProxy: spec.StartProxy})
	if err != nil {
		return nil, err
	}
	if err := s.Start(ctx, spec.Config.WorkspaceDir); err != nil {
		return nil, errors.Join(err, s.Close(ctx))
	}
	res, err := s.Run(ctx, spec.Argv, spec.Env, spec.Stdout, spec.Stderr)
	// A VM killed by the wall-time limit took its out disk with it, and its guest never
	// wrote /out.
	if err == nil && spec.OutDir != "" && !res.TimedOut {
		_, err = s.CollectOut(spec.OutDir)
	}
	cerr := s.Close(ctx)
	rep := s.Report()
	return &rep, errors.Join(err, cerr)
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
