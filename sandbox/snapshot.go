package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/digitalocean/go-qemu/qmp"

	"github.com/bumperdev/bumper/internal/cachedir"
	"github.com/bumperdev/bumper/sandbox/agentproto"
)

// snapshotLayoutVersion changes whenever the device layout or the agent's boot-time
// behavior changes in a way that invalidates saved snapshots.
const snapshotLayoutVersion = 3

// Files of a snapshot directory.
const (
	snapshotRoot = "root.qcow2" // the root disk as it was when the VM was saved
	// snapshotOverlay is an empty overlay on snapshotRoot that each restore copies:
	// a copy takes well under a millisecond, qemu-img create takes 10–20 ms.
	snapshotOverlay = "overlay.qcow2"
	snapshotState   = "vm.state"  // QEMU's migration stream
	snapshotMeta    = "meta.json" // written last: a present meta means complete
)

type snapshot struct {
	Key     string    `json:"key"`
	TSCkHz  int       `json:"tsc_khz"`
	Created time.Time `json:"created"`
	// Rootfs is the image root filesystem the snapshot's disk is an overlay on; once it
	// is gone the snapshot is dead (see PruneSnapshots).
	Rootfs string `json:"rootfs"`
	dir    string
}

func (s *snapshot) rootPath() string    { return filepath.Join(s.dir, snapshotRoot) }
func (s *snapshot) statePath() string   { return filepath.Join(s.dir, snapshotState) }
func (s *snapshot) overlayPath() string { return filepath.Join(s.dir, snapshotOverlay) }

// snapshotKey identifies everything a restore must match: the image files, the VM's
// shape, the device layout and the agent protocol. Run-specific paths are left out (they
// may differ). The protocol is there because a restore does not wait for the agent's
// hello (which may never come: the snapshotted agent had heard the host already), so the
// hello's version check would not catch a snapshot of another protocol's agent; with
// the version in the key, such a host boots cold, where the check does happen.
func snapshotKey(l qemuLayout) (string, error) {
	ids := map[string]string{}
	for name, p := range map[string]string{"kernel": l.cfg.Kernel, "initrd": l.cfg.Initrd, "rootfs": l.cfg.Rootfs, "qemu": l.cfg.QEMU} {
		id, err := fileID(p)
		if err != nil {
			return "", err
		}
		ids[name] = id
	}
	in := struct {
		Version                int
		Files                  map[string]string
		Cmdline                string
		CPUs, MemoryMB, DiskMB int
		Accel                  string
		NIC                    bool
		MAC                    string
		WorkspaceMB            int
		OutBytes               int64
		WarmUp                 [][]string
		Protocol               int
	}{snapshotLayoutVersion, ids, l.cfg.Cmdline, l.cfg.CPUs, l.cfg.MemoryMB, l.cfg.DiskSizeMB, l.accel,
		l.tapFD > 0, l.mac, l.cfg.WorkspaceDiskMB, l.cfg.OutMaxBytes, l.cfg.WarmUp, agentproto.Version}
	b, err := json.Marshal(in)
	if err != nil {
		return "", fmt.Errorf("failed to encode snapshot key: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16]), nil
}

// fileID names a file's version cheaply: path, size and modification time (images are
// content-addressed directories, so a changed image is a changed path).
func fileID(p string) (string, error) {
	if !filepath.IsAbs(p) {
		if lp, err := exec.LookPath(p); err == nil {
			p = lp
		}
	}
	info, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("failed to identify %s for the snapshot key: %w", p, err)
	}
	return fmt.Sprintf("%s:%d:%d", p, info.Size(), info.ModTime().UnixNano()), nil
}

// findSnapshot returns the snapshot matching l, or why there is none.
func findSnapshot(dir string, l qemuLayout) (*snapshot, string) {
	key, err := snapshotKey(l)
	if err != nil {
		return nil, err.Error()
	}
	sd := filepath.Join(dir, key)
	b, err := os.ReadFile(filepath.Join(sd, snapshotMeta))
	if err != nil {
		return nil, fmt.Sprintf("no snapshot for this image and VM shape (key %s); PrepareSnapshot makes one", key)
	}
	var s snapshot
	if err := json.Unmarshal(b, &s); err != nil || s.Key != key {
		return nil, fmt.Sprintf("snapshot %s is corrupt; delete %s", key, sd)
	}
	s.dir = sd
	for _, f := range []string{s.rootPath(), s.statePath(), s.overlayPath()} {
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Sprintf("snapshot %s is incomplete (%v); delete %s", key, err, sd)
		}
	}
	// PruneSnapshots keeps what was used lately; failing to say so only risks a re-snapshot.
	_ = cachedir.MarkUsed(sd)
	return &s, ""
}

