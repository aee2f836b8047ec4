package sandbox

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/internal/testgate"
	"github.com/bumperdev/bumper/sandbox/image/imagetest"
)

func TestWarmStart(t *testing.T) {
	testgate.RequiresQEMU(t)
	im := imagetest.Image(t)
	ctx := testContext(t)
	cfg := testImageConfig(t, im)
	cfg.SnapshotDir = filepath.Join(t.TempDir(), "snapshots")
	cfg.WorkspaceDiskMB = 512
	// A warm-up command that leaves a mark in the guest's tmpfs, which only a VM restored
	// from the prepared snapshot can see.
	cfg.WarmUp = append(append([][]string{}, DefaultWarmUp...), []string{"sh", "-c", "echo warmed > /tmp/warm-mark"})

	// Without a snapshot the machine cold-boots and says why.
	m, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if b := m.Boot(); b.Mode != BootCold || b.Reason == "" {
		t.Errorf("boot without snapshot = %+v, want cold with a reason", b)
	}
	if err := m.Kill(); err != nil {
		t.Fatal(err)
	}

	made, err := PrepareSnapshot(ctx, cfg)
	if err != nil || !made {
		t.Fatalf("PrepareSnapshot = %v, %v; want a new snapshot", made, err)
	}
	if made, err := PrepareSnapshot(ctx, cfg); err != nil || made {
		t.Fatalf("second PrepareSnapshot = %v, %v; want the existing one reused", made, err)
	}
	checkTemplateOverlay(t, cfg.SnapshotDir)

	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "in.txt"), []byte("warm input\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Two restores of one snapshot, each with its own overlay and workspace.
	for i, want := range []string{"warm input\n", "warm input\n"} {
		c := cfg
		c.WorkspaceDir = ws
		m, err := New(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Start(ctx); err != nil {
			t.Fatalf("restore %d: %v", i, err)
		}
		if b := m.Boot(); b.Mode != BootWarm {
			t.Fatalf("restore %d booted %+v, want warm", i, b)
		}
		var out, errOut bytes.Buffer
		res, err := m.Run(ctx, []string{"sh", "-c", "cat in.txt; cat /tmp/warm-mark; echo changed > /etc/motd-test 2>/dev/null; date +%Y"}, nil, &out, &errOut)
		if err != nil {
			t.Fatalf("restore %d Run: %v", i, err)
		}
		if res.ExitCode != 0 || !bytes.HasPrefix(out.Bytes(), []byte(want+"warmed\n")) {
			t.Errorf("restore %d: exit %d output %q stderr %q, want %q first", i, res.ExitCode, out.String(), errOut.String(), want)
		}
		t.Logf("restore %d steps: %v", i, m.Steps())
		// A restore copies the snapshot's overlay template and sends its request without
		// waiting for a hello.
		var names []string
		for _, st := range m.Steps() {
			names = append(names, st.Name)
		}
		if !slices.Contains(names, StepAgentChannel) || slices.Contains(names, StepAgentHello) {
			t.Errorf("restore %d steps %v, want an agent channel step and no hello wait", i, names)
		}
		if err := m.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	}
	// A snapshot that no longer restores (here: its state cut short) costs one cold boot:
	// the run still works, the snapshot is moved aside and says so.
	entries, err := os.ReadDir(cfg.SnapshotDir)
	if err != nil || len(entries) != 1 {
		t.Fatalf("snapshot dir holds %v (%v), want one snapshot", entries, err)
	}
	snapDir := filepath.Join(cfg.SnapshotDir, entries[0].Name())
	if err := os.Truncate(filepath.Join(snapDir, snapshotState), 4<<20); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep, err := Run(ctx, Spec{Config: cfg, Argv: []string{"echo", "still runs"}, Stdout: &out})
	if err != nil {
		t.Fatalf("Run with a broken snapshot: %v", err)
	}
	if rep.ExitCode != 0 || out.String() != "still runs\n" || rep.Boot.Mode != BootCold || !strings.Contains(rep.SnapshotBroken, "failed to restore") {
		t.Errorf("Run with a broken snapshot: exit %d, output %q, boot %+v, broken %q; want the command run after a cold boot, and why",
			rep.ExitCode, out.String(), rep.Boot, rep.SnapshotBroken)
	}
	if _, err := os.Stat(snapDir); err == nil {
		t.Errorf("the broken snapshot %s is still where restores look", snapDir)
	}
	if aside, _ := filepath.Glob(filepath.Join(cfg.SnapshotDir, brokenPrefix+"*")); len(aside) != 1 {
		t.Errorf("broken snapshots set aside: %v, want one", aside)
	}

	// A changed VM shape has no snapshot: cold again, with the reason.
	c := cfg
	c.MemoryMB = 640
	m, err = New(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if b := m.Boot(); b.Mode != BootCold {
		t.Errorf("boot with changed memory = %+v, want cold", b)
	}
	if err := m.Kill(); err != nil {
		t.Fatal(err)
	}
}

// checkTemplateOverlay checks the one snapshot in dir has an overlay template whose
// backing file is the snapshot's own root disk, at its published path, and which qemu-img
// finds consistent.
func checkTemplateOverlay(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Fatalf("snapshot dir holds %v (%v), want one snapshot", entries, err)
	}
	snap := filepath.Join(dir, entries[0].Name())
	out, err := exec.Command("qemu-img", "info", "--output=json", filepath.Join(snap, snapshotOverlay)).Output()
	if err != nil {
		t.Fatalf("qemu-img info of the overlay template: %v", err)
	}
	var info struct {
		Backing     string `json:"full-backing-filename"`
		VirtualSize int64  `json:"virtual-size"`
	}
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatal(err)
	}
	root, err := exec.Command("qemu-img", "info", "--output=json", filepath.Join(snap, snapshotRoot)).Output()
	if err != nil {
		t.Fatalf("qemu-img info of the snapshot root: %v", err)
	}
	var rootInfo struct {
		VirtualSize int64 `json:"virtual-size"`
	}
	if err := json.Unmarshal(root, &rootInfo); err != nil {
		t.Fatal(err)
	}
	if info.Backing != filepath.Join(snap, snapshotRoot) || info.VirtualSize != rootInfo.VirtualSize {
		t.Errorf("overlay template backs on %q with %d bytes, want %q with %d", info.Backing, info.VirtualSize, filepath.Join(snap, snapshotRoot), rootInfo.VirtualSize)
	}
	if out, err := exec.Command("qemu-img", "check", filepath.Join(snap, snapshotOverlay)).CombinedOutput(); err != nil {
		t.Errorf("qemu-img check of the overlay template: %v: %s", err, out)
	}
}

// TestSnapshotOnAFullCache: with less room in the snapshot cache than a snapshot takes
// (the guest's memory and its root overlay), PrepareSnapshot says so before it boots
// anything, and leaves nothing in the cache; a session then boots cold.
func TestSnapshotOnAFullCache(t *testing.T) {
	testgate.RequiresRoot(t)
	testgate.Command(t, "mount", "util-linux")
	im := imagetest.Image(t)
	ctx := testContext(t)
	cache := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", cache).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", cache).Run() })
	cfg := testImageConfig(t, im)
	cfg.SnapshotDir = filepath.Join(cache, "snapshots")
	made, err := PrepareSnapshot(ctx, cfg)
	if made || err == nil || !strings.Contains(err.Error(), "free in "+cfg.SnapshotDir) || !strings.Contains(err.Error(), "bumper image prune") {
		t.Fatalf("PrepareSnapshot on a 64 MiB cache = %v, %v; want a refusal that says how much is free and to prune", made, err)
	}
	left, err := os.ReadDir(cfg.SnapshotDir)
	if err != nil || len(left) != 0 {
		t.Fatalf("the cache holds %v after the refusal (%v)", left, err)
	}
}
