package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bumperdev/bumper/sandbox/image"
	"github.com/bumperdev/bumper/sandbox/reaper"
	"github.com/bumperdev/bumper/sandbox/vmdisk"
)

// saveRecord writes the run record so a reaper can clean up if this process dies.
func (m *Machine) saveRecord() error {
	return reaper.Write(m.cfg.StateDir, *m.record)
}

func (m *Machine) start(ctx context.Context) error {
	var err error
	if m.record == nil {
		rec, err := reaper.Own(m.id)
		if err != nil {
			return err
		}
		m.record = &rec
	}
	if m.ownRecord {
		if err := m.saveRecord(); err != nil {
			return err
		}
		m.cleanups.Push("run record", func() error { return reaper.Remove(m.cfg.StateDir, m.id) })
	}
	if err := m.step(StepRunDir, func() error {
		m.runDir, err = os.MkdirTemp(m.cfg.RunDir, "bumper-"+m.id+"-")
		if err != nil {
			return fmt.Errorf("failed to create run directory in %s: %w", m.cfg.RunDir, err)
		}
		dir := m.runDir
		m.cleanups.Push("run directory", func() error {
			if m.runDirHeld() {
				return nil // powerOff's caller still reads the root overlay and removes it
			}
			return os.RemoveAll(dir)
		})
		m.record.RunDir = dir
		return m.saveRecord()
	}); err != nil {
		return err
	}
	if err := m.step(StepAccel, func() error {
		m.accel = ChooseAccel(ctx, m.cfg)
		m.log.Info().Str(logKeyAccel, m.accel.Accel).Str(logKeyReason, m.accel.Reason).Msg("accelerator chosen")
		return nil
	}); err != nil {
		return err
	}
	layout := keyLayout(m.cfg, m.accel.Accel)
	layout.outDisk = filepath.Join(m.runDir, "out.raw")
	layout.agentSock = filepath.Join(m.runDir, "agent.sock")
	layout.console = m.ConsolePath()
	layout.qmpSock = filepath.Join(m.runDir, "qmp.sock")
	if layout.accel == AccelTCG {
		khz, err := hostTSCkHz()
		if err != nil {
			return err
		}
		layout.tscKHz = khz
	}
	var backing, backingFormat, template string
	if err := m.step(StepSnapshotLookup, func() error {
		backing, backingFormat = m.cfg.Rootfs, m.cfg.RootfsFormat
		switch {
		case m.snapshotTo != "":
			m.boot = BootInfo{Mode: BootSnapshot, Reason: "booting to take a snapshot"}
		case m.cfg.SnapshotDir == "":
			m.boot = BootInfo{Mode: BootCold, Reason: "warm starts not configured"}
		default:
			snap, reason := findSnapshot(m.cfg.SnapshotDir, layout)
			if snap == nil {
				m.boot = BootInfo{Mode: BootCold, Reason: reason}
				break
			}
			m.boot = BootInfo{Mode: BootWarm, Reason: "restoring snapshot " + snap.Key}
			m.restoring = snap.dir
			backing, backingFormat, template = snap.rootPath(), "qcow2", snap.overlayPath()
			layout.incoming = snap.statePath()
			// The kernel command line must be the one the snapshot booted with.
			layout.tscKHz = snap.TSCkHz
		}
		m.log.Info().Str(logKeyBoot, m.boot.Mode).Str(logKeyReason, m.boot.Reason).Msg("boot mode")
		return nil
	}); err != nil {
		return err
	}
	layout.overlay = filepath.Join(m.runDir, "root.qcow2")
	if m.snapshotTo != "" {
		layout.overlay = filepath.Join(m.snapshotTo, snapshotRoot)
	}
	if err := m.step(StepOverlay, func() error {
		if template != "" {
			return copyFile(template, layout.overlay)
		}
		return createOverlay(ctx, backing, backingFormat, m.cfg.DiskSizeMB, layout.overlay)
	}); err != nil {
		return err
	}
	if m.cfg.WorkspaceDir != "" || layout.fixedDisks {
		layout.workspace = filepath.Join(m.runDir, "workspace.ext4")
		if err := m.step(StepWorkspaceDisk, func() error {
			switch {
			case m.cfg.WorkspaceDir == "":
				return vmdisk.CreateOutDisk(layout.workspace, int64(m.cfg.WorkspaceDiskMB)<<20)
			case layout.fixedDisks:
				return vmdisk.BuildDiskSized(ctx, m.cfg.WorkspaceDir, layout.workspace, int64(m.cfg.WorkspaceDiskMB)<<20)
			}
			return vmdisk.BuildDisk(ctx, m.cfg.WorkspaceDir, layout.workspace, int64(m.cfg.WorkspaceFreeMB)<<20)
		}); err != nil {
			return err
		}
	}
	if err := m.step(StepOutDisk, func() error {
		// A little over the cap so the tar's trailer fits after a maximal archive.
		return vmdisk.CreateOutDisk(layout.outDisk, m.cfg.OutMaxBytes+1<<20)
	}); err != nil {
		return err
	}
	m.layout = layout
	if err := m.step(StepQEMU, func() error { return m.launch(layout) }); err != nil {
		return err
	}
	if m.boot.Mode == BootWarm {
		return m.step(StepAgentChannel, func() error { return m.connect(ctx, layout.agentSock, false) })
	}
	return m.step(StepAgentHello, func() error { return m.connect(ctx, layout.agentSock, true) })
}

