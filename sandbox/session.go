package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/internal/cleanup"
	"github.com/bumperdev/bumper/sandbox/image"
	"github.com/bumperdev/bumper/sandbox/netns"
	"github.com/bumperdev/bumper/sandbox/reaper"
	"github.com/bumperdev/bumper/sandbox/vmdisk"
)

// SessionSpec is a VM that runs several commands in turn.
type SessionSpec struct {
	// Config is the VM. Config.WorkspaceDir is ignored: Start takes it, because the
	// workspace may be made only once the session's proxy runs (the host fetches the
	// repository through it).
	Config Config
	// StartProxy, when set, gives the VM a NIC in a locked-down network namespace whose
	// only way out is this proxy, which Open starts; nil means no NIC at all.
	StartProxy ProxyStarter
}

// Session is one VM that runs several commands in turn, with everything around it: the
// run record the reaper reads, the network namespace, the proxy. Open makes those, Start
// boots the VM (or restores a snapshot), Run runs one command at a time, CollectOut
// reads what the guest's /out holds, SaveRootDisk (optional, after the last Run) keeps
// the root disk, and Close takes everything down. The workspace disk
// and the root disk persist from one command to the next; processes do not: after each
// command the guest kills everything the agent user left running. Config.Timeout bounds
// the whole session from Start, not each command.
//
// Kill may be called from any goroutine at any time; Start, Run, CollectOut and Close
// are called one at a time (a Close during a Start or Run kills the VM first).
type Session struct {
	id        string
	log       zerolog.Logger
	proxyAddr string
	// cfg is the VM's configuration with defaults; Open sets its Network, Start its
	// WorkspaceDir.
	cfg Config
	// rec is the run record; the session's machines update it through withRecord.
	rec reaper.Record
	// cleanups are what Open made (record, network, proxy), undone by Close in reverse.
	cleanups cleanup.Stack
	// killed ends the contexts of whatever the session is doing when Kill is called.
	killed     context.Context
	killCancel context.CancelFunc

	closeOnce sync.Once
	closeErr  error

	mu sync.Mutex
	// m is the machine Kill must end: the session's VM, or the one making a snapshot
	// while Start prepares it. up says m is the session's VM and has started.
	m        *Machine
	up       bool
	started  bool
	busy     bool // a Start, Run or SaveRootDisk is in progress
	closed   bool
	isKilled bool
	saved    bool // SaveRootDisk was called: the VM is shut down for good
	runs     int
	// t0 is when Start began booting (after any snapshot preparation): Ready and
	// FirstOutput count from it. deadline is when the wall-time limit ends the session.
	t0       time.Time
	deadline time.Time
	rep      Report
}

// Open prepares a session without booting its VM: it reaps runs whose owners died,
// writes the run record, and with spec.StartProxy creates the network namespace and
// starts the proxy on the host end of its veth (see ProxyAddr). ctx is handed to
// StartProxy. On error nothing is left behind.
func Open(ctx context.Context, spec SessionSpec) (_ *Session, err error) {
	cfg := spec.Config
	cfg.WorkspaceDir = ""
	// Before anything is made: a bad configuration should not cost a namespace first.
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid sandbox config: %w", err)
	}
	s := &Session{cfg: cfg.withDefaults(), id: randomID()}
	s.log = zerolog.Ctx(ctx).With().Str(logKeyRun, s.id).Logger()
	s.killed, s.killCancel = context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			err = errors.Join(err, s.cleanups.Run(&s.log))
			s.killCancel()
		}
	}()
	if reaped, err := reaper.Reap(s.cfg.StateDir); err != nil {
		s.log.Warn().Err(err).Msg("failed to reap stale runs")
	} else if len(reaped) > 0 {
		s.log.Info().Strs(logKeyReaped, reaped).Msg("reaped runs left by dead owners")
	}
	if s.rec, err = reaper.Own(s.id); err != nil {
		return nil, err
	}
	s.rec.Network = spec.StartProxy != nil
	if err := reaper.Write(s.cfg.StateDir, s.rec); err != nil {
		return nil, err
	}
	s.cleanups.Push("run record", func() error { return reaper.Remove(s.cfg.StateDir, s.id) })
	if spec.StartProxy == nil {
		return s, nil
	}
	n, err := netns.Create(netns.Config{ID: s.id, StateDir: s.cfg.StateDir}, HostProxyPort)
	if err != nil {
		return nil, fmt.Errorf("failed to create the run's network: %w", err)
	}
	s.cleanups.Push("network", n.Close)
	listen := n.ProxyListenAddr(HostProxyPort)
	stop, err := spec.StartProxy(ctx, listen)
	if err != nil {
		return nil, fmt.Errorf("failed to start the proxy: %w", err)
	}
	s.cleanups.Push("proxy", stop)
	s.proxyAddr = listen
	s.cfg.Network = &Network{TAP: n.TAP, ProxyURL: guestProxyURL()}
	s.log.Info().Str(logKeyProxy, listen).Msg("session network and proxy up")
	return s, nil
}

