package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"time"

	"github.com/bumperdev/bumper/sandbox/agentproto"
	"github.com/bumperdev/bumper/sandbox/vmdisk"
)

// connect opens the agent channel. With waitHello it also waits for the agent's hello;
// a restored agent is known to be idle and reading, so a warm start skips that wait and
// lets Run send its request at once (the hello is checked when it arrives).
func (m *Machine) connect(ctx context.Context, sock string, waitHello bool) error {
	ctx, cancel := context.WithTimeout(ctx, BootTimeout)
	defer cancel()
	var conn net.Conn
	for {
		c, err := net.Dial("unix", sock)
		if err == nil {
			conn = c
			break
		}
		select {
		case <-m.exited:
			return fmt.Errorf("qemu exited before the agent channel opened: %s", m.exitTail())
		case <-ctx.Done():
			return fmt.Errorf("agent channel did not open: %w", ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
	m.cleanups.Push("agent channel", func() error {
		if err := conn.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			return err
		}
		return nil
	})
	m.r = agentproto.NewReader(conn, agentproto.GuestTypes...)
	m.w = agentproto.NewWriter(conn)
	if !waitHello {
		return nil
	}
	type frameOrErr struct {
		f   agentproto.Frame
		err error
	}
	got := make(chan frameOrErr, 1)
	go func() {
		f, err := m.r.Read()
		got <- frameOrErr{f, err}
	}()
	select {
	case fe := <-got:
		if fe.err != nil {
			// A broken channel usually means QEMU died; say why if it did.
			select {
			case <-m.exited:
				return fmt.Errorf("qemu exited before the agent said hello: %s", m.exitTail())
			case <-time.After(time.Second):
			}
			return fmt.Errorf("failed to read the agent's hello (console: %s): %w", tailFile(m.ConsolePath()), fe.err)
		}
		if fe.f.Type != agentproto.TypeHello {
			return fmt.Errorf("agent sent %s before hello", fe.f.Type)
		}
		return m.hello(fe.f.Payload)
	case <-ctx.Done():
		conn.Close()
		return fmt.Errorf("agent did not say hello within %v (console: %s): %w", BootTimeout, tailFile(m.ConsolePath()), ctx.Err())
	}
}

// prepare asks the idle agent to get ready to be snapshotted (drop its caches, run the
// warm-up commands) and waits for it to say it is done.
func (m *Machine) prepare(ctx context.Context) error {
	payload, err := agentproto.Encode(agentproto.Prepare{WarmUp: m.cfg.WarmUp})
	if err != nil {
		return err
	}
	if err := m.w.Write(agentproto.TypePrepare, payload); err != nil {
		return fmt.Errorf("failed to ask the agent to prepare the snapshot: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { m.killProcess() })
	defer stop()
	for {
		f, err := m.r.Read()
		if err != nil {
			return fmt.Errorf("agent channel broke while preparing the snapshot (console: %s): %w", tailFile(m.ConsolePath()), err)
		}
		switch f.Type {
		case agentproto.TypePrepared:
			return nil
		case agentproto.TypeHello:
			// Repeats sent before the agent read the request.
		default:
			return fmt.Errorf("agent sent %s while preparing the snapshot", f.Type)
		}
	}
}

// hello checks the agent's first hello; the agent repeats it until it has read a
// request.
func (m *Machine) hello(payload []byte) error {
	if m.helloSeen {
		return nil
	}
	var h agentproto.Hello
	if err := agentproto.Decode(payload, &h); err != nil {
		return err
	}
	if h.Version != agentproto.Version {
		return fmt.Errorf("agent speaks protocol %d, this host %d: rebuild the image with this bumper binary", h.Version, agentproto.Version)
	}
	m.helloSeen = true
	return nil
}

// Run runs argv in the guest's /workspace as the agent user, streaming its output to
// stdout and stderr, and returns how it ended. env adds KEY=VALUE entries. A Machine runs
// any number of commands, one at a time; the first also sets the guest up (network,
// workspace, root size). When ctx ends, the VM is killed: a command cannot be stopped
// alone. Once the VM is gone (killed, timed out), Run says so without running anything:
// a timed-out result after the wall-time limit, an error wrapping ErrKilled after Kill.
//
// in, at most one, is the command's way in while it runs (its standard input, its
// steering directory); Run ends it when the command ends, and tells its Placed
// callback about every file before it returns. A guest that answers for a file it was
// not sent is not Bumper's agent: the VM is killed and Run returns an error.
func (m *Machine) Run(ctx context.Context, argv, env []string, stdout, stderr io.Writer, in ...*Input) (res *Result, err error) {
	input, err := oneInput(in)
	if err != nil {
		return nil, err
	}
	if input != nil {
		if err := input.claim(); err != nil {
			return nil, fmt.Errorf("failed to run %q: %w", argv, err)
		}
		defer func() {
			var re *RestoreError
			if errors.As(err, &re) {
				// The command never ran: the cold boot's Run sends it all again.
				input.rewind()
				return
			}
			input.end()
		}()
	}
	if m.w == nil {
		return nil, errors.New("machine not started: call Start first")
	}
	m.mu.Lock()
	running := m.running
	m.running = true
	m.mu.Unlock()
	if running {
		return nil, errors.New("a command is already running on this machine; run one at a time")
	}
	defer func() {
		m.mu.Lock()
		m.running = false
		m.mu.Unlock()
	}()
	select {
	case <-m.exited:
		return m.ended(errors.New("the VM is no longer running"))
	default:
	}
	req := agentproto.Run{
		Argv:          argv,
		Env:           append(m.cfg.Network.proxyEnv(), env...),
		ClockUnixNano: time.Now().UnixNano(),
		MaxProcs:      m.cfg.MaxProcs,
		Workspace:     m.cfg.WorkspaceDir != "",
		OutMaxBytes:   m.cfg.OutMaxBytes,
		GrowRoot:      m.cfg.DiskSizeMB > 0,
	}
	if input != nil {
		req.Stdin, req.Steering = input.cfg.Stdin, input.cfg.Steering
	}
	if n := m.cfg.Network; n != nil {
		g := n.withDefaults().Guest
		req.Network = &g
	}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	payload, err := agentproto.Encode(req)
	if err != nil {
		return nil, err
	}
	if err := m.w.Write(agentproto.TypeRun, payload); err != nil {
		return m.ended(err)
	}
	stop := context.AfterFunc(ctx, func() { m.killProcess() })
	defer stop()
	if input != nil {
		// The input follows the request on the channel, from a goroutine of its own: a
		// guest slow to read it must not hold up its output. Run returns only once the
		// sender has stopped, so nothing of this command's input follows the next
		// command's request.
		stopSend, sent := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(sent)
			input.send(m.w, stopSend)
		}()
		defer func() {
			close(stopSend)
			<-sent
		}()
	}
	confirmed := false
	for {
		f, err := m.r.Read()
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("run canceled: %w", context.Cause(ctx))
			}
			return m.ended(err)
		}
		m.heard = true
		if input != nil && !confirmed {
			input.confirm()
			confirmed = true
		}
		switch f.Type {
		case agentproto.TypeStdout:
			_, _ = stdout.Write(f.Payload)
		case agentproto.TypeStderr:
			_, _ = stderr.Write(f.Payload)
		case agentproto.TypeSteered:
			if err := m.steered(input, f.Payload); err != nil {
				m.killProcess()
				return nil, err
			}
		case agentproto.TypeResult:
			var res agentproto.Result
			if err := agentproto.Decode(f.Payload, &res); err != nil {
				return nil, fmt.Errorf("guest sent an invalid result: %w", err)
			}
			return &Result{ExitCode: res.ExitCode, Signal: res.Signal, Error: res.Error, OutError: res.OutError,
				Leftover: res.Leftover, KillError: res.KillError}, nil
		case agentproto.TypeHello:
			if err := m.hello(f.Payload); err != nil {
				_ = m.Kill()
				return nil, err
			}
		}
	}
}

// steered takes the guest's answer for a steering file: valid, for a command with a
// steering directory, naming a file it was sent and has not answered for.
func (m *Machine) steered(input *Input, payload []byte) error {
	if input == nil || !input.cfg.Steering {
		return errors.New("guest answered for a steering file, but the command has no steering directory: the VM was killed")
	}
	var ack agentproto.SteerAck
	if err := agentproto.Decode(payload, &ack); err != nil {
		return fmt.Errorf("guest sent an invalid steering answer (the VM was killed): %w", err)
	}
	if err := input.placed(ack); err != nil {
		return fmt.Errorf("%w: the VM was killed", err)
	}
	return nil
}

// oneInput is a Run's Input, nil when there is none.
func oneInput(in []*Input) (*Input, error) {
	switch {
	case len(in) > 1:
		return nil, fmt.Errorf("a command takes one Input, not %d", len(in))
	case len(in) == 1:
		return in[0], nil
	}
	return nil, nil
}

// RestoreError says a warm start failed before the agent said anything: QEMU exited
// with an error instead of loading the snapshot, so the command did not run.
type RestoreError struct {
	// Snapshot is the snapshot directory that failed to restore.
	Snapshot string
	// QEMU is the end of QEMU's error output.
	QEMU string
}

func (e *RestoreError) Error() string {
	return fmt.Sprintf("failed to restore snapshot %s (delete it, or boot cold: leave Config.SnapshotDir empty): %s", e.Snapshot, e.QEMU)
}

// ended explains a broken channel: a timed-out result when the wall-time limit killed
// the VM, ErrKilled when Kill did, a RestoreError when a restore failed before the agent
// said anything, else an error with QEMU's and the console's last words.
func (m *Machine) ended(err error) (*Result, error) {
	m.mu.Lock()
	timedOut, killed := m.timedOut, m.killed
	m.mu.Unlock()
	if timedOut {
		return &Result{ExitCode: -1, TimedOut: true, Error: fmt.Sprintf("wall-time limit of %v reached; the VM was killed", m.cfg.Timeout)}, nil
	}
	if killed {
		return nil, fmt.Errorf("failed to finish the command: %w", ErrKilled)
	}
	select {
	case <-m.exited:
		m.mu.Lock()
		code := m.exitCode
		m.mu.Unlock()
		if m.restoring != "" && !m.heard && code > 0 {
			// QEMU gave up before the restored agent said anything: it could not load the
			// snapshot, and the command never ran.
			return nil, &RestoreError{Snapshot: m.restoring, QEMU: m.exitTail()}
		}
		return nil, fmt.Errorf("agent channel broke before a result; qemu exited: %s (console: %s): %w", m.exitTail(), tailFile(m.ConsolePath()), err)
	case <-time.After(100 * time.Millisecond):
	}
	return nil, fmt.Errorf("agent channel broke before a result (console: %s): %w", tailFile(m.ConsolePath()), err)
}

// CollectOut copies what the guest's /out held after the last command to dest, treating
// it as untrusted. Call it after Run returned a result, while the VM still runs (its out
// disk goes with it); not during a Run, when the agent may be rewriting the disk.
func (m *Machine) CollectOut(dest string) (*vmdisk.Report, error) {
	m.mu.Lock()
	running := m.running
	m.mu.Unlock()
	if running {
		return nil, errors.New("a command is running: collect /out after Run returns")
	}
	select {
	case <-m.exited:
		return nil, errors.New("the VM has ended and its out disk with it: collect /out before Shutdown, Kill or the wall-time limit")
	default:
	}
	return vmdisk.Extract(filepath.Join(m.runDir, "out.raw"), dest, vmdisk.Limits{MaxBytes: m.cfg.OutMaxBytes, MaxFiles: m.cfg.OutMaxFiles})
}
