// Package guest is Bumper's agent inside the VM: PID 1 after switch_root. It talks to
// the host over one virtio-serial port with the agentproto framing, sets the guest up as
// the host's first request asks (network, workspace, root size), then runs the host's
// commands one at a time as the unprivileged agent user: it sets the clock, streams the
// command's output, feeds it what the host sends while it runs (its standard input, the
// files of its steering directory), kills whatever the agent user left running, and
// writes /out to the out disk as a tar. It powers off when the host says so or goes
// away.
package guest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/sandbox/agentproto"
)

// Log keys.
const (
	logKeyStep  = "step"
	logKeyArgv  = "argv"
	logKeyExit  = "exit_code"
	logKeyBytes = "bytes"
	logKeyCount = "count"
	logKeyFrame = "frame"
	logKeyName  = "name"

	logKeyComponent = "component"
)

// System is what the agent needs from the machine it runs on. The Linux implementation
// touches the real guest; tests pass a recorder.
type System interface {
	// SetClock sets the wall clock.
	SetClock(t time.Time) error
	// ConfigureNetwork brings up eth0 with a static address and default route.
	ConfigureNetwork(n agentproto.Network) error
	// MountWorkspace mounts the workspace disk at dir, owned by uid:gid.
	MountWorkspace(dir string, uid, gid int) error
	// KillUser kills every process running as uid and returns once none is left, or
	// says why some survived; it returns how many were running when it was called.
	KillUser(uid int) (int, error)
	// GrowRoot grows the root filesystem to the size of its disk.
	GrowRoot() error
	// DropCaches empties the page cache and the directory and inode caches.
	DropCaches() error
}

// Config configures an Agent.
type Config struct {
	// Conn is the channel to the host.
	Conn io.ReadWriter
	// System is the machine the agent sets up.
	System System
	// WorkspaceDir is where the command runs (and the workspace disk is mounted).
	WorkspaceDir string
	// OutDir is what the command leaves for the host.
	OutDir string
	// OutDevice receives the tar of OutDir (the out disk).
	OutDevice string
	// Credential is the user the command runs as; nil runs it as the agent's own user
	// (tests only, with a recording System: KillUser is then asked to kill the agent's
	// own uid).
	Credential *syscall.Credential
	// BaseEnv is the command's environment before the host's additions.
	BaseEnv []string
	// HelloInterval is how often hello repeats until the host speaks (default 5ms; it
	// bounds how long a restored VM's host waits, and stops at the first host frame).
	HelloInterval time.Duration
	// CommandGrace bounds how long output pipes are drained after the command exits
	// while a background child still holds them.
	CommandGrace time.Duration
	// SteerDir is where a command that takes steers (Run.Steering) gets its steering
	// directory, made afresh for it and removed when it ends. Its parent must be
	// writable by the agent alone (the guest's /run): the command's user may read the
	// directory but never change it, so nothing it does can make the agent write
	// anywhere else. Empty: such a command does not run.
	SteerDir string
}

// Agent serves one host connection.
type Agent struct {
	cfg Config
	r   *agentproto.Reader
	w   *agentproto.Writer

	// ran says a Run arrived: the guest is no longer idle and cannot be snapshotted.
	ran bool
	// setUp says the one-time setup was tried, setupErr how it failed: a guest whose
	// network or workspace is not what the host asked for runs nothing.
	setUp    bool
	setupErr error
	// leftover says processes of an earlier command could not be ended: the next
	// command would run beside them, so it does not run.
	leftover error
}

// New returns an Agent for cfg.
func New(cfg Config) (*Agent, error) {
	if cfg.Conn == nil || cfg.System == nil {
		return nil, errors.New("guest agent needs a host connection and a system")
	}
	if cfg.WorkspaceDir == "" || cfg.OutDir == "" || cfg.OutDevice == "" {
		return nil, errors.New("guest agent needs WorkspaceDir, OutDir and OutDevice")
	}
	if cfg.HelloInterval == 0 {
		cfg.HelloInterval = 5 * time.Millisecond
	}
	if cfg.CommandGrace == 0 {
		cfg.CommandGrace = 2 * time.Second
	}
	return &Agent{
		cfg: cfg,
		r:   agentproto.NewReader(cfg.Conn, agentproto.HostTypes...),
		w:   agentproto.NewWriter(cfg.Conn),
	}, nil
}