// ProxyAddr is the "IP:port" the session's proxy listens on: the host end of the
// session's veth, reachable from host processes (the host fetches the repository
// through it, into the same audit log as the guest). The guest reaches the same proxy
// at a fixed address of its own (HTTP_PROXY in its commands' environment). It is ""
// without SessionSpec.StartProxy.
func (s *Session) ProxyAddr() string { return s.proxyAddr }

// BootImage is the image a session's VM boots: its kernel, initramfs, root file system
// template with its format, and kernel command line (the Config fields of the same
// names). ImageFiles makes one from a loaded image.
type BootImage struct {
	Kernel, Initrd, Rootfs, RootfsFormat, Cmdline string
}

// ImageFiles returns what a VM boots of im: use it (or Config.UseImage) rather than
// copying the paths, so that a derived image's delta is booted as qcow2.
func ImageFiles(im *image.Image) BootImage {
	return BootImage{Kernel: im.KernelPath(), Initrd: im.InitrdPath(), Rootfs: im.RootfsPath(), RootfsFormat: im.RootfsFormat(), Cmdline: im.Manifest().Cmdline}
}

// UseImage sets the configuration's image files (ImageFiles).
func (c *Config) UseImage(im BootImage) {
	c.Kernel, c.Initrd, c.Rootfs, c.RootfsFormat, c.Cmdline = im.Kernel, im.Initrd, im.Rootfs, im.RootfsFormat, im.Cmdline
}

// UseImage replaces the image the VM will boot, before Start. A run learns which image
// it needs (its repository's environment, built or found from the commit it fetched)
// only after its network and proxy are up, because the fetch goes through the proxy.
// The new files are checked as Open checks them; a warm start then restores (or makes)
// the snapshot of this image, never another's.
func (s *Session) UseImage(im BootImage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return errors.New("failed to change the session's image: session closed")
	case s.isKilled:
		return fmt.Errorf("failed to change the session's image: %w", ErrKilled)
	case s.started:
		return fmt.Errorf("failed to change the session's image: %w: the VM boots the image it started with", ErrStarted)
	}
	cfg := s.cfg
	cfg.UseImage(im)
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("failed to change the session's image: %w", err)
	}
	s.cfg = cfg
	return nil
}

// Start boots the session's VM with workspaceDir (may be "": no workspace) as its
// workspace disk: with Config.SnapshotDir it first makes the snapshot if there is none
// (PrepareSnapshot), then restores it; otherwise, or when no snapshot fits, it boots
// cold. workspaceDir must stay in place until the first Run returns: a snapshot that
// fails to restore is found only then, and the cold boot after it builds the disk again.
func (s *Session) Start(ctx context.Context, workspaceDir string) error {
	s.mu.Lock()
	var refuse error
	switch {
	case s.closed:
		refuse = errors.New("session closed")
	case s.isKilled:
		refuse = ErrKilled
	case s.started:
		refuse = ErrStarted
	}
	if refuse != nil {
		s.mu.Unlock()
		return fmt.Errorf("failed to start the session: %w", refuse)
	}
	s.started, s.busy = true, true
	s.mu.Unlock()
	defer s.idle()
	ctx, cancel := s.withKill(ctx)
	defer cancel()
	s.cfg.WorkspaceDir = workspaceDir
	if s.cfg.SnapshotDir != "" {
		// The first run of an image makes its snapshot (a cold boot and a save), which
		// then serves every later run.
		made, err := prepareSnapshot(ctx, s.cfg, s.track)
		switch {
		case s.killedNow():
			return fmt.Errorf("failed to prepare a snapshot: %w", ErrKilled)
		case err != nil:
			s.log.Warn().Err(err).Msg("failed to prepare a snapshot; booting cold")
		case made:
			s.log.Info().Msg("made a snapshot for warm starts")
		}
		s.mu.Lock()
		s.rep.SnapshotMade = made
		s.mu.Unlock()
	}
	s.mu.Lock()
	s.t0 = time.Now()
	s.deadline = s.t0.Add(s.cfg.Timeout)
	s.mu.Unlock()
	return s.boot(ctx, s.cfg)
}