func createOverlay(ctx context.Context, backing, format string, sizeMB int, overlay string) error {
	args := []string{"create", "-q", "-f", "qcow2", "-b", backing, "-F", format, overlay}
	if sizeMB > 0 {
		args = append(args, strconv.Itoa(sizeMB)+"M")
	}
	return qemuImg(ctx, args)
}

// createOverlayUnsafe creates an overlay of size bytes on a backing file that need not
// exist yet (qemu-img -u).
func createOverlayUnsafe(ctx context.Context, backing, format string, size int64, overlay string) error {
	return qemuImg(ctx, []string{"create", "-q", "-u", "-f", "qcow2", "-b", backing, "-F", format, overlay, strconv.FormatInt(size, 10)})
}

func qemuImg(ctx context.Context, args []string) error {
	out, err := exec.CommandContext(ctx, "qemu-img", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("failed to create the qcow2 overlay (is qemu-utils installed?): %w: %s", err, out)
	}
	return nil
}

// copyFile copies a small regular file (a template overlay) to a new file dst.
func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("failed to read %s: %w", src, err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		return fmt.Errorf("failed to write %s: %w", dst, err)
	}
	return nil
}

// rootDiskBytes is the virtual size of a run's root disk: the configured size, or the
// image's.
func rootDiskBytes(cfg Config) (int64, error) {
	if cfg.DiskSizeMB > 0 {
		return int64(cfg.DiskSizeMB) << 20, nil
	}
	size, err := image.DiskSize(cfg.Rootfs, cfg.RootfsFormat)
	if err != nil {
		return 0, fmt.Errorf("failed to size the root disk: %w", err)
	}
	return size, nil
}

