package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/digitalocean/go-qemu/qmp"
	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/internal/cleanup"
	"github.com/bumperdev/bumper/sandbox/agentproto"
	"github.com/bumperdev/bumper/sandbox/reaper"
)

// Log keys.
const (
	logKeyStep     = "step"
	logKeyDuration = "duration"
	logKeyAccel    = "accel"
	logKeyReason   = "reason"
	logKeyRun      = "run"
	logKeyReaped   = "reaped"
	logKeyBoot     = "boot"
	logKeyProxy    = "proxy"
	logKeyPath     = "path"
	logKeyPowerOff = "power_off"
	logKeyOutput   = "output"
)

// BootTimeout bounds the time from QEMU's start to the agent's hello.
const BootTimeout = 60 * time.Second

// ShutdownGrace is how long Shutdown waits for each step (agent power-off, then QEMU's
// own quit on SIGTERM) before escalating.
const ShutdownGrace = 3 * time.Second

// ErrStarted is returned by a second Start.
var ErrStarted = errors.New("machine already started; a Machine boots once")

// ErrKilled is returned by what a Machine or Session was doing (Start, Run) when Kill
// ended it, and by what is asked of it afterwards.
var ErrKilled = errors.New("the VM was killed")

// errNotStarted is Wait's answer before Start.
var errNotStarted = errors.New("machine not started")

// Step is one named phase of a boot, with how long it took.
type Step struct {
	Name     string // one of the Step* names
	Duration time.Duration
}

// Boot step names, in boot order: what Steps and Report.Steps hold and what the "boot
// step" log lines say. A cold boot waits for the agent's hello; a warm start only opens
// the agent channel; PrepareSnapshot adds the warm-up.
const (
	StepRunDir         = "run directory"
	StepAccel          = "accelerator"
	StepSnapshotLookup = "snapshot lookup"
	StepOverlay        = "overlay"
	StepWorkspaceDisk  = "workspace disk"
	StepOutDisk        = "out disk"
	StepQEMU           = "qemu"
	StepAgentHello     = "agent hello"
	StepAgentChannel   = "agent channel"
	StepWarmUp         = "warm-up"
)

// Boot modes (BootInfo.Mode).
const (
	BootCold     = "cold"     // booted from the image
	BootWarm     = "warm"     // restored from a snapshot
	BootSnapshot = "snapshot" // booted to take a snapshot
)

// Result is how the command ended.
type Result struct {
	// ExitCode is the command's status, -1 when it was killed or never ran.
	ExitCode int
	// Signal names the signal that ended the command, if any.
	Signal string
	// TimedOut says the wall-time limit killed the VM.
	TimedOut bool
	// Error says why the guest could not run the command, if it could not.
	Error string
	// OutError says why the guest could not write /out, if it could not: then nothing
	// of /out comes back, and CollectOut finds it empty.
	OutError string
	// Leftover is how many processes the command left running, which the guest ended;
	// KillError says why some could not be ended, and then the guest runs no later
	// command.
	Leftover  int
	KillError string
}

// Option adjusts a Machine.
type Option func(*Machine)

// WithID names the run (default: random); names and paths derive from it.
func WithID(id string) Option { return func(m *Machine) { m.id = id } }

// withRecord makes the Machine update the caller's run record instead of keeping its
// own; the caller removes it once everything it made is gone.
func withRecord(r *reaper.Record) Option {
	return func(m *Machine) { m.record, m.ownRecord = r, false }
}

// Machine is one microVM. Start it once, Run commands one at a time (each sees what the
// ones before it left on the disks; the guest kills what one left running before the
// next), then Shutdown or Kill; Wait returns when QEMU has exited and every cleanup has
// run. The wall-time limit (Config.Timeout) runs from Start over all the commands.
type Machine struct {
	cfg   Config
	id    string
	log   zerolog.Logger
	accel AccelChoice

	mu       sync.Mutex
	started  bool
	cleanups cleanup.Stack
	steps    []Step
	runDir   string
	cmd      *exec.Cmd
	r        *agentproto.Reader
	w        *agentproto.Writer
	timer    *time.Timer
	timedOut bool
	// running says a Run is in progress: the agent channel carries one command at a time.
	running bool
	// proc is QEMU's process once launched, for killProcess from any goroutine; killed
	// says a kill was asked for, so a Start still booting stops and QEMU launched after
	// the request dies at once.
	proc   *os.Process
	killed bool
	// helloSeen is set once the agent's hello has been checked, heard once any frame
	// came from the agent; only the goroutine that reads the channel (Start, then Run)
	// touches them.
	helloSeen bool
	heard     bool
	restoring string // the snapshot directory a warm start restores
	exitCode  int    // QEMU's exit status once it has exited (-1 if killed by a signal)

	record    *reaper.Record
	ownRecord bool

	qemuTail   string // the end of QEMU's stderr, kept when it exits
	layout     qemuLayout
	boot       BootInfo
	snapshotTo string // set by TakeSnapshot: the overlay goes here and nothing is restored
	// holdRunDir, set by powerOff, makes the cleanups leave the run directory (and the
	// root overlay in it) for powerOff's caller, who removes it.
	holdRunDir bool

	exited  chan struct{} // closed when QEMU has exited
	done    chan struct{} // closed when cleanups have run too
	waitErr error
}

