package image

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testKey is a derivation key made of one repeated hex digit.
func testKey(c string) string { return "sha256:" + strings.Repeat(c, 64) }

// writeRootfs writes a stand-in root file system with data and returns its path.
func writeRootfs(t *testing.T, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "root.ext4")
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// qemuImg runs qemu-img (or qemu-io, when args start with it) and fails the test on error.
func qemuImg(t *testing.T, args ...string) {
	t.Helper()
	tool := "qemu-img"
	if args[0] == "qemu-io" {
		tool, args = args[0], args[1:]
	}
	if _, err := exec.LookPath(tool); err != nil {
		t.Skipf("%s not installed (apt-get install qemu-utils)", tool)
	}
	if out, err := exec.Command(tool, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v: %s", tool, args, err, out)
	}
}

// writeDelta writes a qcow2 delta over base's root disk (by its absolute path, as
// SaveRootDisk names it) whose first 4 KiB are a byte pattern made of data, and returns
// its path: the same data gives the same file.
func writeDelta(t *testing.T, base *Image, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "root.qcow2")
	qemuImg(t, "create", "-q", "-f", "qcow2", "-b", base.RootfsPath(), "-F", base.RootfsFormat(), p)
	qemuImg(t, "qemu-io", "-f", "qcow2", "-c", fmt.Sprintf("write -q -P %d 0 4k", pattern(data)), p)
	return p
}

// pattern is the byte writeDelta writes for data.
func pattern(data string) byte {
	sum := sha256.Sum256([]byte(data))
	return sum[0] | 1 // never 0: the base is zeros
}

// diskContent reads what a guest would see on the image's root disk, through its chain.
func diskContent(t *testing.T, im *Image) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "flat.raw")
	qemuImg(t, "convert", "-f", im.RootfsFormat(), "-O", "raw", im.RootfsPath(), out)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Sys().(*syscall.Stat_t).Ino
}