func (m *Machine) launch(l qemuLayout) error {
	var extra []*os.File
	if n := m.cfg.Network; n != nil {
		extra = append(extra, n.TAP)
	}
	if l.incoming != "" {
		// QEMU reads the saved state straight from this descriptor: about twice as fast
		// as the `exec:cat` pipe, and it works for an unprivileged QEMU user too.
		state, err := os.Open(l.incoming)
		if err != nil {
			return fmt.Errorf("failed to open the snapshot state: %w", err)
		}
		defer state.Close()
		extra = append(extra, state)
		l.incomingFD = 2 + len(extra)
	}
	cmd := exec.Command(m.cfg.QEMU, l.args()...)
	cmd.Env = qemuEnv()
	cmd.ExtraFiles = extra
	cmd.Stdin = nil
	stderr, err := os.Create(filepath.Join(m.runDir, "qemu.stderr"))
	if err != nil {
		return fmt.Errorf("failed to create qemu log: %w", err)
	}
	defer stderr.Close()
	cmd.Stdout, cmd.Stderr = stderr, stderr
	// Its own process group, so a Ctrl-C at the terminal reaches Bumper, which then
	// shuts the VM down in order, rather than QEMU directly. Pdeathsig ends QEMU if
	// Bumper dies; the reaper covers the rest.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if cred, err := parseUser(m.cfg.QEMUUser); err != nil {
		return err
	} else if cred != nil {
		cmd.SysProcAttr.Credential = cred
		for _, d := range []string{m.runDir, m.snapshotTo} {
			if d == "" {
				continue
			}
			if err := chownAll(d, int(cred.Uid), int(cred.Gid)); err != nil {
				return err
			}
		}
	}
	// Linux sends Pdeathsig when the *thread* that started QEMU exits, not the process
	// (golang/go#27505), and Go ends threads that a goroutine left locked (netns does).
	// So QEMU is started, and waited for, on a thread that is held until QEMU is gone.
	started, proceed := make(chan error), make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := cmd.Start()
		started <- err
		if err == nil {
			<-proceed
			m.reap()
		}
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("failed to start %s: %w", m.cfg.QEMU, err)
	}
	defer close(proceed)
	m.cmd = cmd
	m.record.QEMUPID = cmd.Process.Pid
	if start, err := reaper.ProcessStart(cmd.Process.Pid); err == nil {
		m.record.QEMUStart = start
	}
	m.timer = time.AfterFunc(m.cfg.Timeout, func() {
		m.mu.Lock()
		m.timedOut = true
		m.mu.Unlock()
		m.log.Warn().Dur(logKeyDuration, m.cfg.Timeout).Msg("wall-time limit reached; killing the VM")
		m.killProcess()
	})
	m.mu.Lock()
	m.proc = cmd.Process
	killed := m.killed
	m.mu.Unlock()
	if killed {
		// Kill came while QEMU was being launched and found no process to end.
		_ = cmd.Process.Kill()
		return fmt.Errorf("failed to launch QEMU: %w", ErrKilled)
	}
	return m.saveRecord()
}

// chownAll gives the run directory to QEMU's user so it can open its disks and sockets.
func chownAll(dir string, uid, gid int) error {
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		return fmt.Errorf("failed to give the run directory to uid %d: %w", uid, err)
	}
	return nil
}

// reap waits for QEMU, runs the cleanups and releases Wait.
func (m *Machine) reap() {
	err := m.cmd.Wait()
	m.timer.Stop()
	// Read QEMU's last words before the cleanups delete the run directory.
	m.mu.Lock()
	m.qemuTail = tailFile(filepath.Join(m.runDir, "qemu.stderr"))
	m.exitCode = m.cmd.ProcessState.ExitCode()
	m.mu.Unlock()
	close(m.exited)
	cerr := m.cleanups.Run(&m.log)
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		// A killed QEMU is how Kill and timeouts work; only report other failures.
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			err = nil
		}
	}
	if err != nil {
		err = fmt.Errorf("qemu failed: %w: %s", err, m.exitTail())
	}
	m.finish(errors.Join(err, cerr))
}

// exitTail returns the end of QEMU's stderr once it has exited.
func (m *Machine) exitTail() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.qemuTail
}

// tailFile returns the last lines of a log file for error messages.
func tailFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log)"
	}
	s := strings.TrimSpace(string(b))
	if len(s) > 600 {
		s = "…" + s[len(s)-600:]
	}
	if s == "" {
		return "(empty)"
	}
	return s
}

func (m *Machine) finish(err error) {
	m.mu.Lock()
	m.waitErr = err
	m.mu.Unlock()
	close(m.done)
}
