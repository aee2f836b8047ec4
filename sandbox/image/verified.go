package image

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/bumperdev/bumper/internal/fsutil"
)

// verifiedFile records, after Load hashed an image's files in full, what each file looked
// like (size, inode, modification and change times). A later Load that finds every file
// unchanged skips the hashing, which for a 1.4 GB rootfs is about a second of every run.
// The change time cannot be set from user space, so any write to a file, even one that
// restores its modification time, makes the next Load hash everything again.
const verifiedFile = ".verified"

// fileStamp is what identifies an unchanged file.
type fileStamp struct {
	Size  int64  `json:"size"`
	Inode uint64 `json:"inode"`
	Mtime int64  `json:"mtime_ns"`
	Ctime int64  `json:"ctime_ns"`
}

func stampOf(path string) (fileStamp, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fileStamp{}, fmt.Errorf("failed to stat %s: %w", filepath.Base(path), err)
	}
	return fileStamp{Size: st.Size, Inode: st.Ino, Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano()}, nil
}

// stamps returns the stamps of the image's content files, with the manifest's digest so
// a stamp never vouches for another manifest.
func stamps(dir, digest, rootName string) (map[string]fileStamp, error) {
	out := map[string]fileStamp{}
	for _, name := range []string{ManifestFile, KernelFile, InitrdFile, rootName} {
		s, err := stampOf(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		out[name] = s
	}
	out["digest:"+digest] = fileStamp{}
	return out, nil
}

// verifiedFiles returns the content files a recorded full verification still vouches
// for: those whose stamps are unchanged, provided the manifest and its digest are. The
// kernel and initramfs are hard links shared by many images, so any image built or
// removed beside them changes their change time; they are small, and hashing them again
// must not cost every image a hash of its whole root filesystem.
func verifiedFiles(dir, digest, rootName string) map[string]bool {
	raw, err := os.ReadFile(filepath.Join(dir, verifiedFile))
	if err != nil {
		return nil
	}
	var recorded map[string]fileStamp
	if err := json.Unmarshal(raw, &recorded); err != nil {
		return nil
	}
	now, err := stamps(dir, digest, rootName)
	if err != nil || len(now) != len(recorded) {
		return nil
	}
	for _, k := range []string{ManifestFile, "digest:" + digest} {
		if r, ok := recorded[k]; !ok || r != now[k] {
			return nil
		}
	}
	ok := map[string]bool{}
	for _, name := range []string{KernelFile, InitrdFile, rootName} {
		if r, found := recorded[name]; found && r == now[name] {
			ok[name] = true
		}
	}
	return ok
}

// recordVerified writes the stamps after a full verification. Failing to write them only
// costs the next Load a full hash, so errors are ignored (a read-only cache is fine).
func recordVerified(dir, digest, rootName string) {
	now, err := stamps(dir, digest, rootName)
	if err != nil {
		return
	}
	raw, err := json.Marshal(now)
	if err != nil {
		return
	}
	_ = fsutil.WriteFileAtomic(filepath.Join(dir, verifiedFile), raw, 0o644)
}