func TestDerive(t *testing.T) {
	images := filepath.Join(t.TempDir(), "images")
	baseDir, bm := writeFakeImage(t, images)
	base, err := Load(baseDir)
	if err != nil {
		t.Fatal(err)
	}
	delta := writeDelta(t, base, "derived root file system")
	describe := map[string]string{"setup": "scripts/setup.sh", "cache_paths": "~/go/pkg/mod"}
	d, err := Derive(base, delta, Derivation{Key: testKey("1"), Describe: describe})
	if err != nil {
		t.Fatalf("Derive: %v", err)
	}
	m := d.Manifest()
	if filepath.Dir(d.Dir()) != images || "sha256:"+filepath.Base(d.Dir()) != m.Digest {
		t.Errorf("derived image at %s with digest %s, want %s/<digest hex>", d.Dir(), m.Digest, images)
	}
	if m.Schema != DeltaSchemaVersion || m.Parent != bm.Digest || m.Derivation == nil || m.Derivation.Key != testKey("1") || m.Derivation.Describe["setup"] != "scripts/setup.sh" {
		t.Errorf("derived manifest: schema %d, parent %s, derivation %+v", m.Schema, m.Parent, m.Derivation)
	}
	info, err := os.Stat(d.RootfsPath())
	if err != nil || info.Mode().Perm() != 0o644 || filepath.Base(d.RootfsPath()) != DeltaFile {
		t.Fatalf("derived rootfs %s: %v, %v; want %s, mode 0644 (QEMU's user reads it)", d.RootfsPath(), info, err, DeltaFile)
	}
	if m.Kernel != bm.Kernel || m.Agent != bm.Agent || m.Cmdline != bm.Cmdline || m.Rootfs.Format != FormatQcow2 || d.RootfsFormat() != FormatQcow2 ||
		m.Rootfs.SizeBytes != bm.Rootfs.SizeBytes || d.DiskBytes() != bm.Rootfs.SizeBytes || m.Rootfs.FileBytes != info.Size() {
		t.Errorf("derived manifest does not keep the base's kernel, agent and cmdline with its own qcow2 delta of the base's size: %+v", m)
	}
	q, err := ReadQcow2(d.RootfsPath())
	if want := "../" + filepath.Base(baseDir) + "/" + RootfsFile; err != nil || q.Backing != want || q.BackingFormat != FormatRaw {
		t.Errorf("delta header %+v, %v; want backing %s (raw), relative to the images directory", q, err, want)
	}
	for _, f := range []string{KernelFile, InitrdFile} {
		if inode(t, filepath.Join(baseDir, f)) != inode(t, filepath.Join(d.Dir(), f)) {
			t.Errorf("%s is not a hard link to the base's", f)
		}
	}
	if _, err := os.Stat(delta); !os.IsNotExist(err) {
		t.Errorf("the delta is still at %s (%v); Derive moves it in", delta, err)
	}
	if left, _ := filepath.Glob(filepath.Join(images, derivePrefix+"*")); len(left) != 0 {
		t.Errorf("Derive left staging directories: %v", left)
	}
	// The images directory moves as a whole: the delta still reads through its parent.
	moved := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Rename(images, moved); err != nil {
		t.Fatal(err)
	}
	loaded, err := Load(filepath.Join(moved, filepath.Base(d.Dir())))
	if err != nil {
		t.Fatalf("Load after the images directory moved: %v", err)
	}
	if got := loaded.Manifest(); got.Digest != m.Digest || got.Derivation.Describe["cache_paths"] != "~/go/pkg/mod" {
		t.Errorf("loaded %+v, want the derived manifest", got)
	}
	content := diskContent(t, loaded)
	want := append(bytes.Repeat([]byte{pattern("derived root file system")}, 4096), make([]byte, 4096)...)
	if !bytes.Equal(content, want) {
		t.Errorf("the derived disk reads %d bytes starting %x, want the setup's 4 KiB then the base's zeros", len(content), content[:8])
	}
	// Without its parent a delta is broken: Load says so, whatever it verified before.
	if err := os.RemoveAll(filepath.Join(moved, filepath.Base(baseDir))); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(loaded.Dir()); !errors.Is(err, ErrParentGone) || !strings.Contains(err.Error(), bm.Digest) {
		t.Fatalf("Load of a derived image without its parent = %v, want ErrParentGone naming %s", err, bm.Digest)
	}
	if _, ok := FindDerived(moved, testKey("1")); ok {
		t.Error("FindDerived returned a derived image whose parent is gone")
	}
}

// TestDeriveChain: an image derived from a derived image is a delta over that one's
// delta (backing format qcow2), and loads, reads and needs the whole chain.
func TestDeriveChain(t *testing.T) {
	images := filepath.Join(t.TempDir(), "images")
	baseDir, _ := writeFakeImage(t, images)
	base, err := Load(baseDir)
	if err != nil {
		t.Fatal(err)
	}
	mid, err := Derive(base, writeDelta(t, base, "first"), Derivation{Key: testKey("1")})
	if err != nil {
		t.Fatal(err)
	}
	top := filepath.Join(t.TempDir(), "top.qcow2")
	qemuImg(t, "create", "-q", "-f", "qcow2", "-b", mid.RootfsPath(), "-F", FormatQcow2, top)
	qemuImg(t, "qemu-io", "-f", "qcow2", "-c", "write -q -P 7 4k 4k", top)
	d, err := Derive(mid, top, Derivation{Key: testKey("2")})
	if err != nil {
		t.Fatalf("Derive from a derived image: %v", err)
	}
	if q, err := ReadQcow2(d.RootfsPath()); err != nil || q.BackingFormat != FormatQcow2 || q.Backing != "../"+filepath.Base(mid.Dir())+"/"+DeltaFile {
		t.Errorf("delta over a delta: %+v, %v", q, err)
	}
	want := append(bytes.Repeat([]byte{pattern("first")}, 4096), bytes.Repeat([]byte{7}, 4096)...)
	if got := diskContent(t, d); !bytes.Equal(got, want) {
		t.Errorf("the chain reads %x…, want both deltas over the base", got[:8])
	}
	if err := os.RemoveAll(baseDir); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(d.Dir()); !errors.Is(err, ErrParentGone) {
		t.Errorf("Load with the chain's base gone = %v, want ErrParentGone", err)
	}
}

