// Package image builds and loads Bumper's sandbox VM images: a Debian kernel
// (uncompressed vmlinux), a busybox initramfs that loads exactly the modules the guest
// needs, and an ext4 root filesystem template holding Debian minbase, git,
// ca-certificates, the packages a configuration names, and Bumper's guest agent.
//
// An image is a content-addressed directory <images>/<digest-hex>/ with manifest.json
// (written last: a present manifest means a complete image), vmlinux, initrd.img and
// rootfs.ext4. The template is never written after the build; runs put a qcow2 overlay
// on top of it. A derived image (Derive) holds rootfs.qcow2 instead: a qcow2 delta whose
// backing file is its parent's root file system, named relative to the images directory.
package image

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// File names inside an image directory.
const (
	ManifestFile = "manifest.json"
	KernelFile   = "vmlinux"
	InitrdFile   = "initrd.img"
	RootfsFile   = "rootfs.ext4"
	// DeltaFile is a derived image's root disk: a qcow2 delta over its parent's.
	DeltaFile = "rootfs.qcow2"
)

// Root file system formats (Rootfs.Format).
const (
	FormatRaw   = "raw"
	FormatQcow2 = "qcow2"
)

// maxChain bounds how many parents a derived image's backing chain may have.
const maxChain = 8

// Manifest schemas. Build writes SchemaVersion; Derive writes DeltaSchemaVersion: a
// derived image whose root disk is a qcow2 delta over its parent's (Rootfs.Format
// "qcow2"), so that an older bumper refuses it by its schema (saying to rebuild) instead
// of booting the delta as a raw disk. DerivedSchemaVersion is what an earlier bumper's
// Derive wrote: a derived image holding a full raw copy of its root file system. Load
// reads all three.
const (
	SchemaVersion        = 1
	DerivedSchemaVersion = 2
	DeltaSchemaVersion   = 3
)

// AgentPath is where the guest agent (the bumper binary itself) lives in the rootfs.
const AgentPath = "/usr/local/bin/bumper"

// Manifest describes a built image. Everything but Digest and Created goes into the
// digest, so two images with the same digest have identical files and provenance.
type Manifest struct {
	// Schema is SchemaVersion.
	Schema int `json:"schema"`
	// Digest is "sha256:<hex>" over the rest of the manifest; <hex> is the directory name.
	Digest string `json:"digest"`
	// Created is when the image was built (not part of the digest).
	Created time.Time `json:"created"`
	Kernel  Kernel    `json:"kernel"`
	Initrd  Initrd    `json:"initrd"`
	Rootfs  Rootfs    `json:"rootfs"`
	Agent   Agent     `json:"agent"`
	// Packages are the Debian packages installed in the rootfs (dpkg-query), by name.
	Packages []Package `json:"packages"`
	// Suite is the Debian suite of the rootfs, for example "bookworm".
	Suite string `json:"suite"`
	// Mirror is the Debian mirror the rootfs was bootstrapped from.
	Mirror string `json:"mirror"`
	// Cmdline holds the kernel arguments this image needs. The VM side appends its own
	// (tsc_early_khz, quiet, anything for the agent).
	Cmdline string `json:"cmdline"`
	// Harness is the agent CLI installed in the image, when there is one.
	Harness *HarnessInfo `json:"harness,omitempty"`
	// CACerts is the digest of the CA certificates added to Debian's, when any were.
	CACerts string `json:"ca_certs,omitempty"`
	// Parent is the digest of the image a derived image was made from (schemas 2 and 3).
	// In schema 3 it is a dependency: the root disk is a delta over the parent's, in the
	// directory this digest names beside this one, so Load verifies the parent too and
	// Prune keeps it while this image lives. In schema 2 it is provenance only.
	Parent string `json:"parent,omitempty"`
	// Derivation says what made a derived image from its parent (schemas 2 and 3).
	Derivation *Derivation `json:"derivation,omitempty"`
}

// HarnessInfo is the agent CLI an image holds: the npm release and its tarball's
// integrity, and where its files are.
type HarnessInfo struct {
	Name      string `json:"name"`
	Version   string `json:"version"`
	Integrity string `json:"integrity"`
	Dir       string `json:"dir"`
}

// Kernel identifies the kernel in the image.
type Kernel struct {
	// Package is the concrete Debian package, for example "linux-image-6.1.0-57-amd64".
	Package string `json:"package"`
	// Version is that package's Debian version, for example "6.1.192-3".
	Version string `json:"version"`
	// Release is the kernel's `uname -r`, for example "6.1.0-57-amd64".
	Release string `json:"release"`
	// SHA256 is the hex digest of vmlinux.
	SHA256 string `json:"sha256"`
}

