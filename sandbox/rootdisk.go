package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/internal/cleanup"
	"github.com/bumperdev/bumper/sandbox/agentproto"
)

// PowerOffTimeout bounds how long SaveRootDisk waits for the guest to sync its disks and
// power off by itself. It is much longer than ShutdownGrace: a guest that has just
// written a Go toolchain and a module cache may have a lot to write back under TCG, and
// escalating to QEMU's quit or a kill meanwhile would save a half-written disk.
const PowerOffTimeout = 2 * time.Minute

// SaveRootDisk shuts the session's VM down cleanly and writes its root disk (the image's
// root file system with everything the commands left on it, checked with e2fsck) to
// dest as a qcow2 delta whose backing file is the image's template (Config.Rootfs, by
// its absolute path, in Config.RootfsFormat): only what differs from the template is in
// dest. It is what image.Derive takes to make an environment's image. Call it after the
// session's last Run: the guest agent syncs the disks and powers off (waiting up to
// PowerOffTimeout; it is never forced, which could lose writes), then the run's overlay
// (and its backing chain) is flattened into a raw file in the run directory, checked,
// and compared with the template into the delta (saveDelta). dest appears complete or
// not at all (a temporary file in its directory is renamed). It is refused before
// Start, after Kill or Close, during a Run, and a second time; Run is refused after it.
// Close still takes down the rest (proxy, network, run record).
func (s *Session) SaveRootDisk(ctx context.Context, dest string) error {
	s.mu.Lock()
	refuse := s.unusableLocked("the root disk was saved already and the VM is shut down; a session saves it once",
		"session not started: call Start and Run first (or Start failed)",
		"a command is running; save the root disk after the last Run returns")
	if refuse != nil {
		s.mu.Unlock()
		return fmt.Errorf("failed to save the root disk: %w", refuse)
	}
	// Set now, not on success: whatever happens next, the VM is gone.
	s.busy, s.saved = true, true
	m := s.m
	s.mu.Unlock()
	defer s.idle()
	ctx, cancel := s.withKill(ctx)
	defer cancel()
	began := time.Now()
	overlay, release, err := m.powerOff(ctx, PowerOffTimeout)
	defer func() {
		if rerr := release(); rerr != nil {
			s.log.Warn().Err(rerr).Str(cleanup.LogKey, "run directory").Msg("cleanup failed")
		}
	}()
	if err != nil {
		if s.killedNow() {
			s.log.Debug().Err(err).Msg("root disk save ended by Kill")
			return fmt.Errorf("failed to save the root disk: %w", ErrKilled)
		}
		return fmt.Errorf("failed to save the root disk: %w", err)
	}
	down := time.Since(began)
	template, err := filepath.Abs(m.cfg.Rootfs)
	if err != nil {
		return fmt.Errorf("failed to save the root disk: %w", err)
	}
	if err := saveDelta(ctx, overlay, template, m.cfg.RootfsFormat, dest); err != nil {
		return fmt.Errorf("failed to save the root disk: %w", err)
	}
	s.log.Info().Str(logKeyPath, dest).Dur(logKeyPowerOff, down).Dur(logKeyDuration, time.Since(began)).Msg("root disk saved")
	return nil
}

// powerOff asks the agent to power the guest off (it syncs the disks first) and waits
// up to wait for QEMU to exit by itself, with status 0. It returns the root overlay,
// which the machine's cleanups leave in place, and release, which removes the run
// directory; call release whatever the error. On any failure QEMU is killed.
func (m *Machine) powerOff(ctx context.Context, wait time.Duration) (overlay string, release func() error, err error) {
	m.mu.Lock()
	m.holdRunDir = true
	dir, overlay := m.runDir, m.layout.overlay
	m.mu.Unlock()
	release = func() error {
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("failed to remove the run directory: %w", err)
		}
		return nil
	}
	fail := func(err error) (string, func() error, error) {
		m.killProcess()
		_ = m.waitDone()
		return "", release, err
	}
	select {
	case <-m.exited:
		return fail(errors.New("the VM had already ended (wall-time limit, Kill or a crash); its root disk may be incomplete"))
	default:
	}
	if m.w == nil {
		return fail(errors.New("machine not started"))
	}
	if err := m.w.Write(agentproto.TypeShutdown, nil); err != nil {
		return fail(fmt.Errorf("failed to ask the agent to power off: %w", err))
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-m.exited:
	case <-ctx.Done():
		return fail(fmt.Errorf("stopped waiting for the guest to power off: %w", context.Cause(ctx)))
	case <-timer.C:
		return fail(fmt.Errorf("the guest did not power off within %v, so its root disk may be incomplete (console: %s)", wait, tailFile(m.ConsolePath())))
	}
	werr := m.waitDone()
	m.mu.Lock()
	code, killed, timedOut := m.exitCode, m.killed, m.timedOut
	m.mu.Unlock()
	switch {
	case timedOut:
		return "", release, fmt.Errorf("the wall-time limit of %v ended the VM while it powered off", m.cfg.Timeout)
	case killed:
		return "", release, fmt.Errorf("the VM was killed while it powered off: %w", ErrKilled)
	case code != 0:
		return "", release, fmt.Errorf("QEMU exited with status %d instead of powering off: %s", code, m.exitTail())
	case werr != nil:
		// The cleanups' errors: the overlay is intact, but say what failed.
		m.log.Warn().Err(werr).Msg("cleanup after power-off failed")
	}
	return overlay, release, nil
}