func TestDeriveRefusals(t *testing.T) {
	images := filepath.Join(t.TempDir(), "images")
	baseDir, _ := writeFakeImage(t, images)
	base, err := Load(baseDir)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		base    *Image
		rootfs  string
		key     string
		wantErr string
	}{
		{"no base", nil, writeDelta(t, base, "x"), testKey("1"), "no base image"},
		{"key not a digest", base, writeDelta(t, base, "x"), "env-1", "not sha256:<64 hex>"},
		{"key in capitals", base, writeDelta(t, base, "x"), "sha256:" + strings.Repeat("A", 64), "not sha256:<64 hex>"},
		{"missing rootfs", base, filepath.Join(t.TempDir(), "none"), testKey("1"), "no such file"},
		{"empty rootfs", base, writeRootfs(t, ""), testKey("1"), "not a root disk delta"},
		{"directory as rootfs", base, t.TempDir(), testKey("1"), "not a root disk delta"},
		{"a raw disk, not a delta", base, writeRootfs(t, strings.Repeat("ext4", 2048)), testKey("1"), "no qcow2 magic"},
		{"a delta over another file", base, otherDelta(t, writeRootfs(t, string(make([]byte, 8192))), "raw", ""), testKey("1"), "not over the base's root disk"},
		{"a delta over the base read as qcow2", base, otherDelta(t, base.RootfsPath(), "qcow2", ""), testKey("1"), "not over the base's root disk"},
		{"a delta smaller than the base", base, otherDelta(t, base.RootfsPath(), "raw", "4096"), testKey("1"), "not over the base's root disk"},
		{"a delta with an external data file", base, otherDelta(t, base.RootfsPath(), "raw", "data_file"), testKey("1"), "incompatible features"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Derive(tt.base, tt.rootfs, Derivation{Key: tt.key}); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Derive = %v, want an error with %q", err, tt.wantErr)
			}
			entries, _ := os.ReadDir(images)
			if len(entries) != 1 {
				t.Errorf("a refused Derive left %v in the images directory", entries)
			}
		})
	}
}

// otherDelta makes a qcow2 file over backing (read as format) without checking that
// either makes sense (qemu-img -u); size "" is the backing's, "data_file" gives the file
// an external data file.
func otherDelta(t *testing.T, backing, format, size string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "root.qcow2")
	args := []string{"create", "-q", "-u", "-f", "qcow2", "-b", backing, "-F", format}
	switch size {
	case "":
		size = "8192"
	case "data_file":
		args = append(args, "-o", "data_file="+filepath.Join(t.TempDir(), "data"))
		size = "8192"
	}
	qemuImg(t, append(args, p, size)...)
	return p
}

func TestFindDerived(t *testing.T) {
	images := filepath.Join(t.TempDir(), "images")
	baseDir, _ := writeFakeImage(t, images)
	base, err := Load(baseDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := FindDerived(images, testKey("1")); ok {
		t.Fatal("FindDerived found an image before any Derive")
	}
	older, err := Derive(base, writeDelta(t, base, "first setup"), Derivation{Key: testKey("1")})
	if err != nil {
		t.Fatal(err)
	}
	newer, err := Derive(base, writeDelta(t, base, "second setup"), Derivation{Key: testKey("1")})
	if err != nil {
		t.Fatal(err)
	}
	other, err := Derive(base, writeDelta(t, base, "other inputs"), Derivation{Key: testKey("2")})
	if err != nil {
		t.Fatal(err)
	}
	// Same inputs, same disk: the same image, not a copy.
	same, err := Derive(base, writeDelta(t, base, "second setup"), Derivation{Key: testKey("1")})
	if err != nil || same.Dir() != newer.Dir() {
		t.Fatalf("Derive of an identical disk = %v, %v; want %s", same, err, newer.Dir())
	}
	long := time.Now().Add(-30 * 24 * time.Hour)
	if err := os.Chtimes(newer.Dir(), long, long); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		key  string
		want string // "" when none
	}{
		{"the newer of two derivations", testKey("1"), newer.Dir()},
		{"another key", testKey("2"), other.Dir()},
		{"an unknown key", testKey("3"), ""},
		{"not a digest", "../" + filepath.Base(newer.Dir()), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			im, ok := FindDerived(images, tt.key)
			if tt.want == "" {
				if ok {
					t.Fatalf("FindDerived = %s, want none", im.Dir())
				}
				return
			}
			if !ok || im.Dir() != tt.want {
				t.Fatalf("FindDerived = %v, %v; want %s", im, ok, tt.want)
			}
		})
	}
	if info, err := os.Stat(newer.Dir()); err != nil || time.Since(info.ModTime()) > time.Minute {
		t.Errorf("FindDerived did not mark its image used: %v, %v", info, err)
	}
	// A damaged newest derivation is passed over for the older one.
	writeAt(t, newer.RootfsPath(), 0, []byte("X"))
	if im, ok := FindDerived(images, testKey("1")); !ok || im.Dir() != older.Dir() {
		t.Errorf("FindDerived with the newest damaged = %v, %v; want %s", im, ok, older.Dir())
	}
}