// Initrd describes the initramfs.
type Initrd struct {
	// SHA256 is the hex digest of initrd.img (an uncompressed newc cpio archive).
	SHA256 string `json:"sha256"`
	// Modules are the kernel modules /init loads, in load order.
	Modules []string `json:"modules"`
	// Busybox is the version of Debian's busybox-static package inside.
	Busybox string `json:"busybox"`
}

// Rootfs describes the root filesystem template.
type Rootfs struct {
	// SHA256 is the hex digest of the root disk's file (rootfs.ext4, or rootfs.qcow2).
	SHA256 string `json:"sha256"`
	// SizeBytes is the size of the disk the guest sees (the filesystem size, free space
	// included): rootfs.ext4's size, or the delta's virtual size.
	SizeBytes int64 `json:"size_bytes"`
	// Format is the disk format of the template: "raw" (rootfs.ext4, schemas 1 and 2)
	// or "qcow2" (rootfs.qcow2, a delta over the parent's root disk, schema 3).
	Format string `json:"format"`
	// FileBytes is the size of rootfs.qcow2, the delta's file (qcow2 only).
	FileBytes int64 `json:"file_bytes,omitempty"`
}

// file is the root disk's file name in the image directory.
func (r Rootfs) file() string {
	if r.Format == FormatQcow2 {
		return DeltaFile
	}
	return RootfsFile
}

// Agent describes the guest agent binary in the rootfs.
type Agent struct {
	// Path is the agent's absolute path inside the rootfs (AgentPath).
	Path string `json:"path"`
	// SHA256 is the hex digest of the agent binary.
	SHA256 string `json:"sha256"`
}

// Package is one installed Debian package.
type Package struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Image is a complete, verified image directory.
type Image struct {
	dir      string
	manifest Manifest
}

// Dir returns the image directory.
func (im *Image) Dir() string { return im.dir }

// Manifest returns a copy of the image's manifest.
func (im *Image) Manifest() Manifest {
	m := im.manifest
	m.Packages = append([]Package(nil), m.Packages...)
	m.Initrd.Modules = append([]string(nil), m.Initrd.Modules...)
	if m.Derivation != nil {
		d := *m.Derivation
		d.Describe = maps.Clone(d.Describe)
		m.Derivation = &d
	}
	return m
}

// KernelPath returns the path of the uncompressed kernel.
func (im *Image) KernelPath() string { return filepath.Join(im.dir, KernelFile) }

// InitrdPath returns the path of the initramfs.
func (im *Image) InitrdPath() string { return filepath.Join(im.dir, InitrdFile) }

// RootfsPath returns the path of the root filesystem template: raw ext4, or a derived
// image's qcow2 delta (RootfsFormat says which). Never open it for writing: put a qcow2
// overlay on it, with RootfsFormat as its backing format.
func (im *Image) RootfsPath() string { return filepath.Join(im.dir, im.manifest.Rootfs.file()) }

// RootfsFormat returns the format of RootfsPath: "raw" or "qcow2".
func (im *Image) RootfsFormat() string {
	if im.manifest.Rootfs.Format == FormatQcow2 {
		return FormatQcow2
	}
	return FormatRaw
}

// DiskBytes returns the size of the disk the guest sees (the root filesystem's size).
func (im *Image) DiskBytes() int64 { return im.manifest.Rootfs.SizeBytes }

// ErrParentGone is in Load's error for a derived image whose root disk is a delta over
// a parent image that is missing or does not load: it can never boot again, and Prune
// removes it.
var ErrParentGone = errors.New("its parent image is gone or damaged")

// Load opens the image in dir and verifies it: the manifest's digest must match its
// content and the directory name, and every file must match its recorded SHA-256.
// Hashing the rootfs skips its holes, so a sparse 1 GiB template costs well under a second.
// For a derived image stored as a delta (schema 3) it also loads (and so verifies) the
// parent, which must be the directory Parent names beside dir, and checks the delta's
// qcow2 header: its backing file must be exactly that parent's root disk, named
// relative to the images directory, with the parent's format, and it may name no other
// file (ReadQcow2). The image's files and directories must be what they say, not
// symbolic links, so that the backing path QEMU resolves is the one checked here.
func Load(dir string) (*Image, error) { return load(dir, 0) }