// New validates cfg and returns a Machine that has not started.
func New(ctx context.Context, cfg Config, opts ...Option) (*Machine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid sandbox config: %w", err)
	}
	m := &Machine{
		cfg:       cfg.withDefaults(),
		log:       *zerolog.Ctx(ctx),
		exited:    make(chan struct{}),
		done:      make(chan struct{}),
		ownRecord: true,
	}
	for _, o := range opts {
		o(m)
	}
	if m.id == "" {
		m.id = randomID()
	}
	m.log = m.log.With().Str(logKeyRun, m.id).Logger()
	return m, nil
}

// ID returns the run's name.
func (m *Machine) ID() string { return m.id }

// BootInfo says how a machine booted (BootCold, BootWarm or BootSnapshot), and why.
type BootInfo struct {
	Mode   string
	Reason string
}

// Boot returns how the machine booted.
func (m *Machine) Boot() BootInfo { return m.boot }

// Accel returns the accelerator chosen at Start and why.
func (m *Machine) Accel() AccelChoice { return m.accel }

// Steps returns the boot steps so far with their durations.
func (m *Machine) Steps() []Step {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Step(nil), m.steps...)
}

// ConsolePath is the file holding the guest's serial console.
func (m *Machine) ConsolePath() string { return filepath.Join(m.runDir, "console.log") }

func (m *Machine) step(name string, fn func() error) error {
	if m.isKilled() {
		return fmt.Errorf("failed to take boot step %q: %w", name, ErrKilled)
	}
	start := time.Now()
	err := fn()
	d := time.Since(start)
	m.mu.Lock()
	m.steps = append(m.steps, Step{Name: name, Duration: d})
	m.mu.Unlock()
	ev := m.log.Info()
	if err != nil {
		ev = m.log.Error().Err(err)
	}
	ev.Str(logKeyStep, name).Dur(logKeyDuration, d).Msg("boot step")
	if err != nil {
		return fmt.Errorf("boot step %q failed: %w", name, err)
	}
	return nil
}

// Start boots the VM and returns once the guest agent has said hello. It may be called
// once; on failure everything it made is already cleaned up.
func (m *Machine) Start(ctx context.Context) error {
	m.mu.Lock()
	if m.started {
		m.mu.Unlock()
		return ErrStarted
	}
	m.started = true
	m.mu.Unlock()
	if err := m.start(ctx); err != nil {
		m.killProcess()
		cerr := m.cleanups.Run(&m.log)
		if m.cmd == nil || m.cmd.Process == nil {
			m.finish(err)
		} else {
			<-m.done
		}
		return errors.Join(err, cerr)
	}
	return nil
}

// Shutdown asks the agent to power off, then QEMU to quit, then kills it, waiting
// ShutdownGrace between steps, and returns when everything is cleaned up.
func (m *Machine) Shutdown(ctx context.Context) error {
	if m.cmd == nil {
		return m.waitDone()
	}
	if m.w != nil {
		_ = m.w.Write(agentproto.TypeShutdown, nil)
	}
	escalate := []func(){
		func() {
			// QMP quit, and SIGTERM (which QEMU also treats as quit) in case QMP is stuck.
			if err := m.qmpQuit(); err != nil {
				m.log.Warn().Err(err).Msg("QMP quit failed; sending SIGTERM")
				_ = m.cmd.Process.Signal(syscall.SIGTERM)
			}
		},
		m.killProcess,
	}
	for _, next := range escalate {
		select {
		case <-m.exited:
			return m.waitDone()
		case <-ctx.Done():
		case <-time.After(ShutdownGrace):
		}
		next()
	}
	return m.waitDone()
}

// qmpQuit asks QEMU to quit over its QMP socket.
func (m *Machine) qmpQuit() error {
	mon, err := qmp.NewSocketMonitor("unix", m.layout.qmpSock, time.Second)
	if err != nil {
		return fmt.Errorf("failed to reach QMP: %w", err)
	}
	if err := mon.Connect(); err != nil {
		return fmt.Errorf("failed to connect to QMP: %w", err)
	}
	defer mon.Disconnect()
	if _, err := mon.Run([]byte(`{"execute":"quit"}`)); err != nil {
		return fmt.Errorf("QMP quit: %w", err)
	}
	return nil
}

// Kill ends QEMU at once and returns when everything is cleaned up. It is safe from any
// goroutine at any time: a Start in progress stops (at its next step, or as soon as
// QEMU is launched) and fails with ErrKilled, and so does a Run.
func (m *Machine) Kill() error {
	m.killProcess()
	return m.waitDone()
}

// killProcess asks for the machine's end: it kills QEMU if it runs and makes sure a
// Start still on its way never leaves one running.
func (m *Machine) killProcess() {
	m.mu.Lock()
	m.killed = true
	p := m.proc
	m.mu.Unlock()
	if p != nil {
		_ = p.Kill()
	}
}

func (m *Machine) isKilled() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.killed
}

// Wait blocks until the VM has exited and its cleanups have run, and returns how that
// went; it is safe to call from many goroutines and returns the same error to all. When
// ctx ends first it returns ctx.Err() and the machine runs on.
func (m *Machine) Wait(ctx context.Context) error {
	if !m.isStarted() {
		return errNotStarted
	}
	select {
	case <-m.done:
	default:
		select {
		case <-m.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.waitErr
}

// waitDone waits for the end of a machine that is known to be going away (killed, or
// quitting on its own), whatever the caller's context says: the cleanups must have run
// before the caller returns.
func (m *Machine) waitDone() error { return m.Wait(context.Background()) }

func (m *Machine) isStarted() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.started
}

// randomID names a run when the caller does not.
func randomID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