// TestFindDerivedPrefix: an environment's id as people copy it (in full, or its first
// digits, with or without sha256:) finds its image; a prefix of two keys names both; an
// id that is not hex digits, a path included, is refused before any file is looked at.
func TestFindDerivedPrefix(t *testing.T) {
	images := filepath.Join(t.TempDir(), "images")
	baseDir, _ := writeFakeImage(t, images)
	base, err := Load(baseDir)
	if err != nil {
		t.Fatal(err)
	}
	// Two keys sharing their first 12 hex digits, one other, one whose image is damaged.
	shared := "abcdef012345"
	keyA, keyB := "sha256:"+shared+strings.Repeat("0", 52), "sha256:"+shared+strings.Repeat("1", 52)
	derived := map[string]*Image{}
	for i, key := range []string{keyA, keyB, testKey("2"), testKey("d")} {
		im, err := Derive(base, writeDelta(t, base, fmt.Sprintf("setup %d", i)), Derivation{Key: key})
		if err != nil {
			t.Fatal(err)
		}
		derived[key] = im
	}
	writeAt(t, derived[testKey("d")].RootfsPath(), 0, []byte("X"))
	imageDigest := filepath.Base(derived[keyA].Dir()) // an image's own name is not its key
	const (
		invalid   = "is not a derivation key"
		ambiguous = "ambiguous"
		absent    = "absent"
		damaged   = "failed to load"
	)
	tests := []struct {
		name    string
		dir     string // images directory; "" for images
		id      string
		want    string // the key of the image found, or one of the failures above
		inError string // text the error must hold, besides its kind
	}{
		{"a full id", "", keyA, keyA, ""},
		{"a full id without sha256:", "", strings.TrimPrefix(keyB, "sha256:"), keyB, ""},
		{"the shortest prefix", "", "sha256:" + strings.Repeat("2", 12), testKey("2"), ""},
		{"a prefix without sha256:", "", strings.Repeat("2", 20), testKey("2"), ""},
		{"one digit more than the shared ones", "", "sha256:" + shared + "1", keyB, ""},
		{"a prefix of two keys", "", shared, ambiguous, keyA + ", " + keyB},
		{"no key with the prefix", "", "sha256:" + strings.Repeat("3", 12), absent, images},
		{"an image's digest, not a key", "", imageDigest, absent, ""},
		{"a cache never used", filepath.Join(t.TempDir(), "images"), keyA, absent, "images"},
		{"the one image of a key damaged", "", testKey("d"), damaged, testKey("d")},
		{"too short", "", "sha256:" + shared[:11], invalid, ""},
		{"too short without sha256:", "", shared[:11], invalid, ""},
		{"sha256: with 65 digits", "", keyA + "0", invalid, ""},
		{"sha256: alone", "", "sha256:", invalid, ""},
		{"empty", "", "", invalid, ""},
		{"not hex", "", "sha256:" + strings.Repeat("g", 64), invalid, ""},
		{"upper-case hex", "", strings.ToUpper(shared) + "0", invalid, ""},
		{"sha256: twice", "", "sha256:" + keyA, invalid, ""},
		{"another algorithm", "", "sha512:" + strings.Repeat("2", 64), invalid, ""},
		{"spaces around", "", " " + keyA + " ", invalid, ""},
		{"a relative path to an image", "", "../images/" + imageDigest, invalid, ""},
		{"an absolute path", "", "/etc", invalid, ""},
		{"the image's directory", "", derived[keyA].Dir(), invalid, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tt.dir
			if dir == "" {
				dir = images
			}
			im, err := FindDerivedPrefix(dir, tt.id)
			var amb *AmbiguousKeyError
			switch tt.want {
			case invalid:
				if err == nil || !strings.Contains(err.Error(), invalid) || errors.Is(err, ErrNoDerived) {
					t.Fatalf("FindDerivedPrefix(%q) = %v, %v; want it refused as not a key", tt.id, im, err)
				}
			case ambiguous:
				if !errors.As(err, &amb) || !slices.Equal(amb.Keys, []string{keyA, keyB}) {
					t.Fatalf("FindDerivedPrefix(%q) = %v, %v; want an ambiguity naming %s and %s", tt.id, im, err, keyA, keyB)
				}
			case absent:
				if !errors.Is(err, ErrNoDerived) {
					t.Fatalf("FindDerivedPrefix(%q) = %v, %v; want ErrNoDerived", tt.id, im, err)
				}
			case damaged:
				if err == nil || errors.Is(err, ErrNoDerived) || !strings.Contains(err.Error(), damaged) {
					t.Fatalf("FindDerivedPrefix(%q) = %v, %v; want the damaged image's load error", tt.id, im, err)
				}
			default:
				if err != nil || im.Dir() != derived[tt.want].Dir() {
					t.Fatalf("FindDerivedPrefix(%q) = %v, %v; want %s", tt.id, im, err, derived[tt.want].Dir())
				}
				return
			}
			if !strings.Contains(err.Error(), tt.inError) {
				t.Errorf("error %q does not say %q", err, tt.inError)
			}
		})
	}
	// Only the images of the key found were marked used.
	old := time.Now().Add(-30 * 24 * time.Hour)
	for _, im := range derived {
		if err := os.Chtimes(im.Dir(), old, old); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := FindDerivedPrefix(images, shared+"0"); err != nil {
		t.Fatal(err)
	}
	for key, im := range derived {
		info, err := os.Stat(im.Dir())
		if err != nil {
			t.Fatal(err)
		}
		if used := time.Since(info.ModTime()) < time.Minute; used != (key == keyA) {
			t.Errorf("image of %s marked used = %v after finding %s", key, used, keyA)
		}
	}
}

