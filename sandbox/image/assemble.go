package image

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/bumperdev/bumper/internal/fsutil"
)

// assemble makes rootfs.ext4 from the cached tree plus the agent, and writes the image
// directory and its index entry.
func assemble(ctx context.Context, cfg BuildConfig, key string, boot *bootFiles, tree string, installed []Package, in inputs, p progress) (*Image, error) {
	work, err := os.MkdirTemp(filepath.Join(cfg.CacheDir, "tmp"), "assemble-")
	if err != nil {
		return nil, fmt.Errorf("failed to create a work directory: %w", err)
	}
	defer os.RemoveAll(work)
	stage, err := os.MkdirTemp(cfg.OutDir, buildPrefix)
	if err != nil {
		return nil, fmt.Errorf("failed to create a staging directory in %s: %w", cfg.OutDir, err)
	}
	defer os.RemoveAll(stage)
	// QEMU runs unprivileged and must read the image.
	if err := os.Chmod(stage, 0o755); err != nil {
		return nil, fmt.Errorf("failed to set the image directory's permissions: %w", err)
	}
	done := p.step(ctx, "assemble rootfs")
	root := filepath.Join(work, "root")
	if err := stageRoot(ctx, cfg, tree, root, in, p); err != nil {
		return nil, err
	}
	used, size, err := makeRootfs(ctx, cfg, key, root, filepath.Join(stage, RootfsFile))
	if err != nil {
		return nil, err
	}
	done(fmt.Sprintf("%d MB used, %d MB file system", used>>20, size>>20))

	done = p.step(ctx, "write manifest")
	m, err := writeManifest(cfg, boot, stage, installed, in)
	if err != nil {
		return nil, err
	}
	im, err := publishImage(cfg, key, stage, m)
	if err != nil {
		return nil, err
	}
	done(m.Digest)
	return im, nil
}

// stageRoot makes root: the cached tree, hard-linked (the copy costs no data, and only
// new files are added to it, so the cached tree is never changed), with the agent, the
// CA certificates and the harness added.
func stageRoot(ctx context.Context, cfg BuildConfig, tree, root string, in inputs, p progress) error {
	if _, err := runCmd(ctx, "", nil, "cp", "-al", tree, root); err != nil {
		return fmt.Errorf("failed to stage the rootfs: %w", err)
	}
	agentDst := filepath.Join(root, filepath.FromSlash(AgentPath))
	if err := os.MkdirAll(filepath.Dir(agentDst), 0o755); err != nil {
		return fmt.Errorf("failed to create %s: %w", filepath.Dir(AgentPath), err)
	}
	if err := fsutil.CopyFile(cfg.AgentBinary, agentDst, 0o755); err != nil {
		return fmt.Errorf("failed to install the agent: %w", err)
	}
	if err := installCACerts(root, in.caPEM); err != nil {
		return err
	}
	if in.harness != nil {
		hdone := p.step(ctx, "install harness "+cfg.Harness.Name+" "+cfg.Harness.Version)
		if err := installHarness(root, *cfg.Harness, *in.harness); err != nil {
			return err
		}
		hdone(HarnessDir(*cfg.Harness))
	}
	return nil
}

// makeRootfs makes the raw ext4 file system rootfs from root, sized for what root holds
// and cfg.Headroom; it returns the bytes root uses and the file system's size.
func makeRootfs(ctx context.Context, cfg BuildConfig, key, root, rootfs string) (used, size int64, err error) {
	used, inodes, err := treeUsage(root)
	if err != nil {
		return 0, 0, err
	}
	// Metadata (inode tables, bitmaps, directories) needs about a tenth more than the
	// data; 64 MiB more covers the fixed overhead of a small tree.
	size = (used+used/10+cfg.Headroom+(1<<20)-1)>>20<<20 + 64<<20
	uuid := key[0:8] + "-" + key[8:12] + "-" + key[12:16] + "-" + key[16:20] + "-" + key[20:32]
	// A UUID, hash seed and creation time derived from the inputs keep the superblock
	// the same across rebuilds (file times still differ).
	_, err = runCmd(ctx, "", []string{"E2FSPROGS_FAKE_TIME=1"}, "mkfs.ext4", "-q", "-F",
		"-t", "ext4", "-d", root, "-L", "bumper-root", "-U", uuid, "-E", "hash_seed="+uuid,
		"-O", "^has_journal", "-m", "0", "-N", fmt.Sprint(inodes*2+65536),
		rootfs, fmt.Sprintf("%dk", size>>10))
	if err != nil {
		return 0, 0, fmt.Errorf("failed to make the root filesystem: %w", err)
	}
	return used, size, nil
}

