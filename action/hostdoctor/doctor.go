// Package doctor is `bumper doctor`'s runner host part: the checks every run makes
// first (action/preflight: root, namespaces, nftables, QEMU and its version, the image,
// the KVM canary or TCG, free disk), plus the image cache's size, as doctor findings.
package hostdoctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/bumperdev/bumper/action/preflight"
	"github.com/bumperdev/bumper/internal/doctorreport"
	"github.com/bumperdev/bumper/sandbox/image"
)

// Host runs the preflight checks with o and reports each, and the size of o.Cache.
func Host(ctx context.Context, o preflight.Options) []doctorreport.Finding {
	rep := preflight.Run(ctx, o)
	var out []doctorreport.Finding
	for _, c := range rep.Checks {
		out = append(out, fromCheck(c))
	}
	return append(out, cacheSize(o.Cache))
}

func fromCheck(c preflight.Check) doctorreport.Finding {
	st := doctorreport.OK
	switch c.Status {
	case preflight.Failed:
		st = doctorreport.Blocking
	case preflight.Warning:
		st = doctorreport.Warning
	}
	id := "host." + strings.NewReplacer(" ", "_", ":", "").Replace(c.Name)
	return doctorreport.Finding{Check: id, Status: st, Detail: c.Detail, Fix: c.Fix}
}

// cacheSize adds up the image cache: images and snapshots are kept until pruned.
func cacheSize(dir string) doctorreport.Finding {
	if dir == "" {
		dir = image.DefaultCacheDir
	}
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			total += info.Size()
		}
		return nil
	})
	switch {
	case errors.Is(err, os.ErrNotExist):
		return doctorreport.Finding{Check: "host.cache_size", Status: doctorreport.OK, Detail: fmt.Sprintf("%s does not exist yet: the first run builds the image there", dir)}
	case err != nil:
		return doctorreport.Finding{Check: "host.cache_size", Status: doctorreport.Warning, Detail: fmt.Sprintf("cannot measure %s: %v", dir, err),
			Fix: "run doctor as root, as the runner runs"}
	}
	return doctorreport.Finding{Check: "host.cache_size", Status: doctorreport.OK,
		Detail: fmt.Sprintf("%s holds %.2f GiB (images ~250 MB each, snapshots ~100 MB; `sudo bumper image prune` removes what runs no longer use)", dir, float64(total)/(1<<30))}
}