// TestPruneDerived: a delta needs its parent, so Prune keeps an image, however old,
// while an image derived from it (directly or through another) stays, removes a parent
// with its last children, and removes a delta whose parent is gone whatever its age; a
// dry run lists exactly what a real one removes.
func TestPruneDerived(t *testing.T) {
	const base, child, grandchild = "base", "child", "grandchild"
	tests := []struct {
		name    string
		old     []string // unused since before the cutoff; the others were used now
		gone    string   // removed by hand before Prune
		removed []string
		why     string // what the reason for the first removed says
	}{
		{name: "nothing old", removed: nil},
		{name: "an old parent with a recent child stays", old: []string{base}, removed: nil},
		{name: "an old grandparent with a recent grandchild stays", old: []string{base, child}, removed: nil},
		{name: "an old child goes, its recent parent stays", old: []string{child, grandchild}, removed: []string{child, grandchild}, why: "unused since"},
		{name: "a parent goes with its last children", old: []string{base, child, grandchild}, removed: []string{base, child, grandchild}, why: "unused since"},
		{name: "a recent delta whose parent is gone goes", gone: base, removed: []string{child, grandchild}, why: "which is gone: it cannot boot without it"},
		{name: "a recent delta whose grandparent is gone goes", gone: child, removed: []string{grandchild}, why: "which is gone"},
	}
	for _, tt := range tests {
		for _, dryRun := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/dry run %v", tt.name, dryRun), func(t *testing.T) {
				cache := t.TempDir()
				images := ImagesDir(cache)
				baseDir, _ := writeFakeImage(t, images)
				b, err := Load(baseDir)
				if err != nil {
					t.Fatal(err)
				}
				c, err := Derive(b, writeDelta(t, b, "child"), Derivation{Key: testKey("1")})
				if err != nil {
					t.Fatal(err)
				}
				top := filepath.Join(t.TempDir(), "top.qcow2")
				qemuImg(t, "create", "-q", "-f", "qcow2", "-b", c.RootfsPath(), "-F", FormatQcow2, top)
				g, err := Derive(c, top, Derivation{Key: testKey("2")})
				if err != nil {
					t.Fatal(err)
				}
				dirs := map[string]string{base: baseDir, child: c.Dir(), grandchild: g.Dir()}
				names := map[string]string{}
				for n, d := range dirs {
					names[d] = n
				}
				long := time.Now().Add(-30 * 24 * time.Hour)
				for _, n := range tt.old {
					if err := os.Chtimes(dirs[n], long, long); err != nil {
						t.Fatal(err)
					}
				}
				if tt.gone != "" {
					if err := os.RemoveAll(dirs[tt.gone]); err != nil {
						t.Fatal(err)
					}
				}
				removed, err := Prune(cache, time.Now().Add(-14*24*time.Hour), dryRun)
				if err != nil {
					t.Fatalf("Prune: %v", err)
				}
				var got []string
				for _, r := range removed {
					got = append(got, names[r.Path])
				}
				slices.Sort(got)
				if !slices.Equal(got, tt.removed) {
					t.Fatalf("Prune removed %v (%+v), want %v", got, removed, tt.removed)
				}
				if len(removed) > 0 && !strings.Contains(removed[0].Why, tt.why) {
					t.Errorf("Prune's reason %q does not say %q", removed[0].Why, tt.why)
				}
				for n, d := range dirs {
					_, err := os.Stat(d)
					there := n != tt.gone && (dryRun || !slices.Contains(tt.removed, n))
					if (err == nil) != there {
						t.Errorf("%s exists = %v, want %v", n, err == nil, there)
					}
				}
				// Whatever stays loads: no delta outlives its parent.
				if !dryRun {
					for n, d := range dirs {
						if _, err := os.Stat(d); err == nil {
							if _, err := Load(d); err != nil {
								t.Errorf("%s stayed but does not load: %v", n, err)
							}
						}
					}
				}
			})
		}
	}
}