func load(dir string, depth int) (*Image, error) {
	raw, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("failed to load image %s: no %s, so this is not a complete image; build one with `bumper image build`", dir, ManifestFile)
	}
	if err != nil {
		return nil, fmt.Errorf("failed to load image: %w", err)
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("failed to load image %s: manifest is not valid: %w", dir, err)
	}
	if err := m.checkSchema(); err != nil {
		return nil, fmt.Errorf("failed to load image %s: %w", dir, err)
	}
	want, err := m.computeDigest()
	if err != nil {
		return nil, err
	}
	if m.Digest != want {
		return nil, fmt.Errorf("failed to load image %s: manifest digest %s does not match its content (%s); the manifest was edited or corrupted, rebuild the image", dir, m.Digest, want)
	}
	if base := filepath.Base(filepath.Clean(dir)); "sha256:"+base != m.Digest {
		return nil, fmt.Errorf("failed to load image %s: directory name %s does not match the digest %s", dir, base, m.Digest)
	}
	rootName := m.Rootfs.file()
	if err := noLinks(dir, rootName); err != nil {
		return nil, fmt.Errorf("failed to load image %s: %w", dir, err)
	}
	if m.Rootfs.Format == FormatQcow2 {
		if err := checkDelta(dir, m, depth); err != nil {
			return nil, fmt.Errorf("failed to load image %s: %w", dir, err)
		}
	}
	fresh := verifiedFiles(dir, m.Digest, rootName)
	if len(fresh) == 3 {
		return &Image{dir: dir, manifest: m}, nil
	}
	checks := []struct{ file, sum string }{
		{KernelFile, m.Kernel.SHA256},
		{InitrdFile, m.Initrd.SHA256},
		{rootName, m.Rootfs.SHA256},
	}
	for _, c := range checks {
		if fresh[c.file] {
			continue
		}
		got, size, err := hashFile(filepath.Join(dir, c.file))
		if err != nil {
			return nil, fmt.Errorf("failed to load image %s: %w", dir, err)
		}
		if got != c.sum {
			return nil, fmt.Errorf("failed to load image %s: %s has SHA-256 %s, the manifest says %s; the file was changed, rebuild the image", dir, c.file, got, c.sum)
		}
		wantSize := m.Rootfs.SizeBytes
		if m.Rootfs.Format == FormatQcow2 {
			wantSize = m.Rootfs.FileBytes
		}
		if c.file == rootName && size != wantSize {
			return nil, fmt.Errorf("failed to load image %s: %s is %d bytes, the manifest says %d", dir, c.file, size, wantSize)
		}
	}
	recordVerified(dir, m.Digest, rootName)
	return &Image{dir: dir, manifest: m}, nil
}

// noLinks checks that dir and the image's files in it are a directory and regular files,
// not symbolic links (QEMU resolves a delta's "../<parent>/…" backing physically).
func noLinks(dir, rootName string) error {
	if info, err := os.Lstat(filepath.Clean(dir)); err != nil {
		return err
	} else if !info.IsDir() {
		return errors.New("the image directory is a symbolic link or not a directory")
	}
	for _, f := range []string{KernelFile, InitrdFile, rootName} {
		info, err := os.Lstat(filepath.Join(dir, f))
		if err != nil {
			return fmt.Errorf("%w; rebuild the image", err)
		}
		if !info.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file (%s); rebuild the image", f, info.Mode().Type())
		}
	}
	return nil
}

// deltaBacking is the backing file name a delta over the image parent records: its
// root disk, relative to the delta's directory, so an images directory can move.
func deltaBacking(parent *Image) string {
	return "../" + filepath.Base(parent.dir) + "/" + parent.manifest.Rootfs.file()
}

// checkDelta checks a schema-3 image's delta against its parent, which it loads.
func checkDelta(dir string, m Manifest, depth int) error {
	if depth >= maxChain {
		return fmt.Errorf("its chain of parent images is longer than %d", maxChain)
	}
	parentDir := filepath.Join(filepath.Dir(filepath.Clean(dir)), digestHex(m.Parent))
	if _, err := os.Lstat(parentDir); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: its root disk is a delta over the root disk of its parent %s, which is not in %s (pruned or moved apart); remove this image (`bumper image prune` does) and derive it again",
			ErrParentGone, m.Parent, filepath.Dir(parentDir))
	}
	parent, err := load(parentDir, depth+1)
	if err != nil {
		return fmt.Errorf("%w: parent %s: %w", ErrParentGone, m.Parent, err)
	}
	q, err := ReadQcow2(filepath.Join(dir, DeltaFile))
	if err != nil {
		return err
	}
	if want := deltaBacking(parent); q.Backing != want || q.BackingFormat != parent.RootfsFormat() {
		return fmt.Errorf("%s's backing file is %q (format %q), want its parent's root disk %q (format %q); the image was tampered with, derive it again",
			DeltaFile, q.Backing, q.BackingFormat, want, parent.RootfsFormat())
	}
	// A run may grow its disk (sandbox.Config.DiskSizeMB), never shrink it.
	if q.VirtualSize != m.Rootfs.SizeBytes || m.Rootfs.SizeBytes < parent.manifest.Rootfs.SizeBytes {
		return fmt.Errorf("%s is a %d-byte disk, the manifest says %d and the parent's is %d", DeltaFile, q.VirtualSize, m.Rootfs.SizeBytes, parent.manifest.Rootfs.SizeBytes)
	}
	return nil
}

