// Package buildinfo reports which build of Bumper is running.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is set at link time with -ldflags "-X github.com/bumperdev/bumper/internal/buildinfo.Version=v1.2.3".
// It stays "dev" for builds from a work tree.
var Version = "dev"

// String describes this build: version, VCS revision when Go recorded one, and the toolchain.
func String() string {
	rev := ""
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				rev = " (" + s.Value[:12] + ")"
			}
		}
	}
	return fmt.Sprintf("bumper %s%s %s %s/%s", Version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