// boot starts a machine for cfg as the session's VM and notes how it booted.
func (s *Session) boot(ctx context.Context, cfg Config) error {
	m, err := New(ctx, cfg, WithID(s.id), withRecord(&s.rec))
	if err != nil {
		return err
	}
	if err := s.track(m); err != nil {
		return fmt.Errorf("failed to boot the VM: %w", err)
	}
	if err := m.Start(ctx); err != nil {
		if s.killedNow() {
			s.log.Debug().Err(err).Msg("boot ended by Kill")
			return fmt.Errorf("failed to boot the VM: %w", ErrKilled)
		}
		return fmt.Errorf("failed to boot the VM: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.up = true
	s.rep.Accel, s.rep.Boot, s.rep.Steps = m.Accel(), m.Boot(), m.Steps()
	s.rep.Ready = time.Since(s.t0)
	return nil
}

// track makes m the machine Kill ends, unless the session is killed already.
func (s *Session) track(m *Machine) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.isKilled {
		return ErrKilled
	}
	s.m, s.up = m, false
	return nil
}

// Run runs argv in the guest's /workspace as the agent user, streaming its output to
// stdout and stderr (nil: discarded), and returns how it ended; env adds KEY=VALUE
// entries (the proxy's variables come first). Call it any number of times after Start,
// one at a time. The error is for failures of the sandbox itself (then the session can
// run nothing more); the command's own failure, and the wall-time limit, are in the
// Result. When ctx ends the VM is killed: a command cannot be stopped alone.
//
// in, at most one, is the command's way in while it runs (see Input and
// Machine.Run).
//
// The first Run after a warm start is the one that finds a snapshot that does not
// restore (the command never ran): the snapshot is moved aside, the VM boots cold from
// Start's workspace and runs the command (with its input, from the start), and Report
// says why (SnapshotBroken).
func (s *Session) Run(ctx context.Context, argv, env []string, stdout, stderr io.Writer, in ...*Input) (*Result, error) {
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	s.mu.Lock()
	refuse := s.unusableLocked("the VM was shut down to save its root disk; open a new session",
		"session not started: call Start first (or it failed)",
		"a command is already running in this session; run one at a time")
	if refuse != nil {
		s.mu.Unlock()
		endInput(in)
		return nil, fmt.Errorf("failed to run %q: %w", argv, refuse)
	}
	s.busy = true
	first := s.runs == 0
	s.runs++
	m := s.m
	s.mu.Unlock()
	defer s.idle()
	ctx, cancel := s.withKill(ctx)
	defer cancel()
	var fw *firstWrite
	if first {
		fw = &firstWrite{}
		stdout, stderr = fw.wrap(stdout), fw.wrap(stderr)
	}
	res, err := m.Run(ctx, argv, env, stdout, stderr, in...)
	var re *RestoreError
	if first && errors.As(err, &re) {
		res, err = s.runCold(ctx, m, re, argv, env, stdout, stderr, in)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if first {
		s.rep.FirstOutput = fw.since(s.t0)
	}
	if err != nil {
		return nil, err
	}
	s.rep.Result = *res
	return res, nil
}

// runCold boots cold after the warm start of m failed and runs the command there.
func (s *Session) runCold(ctx context.Context, m *Machine, re *RestoreError, argv, env []string, stdout, stderr io.Writer, in []*Input) (*Result, error) {
	_ = m.waitDone() // QEMU has exited; its cleanups finish before the cold boot
	broken := quarantineSnapshot(re)
	s.log.Info().Str(logKeyReason, broken).Msg("warm start failed; booting cold")
	s.mu.Lock()
	s.rep.SnapshotBroken = broken
	s.up = false
	left := time.Until(s.deadline)
	s.mu.Unlock()
	if left <= 0 {
		endInput(in)
		return &Result{ExitCode: -1, TimedOut: true, Error: fmt.Sprintf("wall-time limit of %v reached before a cold boot; the command did not run", s.cfg.Timeout)}, nil
	}
	// The session's limit runs from Start: the cold VM gets what is left of it.
	cfg := s.cfg
	cfg.Timeout = left
	if err := s.boot(ctx, cfg); err != nil {
		endInput(in)
		return nil, err
	}
	s.mu.Lock()
	cold := s.m
	s.mu.Unlock()
	return cold.Run(ctx, argv, env, stdout, stderr, in...)
}

// endInput ends a command's input when the command will not run.
func endInput(in []*Input) {
	for _, i := range in {
		if i != nil {
			i.end()
		}
	}
}

// CollectOut copies what the guest's /out holds after the last Run to dest, treating it
// as untrusted. Call it after a Run returned a result and before Close.
func (s *Session) CollectOut(dest string) (*vmdisk.Report, error) {
	s.mu.Lock()
	m, up, runs, busy := s.m, s.up, s.runs, s.busy
	s.mu.Unlock()
	switch {
	case !up || runs == 0:
		return nil, errors.New("failed to collect /out: no command has run in this session")
	case busy:
		return nil, errors.New("failed to collect /out: a command is running; collect after Run returns")
	}
	rep, err := m.CollectOut(dest)
	if err != nil {
		return rep, fmt.Errorf("failed to collect /out: %w", err)
	}
	s.mu.Lock()
	s.rep.Out = rep
	s.mu.Unlock()
	return rep, nil
}

// Kill ends the session's QEMU at once and returns when it is gone; a Start or Run in
// progress returns promptly with an error wrapping ErrKilled, and so does every later
// Start or Run. It is safe from any goroutine at any time. The network, proxy and run
// record stay until Close.
func (s *Session) Kill() error {
	s.mu.Lock()
	s.isKilled = true
	m, up := s.m, s.up
	s.mu.Unlock()
	s.killCancel()
	if m == nil {
		return nil
	}
	err := m.Kill()
	if !up {
		// A machine still starting (or making a snapshot) fails its Start with the
		// kill, which is what its caller hears.
		return nil
	}
	if err != nil {
		return fmt.Errorf("failed to tear the killed VM down: %w", err)
	}
	return nil
}

// Close shuts the VM down gracefully (the agent powers off; QEMU is asked to quit, then
// killed, ShutdownGrace apart or at once when ctx ends), then stops the proxy, removes
// the network and the run record, in that order. A Start or Run still in progress is
// killed first. Close is idempotent (later calls return the first call's error) and
// safe after Kill.
func (s *Session) Close(ctx context.Context) error {
	s.closeOnce.Do(func() { s.closeErr = s.close(ctx) })
	return s.closeErr
}

func (s *Session) close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	busy := s.busy
	s.mu.Unlock()
	down := time.Now()
	var errs []error
	if busy {
		errs = append(errs, s.Kill())
	}
	s.mu.Lock()
	m, up := s.m, s.up
	s.mu.Unlock()
	if m != nil {
		if up {
			errs = append(errs, m.Shutdown(ctx))
		} else {
			_ = m.Kill() // its Start failed and said why; this only waits for its end
		}
	}
	errs = append(errs, s.cleanups.Run(&s.log))
	s.killCancel()
	s.mu.Lock()
	s.rep.Teardown = time.Since(down)
	s.mu.Unlock()
	return errors.Join(errs...)
}

// Report says how the session went so far: the accelerator, how the VM booted, whether
// a snapshot was made or broken, the boot steps, the last Run's result, the last
// CollectOut's report, and the times (Ready, FirstOutput, Teardown).
func (s *Session) Report() Report {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rep
	r.Steps = slices.Clone(r.Steps)
	return r
}

// withKill returns ctx, also ended (with ErrKilled as its cause) by Kill.
func (s *Session) withKill(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(s.killed, func() { cancel(ErrKilled) })
	return ctx, func() { stop(); cancel(nil) }
}

func (s *Session) killedNow() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.isKilled
}

// idle marks the end of a Start or Run.
func (s *Session) idle() {
	s.mu.Lock()
	s.busy = false
	s.mu.Unlock()
}

// unusableLocked says why the started VM cannot take a command or be saved now: the
// session closed or killed, or (with the caller's words) its disk saved, not started, or
// busy; nil when it can. s.mu is held.
func (s *Session) unusableLocked(saved, notUp, busy string) error {
	switch {
	case s.closed:
		return errors.New("session closed")
	case s.isKilled:
		return ErrKilled
	case s.saved:
		return errors.New(saved)
	case !s.up:
		return errors.New(notUp)
	case s.busy:
		return errors.New(busy)
	}
	return nil
}
