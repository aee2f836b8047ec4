package sandbox

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bumperdev/bumper/internal/testgate"
	"github.com/bumperdev/bumper/sandbox/image"
	"github.com/bumperdev/bumper/sandbox/image/imagetest"
)

// cloneImage hard-links the image im into a new images directory of a cache of the
// test's own, so the test can derive from it, remove it and prune without touching the
// shared test cache.
func cloneImage(t *testing.T, im *image.Image, cache string) *image.Image {
	t.Helper()
	dir := filepath.Join(image.ImagesDir(cache), filepath.Base(im.Dir()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{image.ManifestFile, image.KernelFile, image.InitrdFile, image.RootfsFile} {
		if err := os.Link(filepath.Join(im.Dir(), f), filepath.Join(dir, f)); err != nil {
			t.Fatalf("failed to clone the test image (the test cache and temporary directories must share a file system): %v", err)
		}
	}
	clone, err := image.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return clone
}

// allocated is the disk space a file takes (its blocks, not its size).
func allocated(t *testing.T, path string) int64 {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Sys().(*syscall.Stat_t).Blocks * 512
}

// TestSaveRootDiskDerive is an environment's life: a session writes under the agent's
// home (a small file, and 32 MiB that do not compress, for the figures it logs), saves
// its root disk as a qcow2 delta over the base's (a refused save during the command, a
// refused second save and a refused Run after it), the delta becomes an image derived
// from the base, and new sessions of the derived image, cold and warm, see the file;
// deriving the same delta again under the same key finds the same image; a prune keeps
// the unused base while the derived image is used, and takes both, with the derived
// image's snapshot, once neither is; without its parent a derived image does not load.
func TestSaveRootDiskDerive(t *testing.T) {
	testgate.RequiresQEMU(t)
	testgate.Command(t, "e2fsck", "e2fsprogs")
	cache := t.TempDir()
	base := cloneImage(t, imagetest.Image(t), cache)
	ctx := testContext(t)
	cfg := testImageConfig(t, base)
	s, err := Open(ctx, SessionSpec{Config: cfg})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close(ctx)
	if err := s.Start(ctx, ""); err != nil {
		t.Fatalf("Start: %v", err)
	}
	dest := filepath.Join(t.TempDir(), "root.qcow2")
	started := &signalWriter{ch: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		res, err := s.Run(ctx, []string{"sh", "-c", "mkdir -p ~/.cache/x && echo hi > ~/.cache/x/f && echo written && head -c 32M /dev/urandom > ~/.cache/x/blob && sleep 1"}, nil, started, nil)
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("exit %d", res.ExitCode)
		}
		done <- err
	}()
	<-started.ch
	if err := s.SaveRootDisk(ctx, dest); err == nil || !strings.Contains(err.Error(), "a command is running") {
		t.Errorf("SaveRootDisk during a Run = %v, want a refusal", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the command writing the cache: %v", err)
	}
	began := time.Now()
	if err := s.SaveRootDisk(ctx, dest); err != nil {
		t.Fatalf("SaveRootDisk: %v", err)
	}
	took := time.Since(began)
	if err := s.SaveRootDisk(ctx, dest); err == nil || !strings.Contains(err.Error(), "saved already") {
		t.Errorf("second SaveRootDisk = %v, want a refusal", err)
	}
	if _, err := s.Run(ctx, []string{"true"}, nil, nil, nil); err == nil || !strings.Contains(err.Error(), "shut down to save") {
		t.Errorf("Run after SaveRootDisk = %v, want a refusal", err)
	}
	if err := s.Close(ctx); err != nil {
		t.Errorf("Close after SaveRootDisk: %v", err)
	}
	assertNothingLeft(t, cfg.RunDir)
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(dest), ".*")); len(left) != 0 {
		t.Errorf("SaveRootDisk left temporary files: %v", left)
	}
	// A delta over the base's template, by its absolute path, that reads as a clean file
	// system.
	if q, err := image.ReadQcow2(dest); err != nil || q.Backing != base.RootfsPath() || q.BackingFormat != "raw" || q.VirtualSize != base.DiskBytes() {
		t.Errorf("saved disk header %+v, %v; want a %d-byte delta over %s (raw)", q, err, base.DiskBytes(), base.RootfsPath())
	}
	flat := filepath.Join(t.TempDir(), "flat.raw")
	if out, err := exec.Command("qemu-img", "convert", "-O", "raw", dest, flat).CombinedOutput(); err != nil {
		t.Fatalf("qemu-img convert: %v: %s", err, out)
	}
	if out, err := exec.Command("e2fsck", "-fn", flat).CombinedOutput(); err != nil {
		t.Errorf("e2fsck -fn of the saved disk: %v\n%s", err, out)
	}
	_ = os.Remove(flat)
	info, err := os.Stat(dest)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("SaveRootDisk took %v; saved delta %d MiB, %d MiB on disk; base rootfs %d MiB on disk",
		took.Round(time.Millisecond), info.Size()>>20, allocated(t, dest)>>20, allocated(t, base.RootfsPath())>>20)
	if allocated(t, dest) > 64<<20 {
		t.Errorf("the delta takes %d MiB on disk, want what the session wrote (32 MiB and change)", allocated(t, dest)>>20)
	}

	sum := sha256.Sum256([]byte("TestSaveRootDiskDerive"))
	key := "sha256:" + hex.EncodeToString(sum[:])
	describe := map[string]string{"setup": "scripts/setup.sh", "cache_paths": "~/.cache/x"}
	d, err := image.Derive(base, dest, image.Derivation{Key: key, Describe: describe})
	if err != nil {
		t.Fatalf("Derive: %v", err)
	}
	if _, err := os.Stat(dest); !os.IsNotExist(err) {
		t.Errorf("Derive left the root disk at %s (%v); it should be moved in", dest, err)
	}
	if m := d.Manifest(); m.Parent != base.Manifest().Digest || m.Derivation.Key != key || m.Schema != image.DeltaSchemaVersion || d.RootfsFormat() != "qcow2" {
		t.Errorf("derived manifest: parent %s, derivation %+v, schema %d, format %s", m.Parent, m.Derivation, m.Schema, d.RootfsFormat())
	}
	// The same delta under the same key is the same image.
	again := filepath.Join(t.TempDir(), "again.qcow2")
	if out, err := exec.Command("cp", "--sparse=always", d.RootfsPath(), again).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	if out, err := exec.Command("qemu-img", "rebase", "-u", "-b", base.RootfsPath(), "-F", "raw", again).CombinedOutput(); err != nil {
		t.Fatalf("qemu-img rebase: %v: %s", err, out)
	}
	if d2, err := image.Derive(base, again, image.Derivation{Key: key, Describe: describe}); err != nil || d2.Dir() != d.Dir() {
		t.Errorf("Derive of the same disk = %v, %v; want %s again", d2, err, d.Dir())
	}
	if again, ok := image.FindDerived(image.ImagesDir(cache), key); !ok || again.Dir() != d.Dir() {
		t.Errorf("FindDerived after a second Derive = %v, %v; want %s", again, ok, d.Dir())
	}

	found, ok := image.FindDerived(image.ImagesDir(cache), key)
	if !ok || found.Dir() != d.Dir() {
		t.Fatalf("FindDerived = %v, %v; want %s", found, ok, d.Dir())
	}

	for _, warm := range []bool{false, true} {
		t.Run(map[bool]string{false: "cold", true: "warm"}[warm], func(t *testing.T) {
			ctx := testContext(t)
			cfg := testImageConfig(t, found)
			if warm {
				cfg.SnapshotDir = SnapshotsDir(cache)
				cfg.WorkspaceDiskMB = 512
			}
			s, err := Open(ctx, SessionSpec{Config: cfg})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer s.Close(ctx)
			if err := s.Start(ctx, ""); err != nil {
				t.Fatalf("Start: %v", err)
			}
			var stdout, stderr bytes.Buffer
			res, err := s.Run(ctx, []string{"sh", "-c", "cat ~/.cache/x/f"}, nil, &stdout, &stderr)
			if err != nil || res.ExitCode != 0 || stdout.String() != "hi\n" {
				t.Fatalf("reading the file the setup left: %+v, %v, stdout %q, stderr %q", res, err, stdout.String(), stderr.String())
			}
			if want := map[bool]string{false: BootCold, true: BootWarm}[warm]; s.Report().Boot.Mode != want {
				t.Errorf("boot %+v, want %s", s.Report().Boot, want)
			}
			if err := s.Close(ctx); err != nil {
				t.Errorf("Close: %v", err)
			}
			assertNothingLeft(t, cfg.RunDir)
		})
	}

	// The base, unused for long, stays while the image derived from it is used.
	snaps, _ := filepath.Glob(filepath.Join(SnapshotsDir(cache), "*"))
	if len(snaps) != 1 {
		t.Fatalf("snapshots of the derived image: %v, want one", snaps)
	}
	old := time.Now().Add(-60 * 24 * time.Hour)
	if err := os.Chtimes(base.Dir(), old, old); err != nil {
		t.Fatal(err)
	}
	if removed, err := PruneCache(cache, time.Now().Add(-14*24*time.Hour), false); err != nil || len(removed) != 0 {
		t.Fatalf("PruneCache with the derived image in use = %+v, %v; want nothing removed", removed, err)
	}
	// Without its parent, the derived image does not load, so no run boots it.
	aside := base.Dir() + ".aside"
	if err := os.Rename(base.Dir(), aside); err != nil {
		t.Fatal(err)
	}
	if _, err := image.Load(d.Dir()); !errors.Is(err, image.ErrParentGone) {
		t.Errorf("Load without the parent = %v, want ErrParentGone", err)
	}
	if err := os.Rename(aside, base.Dir()); err != nil {
		t.Fatal(err)
	}
	// Unused for long, the derived image goes, its parent and its snapshot with it.
	if err := os.Chtimes(d.Dir(), old, old); err != nil {
		t.Fatal(err)
	}
	removed, err := PruneCache(cache, time.Now().Add(-14*24*time.Hour), false)
	if err != nil {
		t.Fatalf("PruneCache: %v", err)
	}
	var gone []string
	for _, r := range removed {
		gone = append(gone, r.Path)
	}
	for _, p := range []string{d.Dir(), base.Dir(), snaps[0]} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there after the prune (removed %v)", p, gone)
		}
	}
}
