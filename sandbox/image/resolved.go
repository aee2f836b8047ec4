package image

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bumperdev/bumper/internal/fsutil"
)

// resolvedFile remembers what the kernel and busybox packages resolved to, so that a
// build whose image is already cached does not ask apt again: two apt-cache runs cost
// about 1.5 s, paid by every `bumper sandbox run` that uses the default image. The
// answer is reused only while the host's apt state (lists, sources, preferences) is
// unchanged, which is exactly when apt-cache would answer the same.
const resolvedFile = ".resolved.json"

type resolved struct {
	AptState      string     `json:"apt_state"`
	KernelPackage string     `json:"kernel_package"`
	Kernel        debPackage `json:"kernel"`
	Busybox       debPackage `json:"busybox"`
}

// aptStatePaths are what apt's candidate versions depend on.
var aptStatePaths = []string{"/var/lib/apt/lists", "/etc/apt/sources.list", "/etc/apt/sources.list.d",
	"/etc/apt/preferences", "/etc/apt/preferences.d"}

// aptState fingerprints the apt state by the modification times and sizes of those
// paths and of the lists in them; apt-get update replaces list files, which changes it.
func aptState() string {
	var b strings.Builder
	for _, p := range aptStatePaths {
		st, err := os.Stat(p)
		if err != nil {
			fmt.Fprintf(&b, "%s:-;", p)
			continue
		}
		fmt.Fprintf(&b, "%s:%d:%d;", p, st.ModTime().UnixNano(), st.Size())
		if !st.IsDir() {
			continue
		}
		entries, _ := os.ReadDir(p)
		for _, e := range entries {
			if info, err := e.Info(); err == nil {
				fmt.Fprintf(&b, "%s:%d:%d;", e.Name(), info.ModTime().UnixNano(), info.Size())
			}
		}
	}
	return b.String()
}

// loadResolved returns the remembered resolution for kernelPkg if the apt state is the
// one it was made under.
func loadResolved(cacheDir, kernelPkg, state string) (resolved, bool) {
	raw, err := os.ReadFile(filepath.Join(cacheDir, resolvedFile))
	if err != nil {
		return resolved{}, false
	}
	var r resolved
	if json.Unmarshal(raw, &r) != nil || r.AptState != state || r.KernelPackage != kernelPkg ||
		r.Kernel.Version == "" || r.Busybox.Version == "" {
		return resolved{}, false
	}
	return r, true
}

// saveResolved remembers a resolution; failing to only costs the next build an apt run.
func saveResolved(cacheDir string, r resolved) {
	raw, err := json.Marshal(r)
	if err != nil {
		return
	}
	_ = fsutil.WriteFileAtomic(filepath.Join(cacheDir, resolvedFile), raw, 0o644)
}