// TestPruneStaging: a derivation left half-staged, or a root disk saved for one, goes
// after an hour, and an image build's staging directory at once (Prune holds the build
// lock).
func TestPruneStaging(t *testing.T) {
	cache := t.TempDir()
	images := ImagesDir(cache)
	if err := os.MkdirAll(images, 0o755); err != nil {
		t.Fatal(err)
	}
	staleStage, freshStage := filepath.Join(images, derivePrefix+"dead"), filepath.Join(images, derivePrefix+"live")
	deadBuild := filepath.Join(images, buildPrefix+"dead")
	for _, p := range []string{staleStage, freshStage, deadBuild} {
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var disks []string
	for range 2 {
		dir, err := RootDiskStaging(images)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, DeltaFile), []byte("qcow2"), 0o644); err != nil {
			t.Fatal(err)
		}
		disks = append(disks, dir)
	}
	staleDisk, freshDisk := disks[0], disks[1]
	old := time.Now().Add(-30 * 24 * time.Hour)
	for _, p := range []string{staleStage, staleDisk} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := Prune(cache, time.Now().Add(-14*24*time.Hour), false)
	if err != nil {
		t.Fatalf("Prune: %v", err)
	}
	if len(removed) != 3 {
		t.Errorf("Prune removed %+v, want the stale staging directory, the dead build and the abandoned root disk", removed)
	}
	for p, there := range map[string]bool{staleStage: false, freshStage: true, deadBuild: false, staleDisk: false, freshDisk: true} {
		if _, err := os.Stat(p); (err == nil) != there {
			t.Errorf("%s exists = %v, want %v", p, err == nil, there)
		}
	}
}
