package image

import (
	"errors"
	"fmt"
	"os"
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
	rootfs := writeRootfs(t, "derived root file system")
	describe := map[string]string{"setup": "scripts/setup.sh", "cache_paths": "~/go/pkg/mod"}
	d, err := Derive(base, rootfs, Derivation{Key: testKey("1"), Describe: describe})
	if err != nil {
		t.Fatalf("Derive: %v", err)
	}
	m := d.Manifest()
	if filepath.Dir(d.Dir()) != images || "sha256:"+filepath.Base(d.Dir()) != m.Digest {
		t.Errorf("derived image at %s with digest %s, want %s/<digest hex>", d.Dir(), m.Digest, images)
	}
	if m.Schema != DerivedSchemaVersion || m.Parent != bm.Digest || m.Derivation == nil || m.Derivation.Key != testKey("1") || m.Derivation.Describe["setup"] != "scripts/setup.sh" {
		t.Errorf("derived manifest: schema %d, parent %s, derivation %+v", m.Schema, m.Parent, m.Derivation)
	}
	if m.Kernel != bm.Kernel || m.Agent != bm.Agent || m.Cmdline != bm.Cmdline || m.Rootfs.SHA256 == bm.Rootfs.SHA256 || m.Rootfs.SizeBytes != int64(len("derived root file system")) {
		t.Errorf("derived manifest does not keep the base's kernel, agent and cmdline with its own rootfs: %+v", m)
	}
	for _, f := range []string{KernelFile, InitrdFile} {
		if inode(t, filepath.Join(baseDir, f)) != inode(t, filepath.Join(d.Dir(), f)) {
			t.Errorf("%s is not a hard link to the base's", f)
		}
	}
	if _, err := os.Stat(rootfs); !os.IsNotExist(err) {
		t.Errorf("the root file system is still at %s (%v); Derive moves it in", rootfs, err)
	}
	if info, err := os.Stat(d.RootfsPath()); err != nil || info.Mode().Perm() != 0o644 {
		t.Errorf("derived rootfs: %v, %v; want mode 0644 (QEMU's user reads it)", info, err)
	}
	// The parent is provenance only: with it gone the derived image still loads, its
	// files hashed again.
	if err := os.RemoveAll(baseDir); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(d.Dir(), verifiedFile)); err != nil {
		t.Fatal(err)
	}
	loaded, err := Load(d.Dir())
	if err != nil {
		t.Fatalf("Load of a derived image without its parent: %v", err)
	}
	if got := loaded.Manifest(); got.Digest != m.Digest || got.Derivation.Describe["cache_paths"] != "~/go/pkg/mod" {
		t.Errorf("loaded %+v, want the derived manifest", got)
	}
	if left, _ := filepath.Glob(filepath.Join(images, derivePrefix+"*")); len(left) != 0 {
		t.Errorf("Derive left staging directories: %v", left)
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
		{"no base", nil, writeRootfs(t, "x"), testKey("1"), "no base image"},
		{"key not a digest", base, writeRootfs(t, "x"), "env-1", "not sha256:<64 hex>"},
		{"key in capitals", base, writeRootfs(t, "x"), "sha256:" + strings.Repeat("A", 64), "not sha256:<64 hex>"},
		{"missing rootfs", base, filepath.Join(t.TempDir(), "none"), testKey("1"), "no such file"},
		{"empty rootfs", base, writeRootfs(t, ""), testKey("1"), "not a root file system image"},
		{"directory as rootfs", base, t.TempDir(), testKey("1"), "not a root file system image"},
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
	older, err := Derive(base, writeRootfs(t, "first setup"), Derivation{Key: testKey("1")})
	if err != nil {
		t.Fatal(err)
	}
	newer, err := Derive(base, writeRootfs(t, "second setup"), Derivation{Key: testKey("1")})
	if err != nil {
		t.Fatal(err)
	}
	other, err := Derive(base, writeRootfs(t, "other inputs"), Derivation{Key: testKey("2")})
	if err != nil {
		t.Fatal(err)
	}
	// Same inputs, same disk: the same image, not a copy.
	same, err := Derive(base, writeRootfs(t, "second setup"), Derivation{Key: testKey("1")})
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
		im, err := Derive(base, writeRootfs(t, fmt.Sprintf("setup %d", i)), Derivation{Key: key})
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

// TestPruneDerived checks that derived images are pruned by their own use: an unused
// parent goes and leaves its recently used derived image whole, which goes in turn once
// unused; a derivation left half-staged, or a root disk saved for one, goes after an
// hour, and an image build's staging directory at once (Prune holds the build lock).
func TestPruneDerived(t *testing.T) {
	cache := t.TempDir()
	images := ImagesDir(cache)
	baseDir, _ := writeFakeImage(t, images)
	base, err := Load(baseDir)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Derive(base, writeRootfs(t, "setup result"), Derivation{Key: testKey("1")})
	if err != nil {
		t.Fatal(err)
	}
	staleStage, freshStage := filepath.Join(images, derivePrefix+"dead"), filepath.Join(images, derivePrefix+"live")
	// A build that died (builds hold the cache lock, as Prune does: any is dead), and
	// root disks saved for derivations, one abandoned and one being written now.
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
		if err := os.WriteFile(filepath.Join(dir, "rootfs.ext4"), []byte("ext4"), 0o644); err != nil {
			t.Fatal(err)
		}
		disks = append(disks, dir)
	}
	staleDisk, freshDisk := disks[0], disks[1]
	old := time.Now().Add(-30 * 24 * time.Hour)
	for _, p := range []string{baseDir, staleStage, staleDisk} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	cutoff := time.Now().Add(-14 * 24 * time.Hour)
	removed, err := Prune(cache, cutoff, false)
	if err != nil {
		t.Fatalf("Prune: %v", err)
	}
	if len(removed) != 4 {
		t.Errorf("Prune removed %+v, want the parent, the stale staging directory, the dead build and the abandoned root disk", removed)
	}
	for p, there := range map[string]bool{baseDir: false, staleStage: false, freshStage: true, d.Dir(): true,
		deadBuild: false, staleDisk: false, freshDisk: true} {
		if _, err := os.Stat(p); (err == nil) != there {
			t.Errorf("%s exists = %v, want %v", p, err == nil, there)
		}
	}
	if err := os.Remove(filepath.Join(d.Dir(), verifiedFile)); err != nil {
		t.Fatal(err)
	}
	if _, ok := FindDerived(images, testKey("1")); !ok {
		t.Fatal("the derived image does not load after its parent was pruned")
	}
	if err := os.Chtimes(d.Dir(), old, old); err != nil {
		t.Fatal(err)
	}
	if removed, err := Prune(cache, cutoff, false); err != nil || len(removed) != 1 || removed[0].Path != d.Dir() {
		t.Fatalf("Prune of the unused derived image = %+v, %v", removed, err)
	}
	if _, ok := FindDerived(images, testKey("1")); ok {
		t.Error("FindDerived found a pruned image")
	}
}