// Serve says hello, handles Runs one at a time, and returns when the host asks for
// shutdown or the channel closes. The caller powers off afterwards, whatever Serve
// returns.
func (a *Agent) Serve(ctx context.Context) error {
	log := zerolog.Ctx(ctx)
	hello, err := agentproto.Encode(agentproto.Hello{Version: agentproto.Version})
	if err != nil {
		return err
	}
	if err := a.w.Write(agentproto.TypeHello, hello); err != nil {
		return err
	}
	// After a snapshot restore the host's first hello is long gone (it went to the
	// connection of the VM that was snapshotted), so hello repeats until the host speaks.
	heard := make(chan struct{})
	helloDone := make(chan struct{})
	go func() {
		defer close(helloDone)
		t := time.NewTicker(a.cfg.HelloInterval)
		defer t.Stop()
		for {
			select {
			case <-heard:
				return
			case <-t.C:
				if a.w.Write(agentproto.TypeHello, hello) != nil {
					return
				}
			}
		}
	}()
	stopHello := sync.OnceFunc(func() { close(heard); <-helloDone })
	defer stopHello()
	done := make(chan struct{})
	defer close(done)
	frames := a.readFrames(done)
	for {
		fe := <-frames
		if errors.Is(fe.err, io.EOF) {
			return nil
		}
		if fe.err != nil {
			return fmt.Errorf("failed to read from host: %w", fe.err)
		}
		f := fe.f
		stopHello()
		switch f.Type {
		case agentproto.TypeShutdown:
			log.Info().Str(logKeyStep, "shutdown").Msg("host asked for shutdown")
			return nil
		case agentproto.TypePrepare:
			if a.ran {
				return errors.New("host asked to prepare a snapshot after a run; only an idle agent can be snapshotted")
			}
			if err := a.prepare(ctx, f.Payload); err != nil {
				return err
			}
			if err := a.w.Write(agentproto.TypePrepared, nil); err != nil {
				return err
			}
		case agentproto.TypeRun:
			a.ran = true
			res, err := a.handleRun(ctx, f.Payload, frames)
			if err != nil {
				return err
			}
			payload, err := agentproto.Encode(res)
			if err != nil {
				return err
			}
			if err := a.w.Write(agentproto.TypeResult, payload); err != nil {
				return err
			}
		default:
			// Input for a command that has ended: the host sent it before it read the
			// command's result. Nothing waits for it.
			log.Debug().Str(logKeyFrame, f.Type.String()).Msg("dropped input that came after its command ended")
		}
	}
}

// frameOrErr is one read from the host.
type frameOrErr struct {
	f   agentproto.Frame
	err error
}

