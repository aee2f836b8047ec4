// Package image builds and loads Bumper's sandbox VM images: a Debian kernel
// (uncompressed vmlinux), a busybox initramfs that loads exactly the modules the guest
// needs, and an ext4 root filesystem template holding Debian minbase, git,
// ca-certificates, the packages a configuration names, and Bumper's guest agent.
//
// An image is a content-addressed directory <images>/<digest-hex>/ with manifest.json
// (written last: a present manifest means a complete image), vmlinux, initrd.img and
// rootfs.ext4. The template is never written after the build; runs put a qcow2 overlay
// on top of it.
package image

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
)

// Manifest schemas. Build writes SchemaVersion; Derive writes DerivedSchemaVersion,
// which adds Parent and Derivation, so that an older bumper refuses a derived image by
// its schema (saying to rebuild) instead of by an unknown field. Load reads both.
const (
	SchemaVersion        = 1
	DerivedSchemaVersion = 2
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
	// Parent is the digest of the image a derived image was made from (schema 2 only).
	// It is provenance, not a dependency: a derived image holds all its files, so Load
	// never reads the parent and pruning the parent leaves the derived image whole.
	Parent string `json:"parent,omitempty"`
	// Derivation says what made a derived image from its parent (schema 2 only).
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
	// SHA256 is the hex digest of rootfs.ext4.
	SHA256 string `json:"sha256"`
	// SizeBytes is the size of rootfs.ext4 (the filesystem size, free space included).
	SizeBytes int64 `json:"size_bytes"`
	// Format is the disk format of the template; always "raw".
	Format string `json:"format"`
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

// RootfsPath returns the path of the raw ext4 root filesystem template. Never open it
// for writing: put a qcow2 overlay on it.
func (im *Image) RootfsPath() string { return filepath.Join(im.dir, RootfsFile) }

// Load opens the image in dir and verifies it: the manifest's digest must match its
// content and the directory name, and every file must match its recorded SHA-256.
// Hashing the rootfs skips its holes, so a sparse 1 GiB template costs well under a second.
func Load(dir string) (*Image, error) {
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
	fresh := verifiedFiles(dir, m.Digest)
	if len(fresh) == 3 {
		return &Image{dir: dir, manifest: m}, nil
	}
	checks := []struct{ file, sum string }{
		{KernelFile, m.Kernel.SHA256},
		{InitrdFile, m.Initrd.SHA256},
		{RootfsFile, m.Rootfs.SHA256},
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
		if c.file == RootfsFile && size != m.Rootfs.SizeBytes {
			return nil, fmt.Errorf("failed to load image %s: %s is %d bytes, the manifest says %d", dir, c.file, size, m.Rootfs.SizeBytes)
		}
	}
	recordVerified(dir, m.Digest)
	return &Image{dir: dir, manifest: m}, nil
}

// checkSchema checks the schema number against the fields only derived images have.
func (m Manifest) checkSchema() error {
	switch m.Schema {
	case SchemaVersion:
		if m.Parent != "" || m.Derivation != nil {
			return fmt.Errorf("manifest schema %d has a parent or a derivation, which only schema %d has; the manifest is corrupt, rebuild the image", m.Schema, DerivedSchemaVersion)
		}
	case DerivedSchemaVersion:
		if !validDigest(m.Parent) || m.Derivation == nil || !validDigest(m.Derivation.Key) {
			return fmt.Errorf("manifest schema %d needs a parent digest and a derivation key (sha256:<64 hex>); the manifest is corrupt, derive the image again", m.Schema)
		}
	default:
		return fmt.Errorf("manifest schema %d, this bumper reads %d and %d; rebuild the image with this bumper", m.Schema, SchemaVersion, DerivedSchemaVersion)
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
