// Package doctor is `bumper doctor`'s runner host part: the checks every run makes
// first (action/preflight: root, namespaces, nftables, QEMU and its version, the image,
// the KVM canary or TCG, free disk), plus the VMs it runs at once and the image cache's
// size, as doctor findings.
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
	"github.com/bumperdev/bumper/sandbox/slots"
)

// Host runs the preflight checks with o and reports each, and the size of o.Cache.
func Host(ctx context.Context, o preflight.Options) []doctorreport.Finding {
	rep := preflight.Run(ctx, o)
	var out []doctorreport.Finding
	for _, c := range rep.Checks {
		out = append(out, fromCheck(c))
	}
	m, err := slots.ThisMachine()
	return append(out, vmSlots(os.Getenv, m, err), cacheSize(o.Cache))
}

// vmSlots says how many VMs, and how much of their memory, the host runs at once
// (sandbox/slots), and what its VMs hold now.
func vmSlots(getenv func(string) string, m slots.Machine, machineErr error) doctorreport.Finding {
	f := doctorreport.Finding{Check: "host.vm_slots", Status: doctorreport.OK}
	if machineErr != nil {
		f.Status, f.Detail, f.Fix = doctorreport.Warning, machineErr.Error(), "set "+slots.EnvMaxVMs+" and "+slots.EnvMemoryMB+" in the runner's environment"
		return f
	}
	lim, err := slots.FromEnv(getenv, m)
	if err != nil {
		f.Status, f.Detail, f.Fix = doctorreport.Blocking, "runs would not start: "+err.Error(), "set the variables as the error says, in the runner's environment (docs/runner-host.md)"
		return f
	}
	f.Detail = fmt.Sprintf("at most %d VMs with %d MiB of memory together run at once (%s, %s; this host: %d CPUs, %d MiB); runs beyond that wait their turn",
		lim.MaxVMs, lim.MemoryMB, slots.EnvMaxVMs, slots.EnvMemoryMB, m.CPUs, m.MemTotalMB)
	if fi, err := os.Stat(lim.Dir); err != nil || !fi.IsDir() {
		f.Detail += fmt.Sprintf("; none running (%s does not exist yet)", lim.Dir)
		return f
	}
	h, err := slots.New(lim)
	var u slots.Usage
	if err == nil {
		u, err = h.Usage()
	}
	if err != nil {
		f.Status, f.Fix = doctorreport.Warning, "run doctor as root, as the runner runs; or set "+slots.EnvDir+" to a directory of root's"
		f.Detail += "; cannot read " + lim.Dir + ": " + err.Error()
		return f
	}
	f.Detail += fmt.Sprintf("; now %d of %d VMs (%d of %d MiB) in use, %d runs waiting", u.VMs, lim.MaxVMs, u.MemoryMB, lim.MemoryMB, u.Waiting)
	return f
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