// readFrames reads the host's frames into the channel it returns, until a read fails
// (that error is the last value) or done closes: the agent takes the host's input
// while a command runs, and its next request after.
func (a *Agent) readFrames(done <-chan struct{}) <-chan frameOrErr {
	ch := make(chan frameOrErr)
	go func() {
		for {
			f, err := a.r.Read()
			select {
			case ch <- frameOrErr{f, err}:
			case <-done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return ch
}

// handleRun sets the guest up on the first run, runs the command, ends what it left
// running and writes /out. Failures become the Result's Error so the host learns why.
// The error is for a host that broke the protocol or went away while the command ran:
// the agent then serves no more.
func (a *Agent) handleRun(ctx context.Context, payload []byte, frames <-chan frameOrErr) (agentproto.Result, error) {
	log := zerolog.Ctx(ctx)
	var req agentproto.Run
	if err := agentproto.Decode(payload, &req); err != nil {
		return agentproto.Result{ExitCode: -1, Error: err.Error()}, nil
	}
	if a.leftover != nil {
		return agentproto.Result{ExitCode: -1, Error: fmt.Sprintf("not run: processes of an earlier command could not be ended: %v", a.leftover)}, nil
	}
	// Every time: a restored snapshot's clock is stale, and an emulated clock drifts
	// over a long session.
	if err := a.cfg.System.SetClock(time.Unix(0, req.ClockUnixNano)); err != nil {
		return agentproto.Result{ExitCode: -1, Error: fmt.Sprintf("failed to set clock: %v", err)}, nil
	}
	uid, gid := a.user()
	if !a.setUp {
		a.setUp = true
		a.setupErr = a.setup(&req, uid, gid)
	}
	if a.setupErr != nil {
		return agentproto.Result{ExitCode: -1, Error: a.setupErr.Error()}, nil
	}
	log.Info().Strs(logKeyArgv, req.Argv).Msg("running command")
	res, err := a.runCommand(ctx, &req, frames)
	if err != nil {
		return res, err
	}
	log.Info().Int(logKeyExit, res.ExitCode).Msg("command ended")
	// A daemon, a background job or a stuck child of this command must not run on into
	// the next one (which may be the verification of what this one did), nor write to
	// /out while it is archived.
	left, err := a.cfg.System.KillUser(uid)
	res.Leftover = left
	if err != nil {
		// This command did run; the next one will not, and says why (this result too).
		log.Error().Err(err).Msg("failed to end the command's leftover processes")
		a.leftover = err
		res.KillError = err.Error()
	}
	n, err := writeOut(a.cfg.OutDir, a.cfg.OutDevice, req.OutMaxBytes)
	res.OutBytes = n
	if err != nil {
		res.OutError = err.Error()
	}
	log.Info().Int64(logKeyBytes, n).Msg("wrote /out")
	return res, nil
}

// setup does what a guest needs once per boot, as the first run asks: grow the root
// filesystem, bring up the network, mount the workspace for uid:gid.
func (a *Agent) setup(req *agentproto.Run, uid, gid int) error {
	if req.GrowRoot {
		if err := a.cfg.System.GrowRoot(); err != nil {
			return fmt.Errorf("failed to grow the root filesystem: %w", err)
		}
	}
	if req.Network != nil {
		if err := a.cfg.System.ConfigureNetwork(*req.Network); err != nil {
			return fmt.Errorf("failed to configure network: %w", err)
		}
	}
	if req.Workspace {
		if err := a.cfg.System.MountWorkspace(a.cfg.WorkspaceDir, uid, gid); err != nil {
			return fmt.Errorf("failed to mount workspace: %w", err)
		}
	}
	return nil
}

// user is the uid and gid commands run as.
func (a *Agent) user() (int, int) {
	if c := a.cfg.Credential; c != nil {
		return int(c.Uid), int(c.Gid)
	}
	return os.Getuid(), os.Getgid()
}

// runCommand runs the command to its end, feeding it the host's input meanwhile. The
// error is for a host that broke the protocol or went away: the command is killed.
func (a *Agent) runCommand(ctx context.Context, req *agentproto.Run, frames <-chan frameOrErr) (agentproto.Result, error) {
	dir := req.Dir
	if dir == "" {
		dir = a.cfg.WorkspaceDir
	}
	env := req.Env
	var steer *steerDir
	if req.Steering {
		if a.cfg.SteerDir == "" {
			return agentproto.Result{ExitCode: -1, Error: "not run: this agent has no steering directory to give the command"}, nil
		}
		d, err := makeSteerDir(a.cfg.SteerDir)
		if err != nil {
			return agentproto.Result{ExitCode: -1, Error: err.Error()}, nil
		}
		defer d.remove(zerolog.Ctx(ctx))
		steer = d
		// Last, so an entry of the host's cannot name another directory.
		env = append(append([]string(nil), env...), agentproto.SteerDirEnv+"="+d.path)
	}
	cmd, err := a.command(context.Background(), req.Argv, env, dir, req.MaxProcs)
	if err != nil {
		return agentproto.Result{ExitCode: -1, Error: err.Error()}, nil
	}
	cmd.Stdout = &frameWriter{w: a.w, t: agentproto.TypeStdout}
	cmd.Stderr = &frameWriter{w: a.w, t: agentproto.TypeStderr}
	cmd.WaitDelay = a.cfg.CommandGrace
	var stdin *stdinPump
	if req.Stdin {
		w, err := cmd.StdinPipe()
		if err != nil {
			return agentproto.Result{ExitCode: -1, Error: fmt.Sprintf("failed to give %q its input: %v", req.Argv[0], err)}, nil
		}
		stdin = newStdinPump(w)
	}
	if err := cmd.Start(); err != nil {
		return agentproto.Result{ExitCode: -1, Error: fmt.Sprintf("failed to run %q: %v", req.Argv[0], err)}, nil
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	if stdin != nil {
		go stdin.run()
	}
	in := &input{a: a, log: zerolog.Ctx(ctx), stdin: stdin, steer: steer, exited: exited}
	if err := in.serve(frames); err != nil {
		// Setsid made the command a process group of its own.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		stdin.stop()
		return agentproto.Result{ExitCode: -1, Error: err.Error()}, err
	}
	stdin.stop()
	var exitErr *exec.ExitError
	switch err := in.waitErr; {
	case err == nil:
		return agentproto.Result{ExitCode: 0}, nil
	case errors.As(err, &exitErr):
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return agentproto.Result{ExitCode: -1, Signal: ws.Signal().String()}, nil
		}
		return agentproto.Result{ExitCode: exitErr.ExitCode()}, nil
	case errors.Is(err, exec.ErrWaitDelay):
		return agentproto.Result{ExitCode: cmd.ProcessState.ExitCode()}, nil
	default:
		return agentproto.Result{ExitCode: -1, Error: fmt.Sprintf("failed to run %q: %v", req.Argv[0], err)}, nil
	}
}

// command prepares argv to run in dir as the agent user, with env added to the base
// environment and, when maxProcs is set, a process-count limit.
func (a *Agent) command(ctx context.Context, argv, env []string, dir string, maxProcs uint64) (*exec.Cmd, error) {
	env = append(append([]string{}, a.cfg.BaseEnv...), env...)
	prog, err := lookPathIn(argv[0], env)
	if err != nil {
		return nil, fmt.Errorf("failed to run %q: %w", argv[0], err)
	}
	cmd := exec.CommandContext(ctx, prog, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Dir = dir
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: a.cfg.Credential}
	if a.cfg.Credential != nil && maxProcs > 0 {
		// RLIMIT_NPROC is enforced only for non-root users, so setting it on the root agent
		// leaves the agent alone and binds the command it spawns.
		lim := syscall.Rlimit{Cur: maxProcs, Max: maxProcs}
		if err := syscall.Setrlimit(rlimitNproc, &lim); err != nil {
			return nil, fmt.Errorf("failed to set process limit: %w", err)
		}
	}
	return cmd, nil
}

// warmUpTimeout bounds each warm-up command of a Prepare.
const warmUpTimeout = 30 * time.Second

// prepare gets an idle agent ready to be snapshotted (see agentproto.Prepare).
func (a *Agent) prepare(ctx context.Context, payload []byte) error {
	log := zerolog.Ctx(ctx)
	var req agentproto.Prepare
	if err := agentproto.Decode(payload, &req); err != nil {
		return err
	}
	// With init_on_free=1 on the command line, dropping the boot's caches leaves zeroed
	// pages, which a snapshot stores as flags instead of contents. A failure costs only
	// snapshot size.
	if err := a.cfg.System.DropCaches(); err != nil {
		log.Warn().Err(err).Msg("failed to drop caches before the snapshot")
	}
	if err := warmCodec(); err != nil {
		return err
	}
	for _, argv := range req.WarmUp {
		wctx, cancel := context.WithTimeout(ctx, warmUpTimeout)
		cmd, err := a.command(wctx, argv, nil, "/", 0)
		if err == nil {
			err = cmd.Run()
		}
		cancel()
		if err != nil {
			log.Warn().Err(err).Strs(logKeyArgv, argv).Msg("warm-up command failed")
		}
	}
	uid, _ := a.user()
	if _, err := a.cfg.System.KillUser(uid); err != nil {
		return fmt.Errorf("failed to end the warm-up's processes: %w", err)
	}
	log.Info().Int(logKeyCount, len(req.WarmUp)).Msg("ready to be snapshotted")
	return nil
}

// warmCodec encodes and decodes one of each message a restored agent handles, so that
// encoding/json's per-type caches are built in the snapshot: under TCG, building them
// took a restored run's request 20–28 ms to decode, against 8–16 ms with them built.
func warmCodec() error {
	run := agentproto.Run{
		Argv: []string{"true"}, Env: []string{"K=V"}, Dir: "/", ClockUnixNano: 1, MaxProcs: 1,
		Network:   &agentproto.Network{Address: "10.0.2.15/24", Gateway: "10.0.2.2"},
		Workspace: true, OutMaxBytes: 1, GrowRoot: true,
	}
	b, err := agentproto.Encode(run)
	if err != nil {
		return err
	}
	if err := agentproto.Decode(b, &agentproto.Run{}); err != nil {
		return fmt.Errorf("failed to warm the codec: %w", err)
	}
	if _, err := agentproto.Encode(agentproto.Result{ExitCode: 1, Signal: "s", Error: "e", OutBytes: 1, OutError: "o", Leftover: 1, KillError: "k"}); err != nil {
		return err
	}
	if b, err = agentproto.Encode(agentproto.SteerFile{Name: "a", Data: []byte("b")}); err != nil {
		return err
	}
	if err := agentproto.Decode(b, &agentproto.SteerFile{}); err != nil {
		return fmt.Errorf("failed to warm the codec: %w", err)
	}
	_, err = agentproto.Encode(agentproto.SteerAck{Name: "a", Error: "e"})
	return err
}

// frameWriter turns a byte stream into output frames of at most MaxChunk bytes.
type frameWriter struct {
	w *agentproto.Writer
	t agentproto.Type
}

func (f *frameWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		c := min(len(p), agentproto.MaxChunk)
		if err := f.w.Write(f.t, p[:c]); err != nil {
			return n, err
		}
		n += c
		p = p[c:]
	}
	return n, nil
}

// lookPathIn finds name in the PATH of env (the command's environment, not the agent's:
// PID 1 inherits almost nothing from the initramfs).
func lookPathIn(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path := ""
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if info, err := os.Stat(p); err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%q not found in PATH %q", name, path)
}