// checkSchema checks the schema number against the fields only derived images have.
func (m Manifest) checkSchema() error {
	switch m.Schema {
	case SchemaVersion:
		if m.Parent != "" || m.Derivation != nil {
			return fmt.Errorf("manifest schema %d has a parent or a derivation, which only schema %d has; the manifest is corrupt, rebuild the image", m.Schema, DerivedSchemaVersion)
		}
	case DerivedSchemaVersion, DeltaSchemaVersion:
		if !validDigest(m.Parent) || m.Derivation == nil || !validDigest(m.Derivation.Key) {
			return fmt.Errorf("manifest schema %d needs a parent digest and a derivation key (sha256:<64 hex>); the manifest is corrupt, derive the image again", m.Schema)
		}
	default:
		return fmt.Errorf("manifest schema %d, this bumper reads %d to %d; rebuild the image with this bumper", m.Schema, SchemaVersion, DeltaSchemaVersion)
	}
	// Only a delta is qcow2, and a delta has its file's size: the format decides which
	// file QEMU opens and how, so it must be the schema's.
	delta := m.Schema == DeltaSchemaVersion
	if delta != (m.Rootfs.Format == FormatQcow2) || (!delta && m.Rootfs.Format != FormatRaw) || delta != (m.Rootfs.FileBytes > 0) {
		return fmt.Errorf("manifest schema %d with root disk format %q (file size %d): schema %d is a qcow2 delta, the others raw; the manifest is corrupt, rebuild the image",
			m.Schema, m.Rootfs.Format, m.Rootfs.FileBytes, DeltaSchemaVersion)
	}
	return nil
}

// computeDigest returns "sha256:<hex>" over the canonical JSON of the manifest with
// Digest and Created cleared.
func (m Manifest) computeDigest() (string, error) {
	m.Digest = ""
	m.Created = time.Time{}
	b, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("failed to encode the manifest: %w", err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// digestHex returns the hex part of a "sha256:<hex>" digest.
func digestHex(d string) string { return strings.TrimPrefix(d, "sha256:") }

// hashFile returns the hex SHA-256 and size of a file. Holes in sparse files are hashed
// as the zeros they read as, but without reading them from the kernel.
func hashFile(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, fmt.Errorf("failed to hash %s: %w", filepath.Base(path), err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", 0, fmt.Errorf("failed to hash %s: %w", filepath.Base(path), err)
	}
	h := sha256.New()
	size := st.Size()
	zeros := make([]byte, 1<<20)
	var off int64
	for off < size {
		data, err := f.Seek(off, unix.SEEK_DATA)
		if err != nil {
			// ENXIO: no data after off, the rest is a hole. Any other error (a file
			// system without SEEK_DATA) falls back to reading everything.
			if !errors.Is(err, unix.ENXIO) {
				data = off
			} else {
				data = size
			}
		}
		if err := writeZeros(h, zeros, data-off); err != nil {
			return "", 0, err
		}
		if data >= size {
			break
		}
		hole, err := f.Seek(data, unix.SEEK_HOLE)
		if err != nil {
			hole = size
		}
		if _, err := f.Seek(data, io.SeekStart); err != nil {
			return "", 0, fmt.Errorf("failed to hash %s: %w", filepath.Base(path), err)
		}
		if _, err := io.CopyN(h, f, hole-data); err != nil {
			return "", 0, fmt.Errorf("failed to hash %s: %w", filepath.Base(path), err)
		}
		off = hole
	}
	return hex.EncodeToString(h.Sum(nil)), size, nil
}

func writeZeros(w io.Writer, zeros []byte, n int64) error {
	for n > 0 {
		k := min(n, int64(len(zeros)))
		if _, err := w.Write(zeros[:k]); err != nil {
			return fmt.Errorf("failed to hash: %w", err)
		}
		n -= k
	}
	return nil
}
