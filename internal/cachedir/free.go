package cachedir

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// BuildFreeBytes is the free space an image build needs in its cache before it starts:
// a Debian root file system, its packages and the ext4 image made of them.
const BuildFreeBytes = 2 << 30

// FreeBytes is the space an unprivileged writer may still use on dir's file system.
func FreeBytes(dir string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("failed to read the free space of %s: %w", dir, err)
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// EnsureFree fails, saying what to do, when dir's file system has less than need bytes
// free for what: checked before anything is written, so a full disk stops a build
// before it leaves half an image behind, and the next build after a prune works.
func EnsureFree(dir string, need uint64, what string) error {
	free, err := FreeBytes(dir)
	if err != nil {
		return err
	}
	if free < need {
		return fmt.Errorf("%s needs %s free in %s, which has %s: free some (`sudo bumper image prune` removes images and snapshots no run used lately) and run again",
			what, size(need), dir, size(free))
	}
	return nil
}

func size(b uint64) string {
	if b >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}