// snapshotFreeMargin is the room a snapshot needs besides the guest's memory: the root
// overlay the warm-up wrote, and the state file's own overhead.
const snapshotFreeMargin = 256 << 20

// PrepareSnapshot makes sure a snapshot for cfg exists in cfg.SnapshotDir, booting a VM
// and saving it once the agent is idle when there is none. It returns whether it made
// one. cfg.Network, when set, must be a TAP the caller can lend for the few seconds this
// takes (the run's own TAP works: QEMU releases it on exit).
func PrepareSnapshot(ctx context.Context, cfg Config) (bool, error) {
	return prepareSnapshot(ctx, cfg, nil)
}

// prepareSnapshot is PrepareSnapshot; track, when set, is told the machine it boots
// before it starts (a Session's Kill must reach it too) and stops it by failing.
func prepareSnapshot(ctx context.Context, cfg Config, track func(*Machine) error) (bool, error) {
	if cfg.SnapshotDir == "" {
		return false, errors.New("PrepareSnapshot needs Config.SnapshotDir")
	}
	cfg.WorkspaceDir = ""
	m, err := New(ctx, cfg)
	if err != nil {
		return false, err
	}
	// The layout (and so the key) is known only once the accelerator is chosen, so look
	// for an existing snapshot with a dry layout first.
	l := keyLayout(m.cfg, ChooseAccel(ctx, m.cfg).Accel)
	if s, _ := findSnapshot(cfg.SnapshotDir, l); s != nil {
		return false, nil
	}
	key, err := snapshotKey(l)
	if err != nil {
		return false, err
	}
	if err := os.MkdirAll(cfg.SnapshotDir, 0o755); err != nil {
		return false, fmt.Errorf("failed to create %s: %w", cfg.SnapshotDir, err)
	}
	// A snapshot holds the guest's memory and its root overlay. Without room for them the
	// save would fail after a whole cold boot; the caller boots cold at once instead.
	if err := cachedir.EnsureFree(cfg.SnapshotDir, uint64(m.cfg.MemoryMB)<<20+snapshotFreeMargin, "a snapshot of the VM (its memory and root overlay)"); err != nil {
		return false, err
	}
	tmp, err := os.MkdirTemp(cfg.SnapshotDir, snapshotTmpPrefix+key+"-")
	if err != nil {
		return false, fmt.Errorf("failed to create a snapshot directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	// QEMU may run as another user and must reach the overlay it writes here.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return false, fmt.Errorf("failed to open up the snapshot directory: %w", err)
	}
	m.snapshotTo = tmp
	if track != nil {
		if err := track(m); err != nil {
			return false, err
		}
	}
	if err := m.Start(ctx); err != nil {
		return false, fmt.Errorf("failed to boot the VM to snapshot: %w", err)
	}
	if err := m.step(StepWarmUp, func() error { return m.prepare(ctx) }); err != nil {
		_ = m.Kill()
		return false, err
	}
	if err := m.saveState(filepath.Join(tmp, snapshotState)); err != nil {
		_ = m.Kill()
		return false, err
	}
	// QEMU quits once the state is saved; wait for it whatever ctx says, so the
	// snapshot directory is not removed under it.
	if err := m.waitDone(); err != nil {
		return false, fmt.Errorf("the snapshotted VM did not exit cleanly: %w", err)
	}
	meta, err := json.Marshal(snapshot{Key: key, TSCkHz: m.layout.tscKHz, Created: time.Now().UTC(), Rootfs: m.cfg.Rootfs})
	if err != nil {
		return false, fmt.Errorf("failed to encode snapshot meta: %w", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, snapshotMeta), meta, 0o644); err != nil {
		return false, fmt.Errorf("failed to write snapshot meta: %w", err)
	}
	// The root overlay is now a read-only base for every restore.
	if err := os.Chmod(filepath.Join(tmp, snapshotRoot), 0o444); err != nil {
		return false, fmt.Errorf("failed to protect the snapshot's root disk: %w", err)
	}
	// The template overlay names the root by the path it will have once published.
	size, err := rootDiskBytes(m.cfg)
	if err != nil {
		return false, err
	}
	final := filepath.Join(cfg.SnapshotDir, key)
	if err := createOverlayUnsafe(ctx, filepath.Join(final, snapshotRoot), "qcow2", size, filepath.Join(tmp, snapshotOverlay)); err != nil {
		return false, err
	}
	if err := os.Rename(tmp, final); err != nil {
		if errors.Is(err, os.ErrExist) || strings.Contains(err.Error(), "not empty") {
			return false, nil // another process made the same snapshot meanwhile
		}
		return false, fmt.Errorf("failed to publish snapshot %s: %w", key, err)
	}
	return true, nil
}

// saveState migrates the running VM into file over QMP, waits for completion and makes
// QEMU quit.
func (m *Machine) saveState(file string) error {
	mon, err := qmp.NewSocketMonitor("unix", m.layout.qmpSock, 5*time.Second)
	if err != nil {
		return fmt.Errorf("failed to reach QEMU's QMP socket: %w", err)
	}
	if err := mon.Connect(); err != nil {
		return fmt.Errorf("failed to connect to QMP: %w", err)
	}
	defer mon.Disconnect()
	cmd, err := json.Marshal(map[string]any{"execute": "migrate", "arguments": map[string]string{"uri": "exec:cat > " + shellQuote(file)}})
	if err != nil {
		return fmt.Errorf("failed to encode migrate: %w", err)
	}
	if _, err := mon.Run(cmd); err != nil {
		return fmt.Errorf("failed to start saving the VM: %w", err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		raw, err := mon.Run([]byte(`{"execute":"query-migrate"}`))
		if err != nil {
			return fmt.Errorf("failed to query the VM save: %w", err)
		}
		var resp struct {
			Return struct {
				Status    string `json:"status"`
				ErrorDesc string `json:"error-desc"`
			} `json:"return"`
		}
		if err := json.Unmarshal(raw, &resp); err != nil {
			return fmt.Errorf("failed to parse query-migrate: %w", err)
		}
		switch resp.Return.Status {
		case "completed":
			_, _ = mon.Run([]byte(`{"execute":"quit"}`))
			return nil
		case "failed", "cancelled": // QMP's status, spelled its way
			return fmt.Errorf("saving the VM failed: %s %s", resp.Return.Status, resp.Return.ErrorDesc)
		}
		if time.Now().After(deadline) {
			return errors.New("saving the VM did not finish within 2 minutes")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// snapshotTmpPrefix starts the name of a snapshot still being made.
const snapshotTmpPrefix = ".tmp-"

// PruneSnapshots removes from dir the snapshots no run restored since cutoff, those whose
// image root filesystem is gone (no run can match them again), snapshots left half-made
// for over an hour, and snapshots moved aside as broken over a week ago. With dryRun it only reports what it would remove.
func PruneSnapshots(dir string, cutoff time.Time, dryRun bool) ([]cachedir.Removed, error) {
	dead := func(path string) string {
		b, err := os.ReadFile(filepath.Join(path, snapshotMeta))
		if err != nil {
			return "" // an older or foreign entry: only its age decides
		}
		var s snapshot
		if err := json.Unmarshal(b, &s); err != nil || s.Rootfs == "" {
			return ""
		}
		if _, err := os.Stat(s.Rootfs); errors.Is(err, os.ErrNotExist) {
			return "its image " + filepath.Dir(s.Rootfs) + " is gone"
		}
		return ""
	}
	out, err := cachedir.Prune(dir, cutoff, dead, dryRun)
	stale, serr := cachedir.PruneStale(dir, snapshotTmpPrefix, time.Now().Add(-time.Hour), "left half-made by an interrupted run", dryRun)
	broken, berr := cachedir.PruneStale(dir, brokenPrefix, time.Now().Add(-7*24*time.Hour), "failed to restore over a week ago", dryRun)
	return append(append(out, stale...), broken...), errors.Join(err, serr, berr)
}

// brokenPrefix starts the name of a snapshot moved aside because it failed to restore;
// PruneSnapshots removes these after a week.
const brokenPrefix = ".broken-"

// quarantineSnapshot moves a snapshot that failed to restore out of the lookup's way and
// says what happened.
func quarantineSnapshot(re *RestoreError) string {
	aside := filepath.Join(filepath.Dir(re.Snapshot), brokenPrefix+filepath.Base(re.Snapshot)+"-"+time.Now().UTC().Format("20060102T150405"))
	if err := os.Rename(re.Snapshot, aside); err != nil {
		return fmt.Sprintf("%v; moving it aside failed too (%v): delete it", re, err)
	}
	return fmt.Sprintf("snapshot %s failed to restore (%s); moved to %s, the next run makes a new one", filepath.Base(re.Snapshot), re.QEMU, aside)
}