// saveDelta writes the root disk the qcow2 overlay (and its backing chain: the image's
// template, and a snapshot's root disk after a warm start) holds to dest as a qcow2
// delta over template (of format), made and checked clean first. e2fsck needs a raw
// file, so the chain is first flattened into a sparse raw one beside the overlay (the
// run directory, which the caller removes), checked there, and the overlay removed to
// free its space; then an empty qcow2 over the checked file is rebased onto the
// template, which compares the two and copies into it only the clusters that differ
// (qemu-img rebase's safe mode), and qemu-img compare checks that the delta reads
// exactly as the checked file. A warm start's snapshot disk is thereby folded in. It
// writes a temporary file beside dest and renames it, so dest is never partial.
func saveDelta(ctx context.Context, overlay, template, format, dest string) error {
	checked := filepath.Join(filepath.Dir(overlay), "root-checked.raw")
	defer os.Remove(checked)
	// -S 4k: every run of at least 4 KiB of zeros stays a hole, so the file costs about
	// what the file system holds, not its size.
	if err := qemuImgRun(ctx, "flatten the root overlay to raw", "convert", "-q", "-f", "qcow2", "-O", "raw", "-S", "4k", overlay, checked); err != nil {
		return err
	}
	if err := checkExt4(ctx, checked); err != nil {
		return err
	}
	if err := os.Remove(overlay); err != nil {
		return fmt.Errorf("failed to remove the root overlay after flattening it: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dest), "."+filepath.Base(dest)+".tmp-")
	if err != nil {
		return fmt.Errorf("failed to create a temporary file beside %s: %w", dest, err)
	}
	name := tmp.Name()
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("failed to create a temporary file beside %s: %w", dest, err)
	}
	done := false
	defer func() {
		if !done {
			_ = os.Remove(name)
		}
	}()
	if err := qemuImgRun(ctx, "start the delta", "create", "-q", "-f", "qcow2", "-b", checked, "-F", "raw", name); err != nil {
		return err
	}
	if err := qemuImgRun(ctx, "make the delta over the template", "rebase", "-q", "-f", "qcow2", "-b", template, "-F", format, name); err != nil {
		return err
	}
	if err := qemuImgRun(ctx, "check the delta against the checked disk", "compare", "-q", "-f", "qcow2", "-F", "raw", name, checked); err != nil {
		return err
	}
	// Like an image's template: QEMU's user reads it, nobody writes it.
	if err := os.Chmod(name, 0o644); err != nil {
		return fmt.Errorf("failed to set the root disk's permissions: %w", err)
	}
	if err := os.Rename(name, dest); err != nil {
		return fmt.Errorf("failed to move the root disk into place: %w", err)
	}
	done = true
	return nil
}

// qemuImgRun runs qemu-img with args; what says what for an error.
func qemuImgRun(ctx context.Context, what string, args ...string) error {
	if out, err := exec.CommandContext(ctx, "qemu-img", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("failed to %s (qemu-img %s; is qemu-utils installed?): %w: %s", what, args[0], err, bytes.TrimSpace(out))
	}
	return nil
}

// checkExt4 makes the ext4 file system in file clean and checks it. The guest powers off
// with its root still mounted: sync wrote everything back, but without a journal ext4
// leaves the file system marked "not clean" while mounted and the superblock's free
// counts behind, which e2fsck's preen mode (-p) fixes; anything preen cannot fix is an
// error. A forced read-only check (-fn) must then find nothing at all.
func checkExt4(ctx context.Context, file string) error {
	out, err := exec.CommandContext(ctx, "e2fsck", "-f", "-p", file).CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		// Errors corrected, which is what preen is for; what it did is worth a line.
		zerolog.Ctx(ctx).Info().Str(logKeyOutput, string(bytes.TrimSpace(out))).Msg("e2fsck preened the saved root disk")
	default:
		return fmt.Errorf("failed to check the root file system (e2fsck -fp; is e2fsprogs installed?): %w: %s", err, bytes.TrimSpace(out))
	}
	if out, err := exec.CommandContext(ctx, "e2fsck", "-f", "-n", file).CombinedOutput(); err != nil {
		return fmt.Errorf("failed to check the root file system: e2fsck -fn still finds problems after preening: %w: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// runDirHeld says powerOff's caller will remove the run directory.
func (m *Machine) runDirHeld() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.holdRunDir
}