// writeManifest links the boot files into stage and writes the manifest of what stage
// holds, with its digest.
func writeManifest(cfg BuildConfig, boot *bootFiles, stage string, installed []Package, in inputs) (Manifest, error) {
	for _, f := range []string{KernelFile, InitrdFile} {
		if err := linkOrCopy(filepath.Join(boot.dir, f), filepath.Join(stage, f)); err != nil {
			return Manifest{}, err
		}
	}
	rootSum, rootSize, err := hashFile(filepath.Join(stage, RootfsFile))
	if err != nil {
		return Manifest{}, err
	}
	m := Manifest{
		Schema:   SchemaVersion,
		Created:  time.Now().UTC().Truncate(time.Second),
		Kernel:   boot.Kernel,
		Initrd:   boot.Initrd,
		Rootfs:   Rootfs{SHA256: rootSum, SizeBytes: rootSize, Format: "raw"},
		Agent:    Agent{Path: AgentPath, SHA256: in.Agent},
		Packages: installed,
		Suite:    cfg.Suite,
		Mirror:   cfg.Mirror,
		Cmdline:  BaseCmdline,
		CACerts:  in.CACerts,
	}
	if h := cfg.Harness; h != nil {
		m.Harness = &HarnessInfo{Name: h.Name, Version: h.Version, Integrity: in.harness.integrity, Dir: HarnessDir(*h)}
	}
	if m.Digest, err = m.computeDigest(); err != nil {
		return Manifest{}, err
	}
	raw, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return Manifest{}, fmt.Errorf("failed to encode the manifest: %w", err)
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(stage, ManifestFile), append(raw, '\n'), 0o644); err != nil {
		return Manifest{}, err
	}
	return m, nil
}

// publishImage moves stage into place under its digest (an intact directory of the same
// digest holds identical files: it is kept) and records key → digest in the index.
func publishImage(cfg BuildConfig, key, stage string, m Manifest) (*Image, error) {
	final := filepath.Join(cfg.OutDir, digestHex(m.Digest))
	im := &Image{dir: final, manifest: m}
	if existing, err := Load(final); err == nil {
		im = existing
	} else {
		if err := os.RemoveAll(final); err != nil {
			return nil, fmt.Errorf("failed to replace the incomplete image %s: %w", final, err)
		}
		if err := os.Rename(stage, final); err != nil {
			return nil, fmt.Errorf("failed to move the image into place: %w", err)
		}
	}
	if err := os.MkdirAll(filepath.Join(cfg.OutDir, ".index"), 0o755); err != nil {
		return nil, fmt.Errorf("failed to create the image index: %w", err)
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(cfg.OutDir, ".index", key), []byte(digestHex(m.Digest)+"\n"), 0o644); err != nil {
		return nil, err
	}
	return im, nil
}

// emptyTmp removes everything inside the cache's work directory.
func emptyTmp(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("failed to list %s: %w", dir, err)
	}
	for _, e := range entries {
		if err := removeTree(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("failed to clean the cache's work directory: %w", err)
		}
	}
	return nil
}

// linkOrCopy hard-links src to dst, copying when they are on different file systems.
func linkOrCopy(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	if err := fsutil.CopyFile(src, dst, 0o644); err != nil {
		return fmt.Errorf("failed to copy %s into the image: %w", filepath.Base(src), err)
	}
	return nil
}

// buildPrefix starts the name of an image being assembled in the images directory.
const buildPrefix = ".build-"
