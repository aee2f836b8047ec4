package image

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/internal/cachedir"
)

// Build builds the image cfg describes, or returns the existing one when an image from
// identical inputs (suite, mirror, packages, kernel and busybox versions, agent binary)
// is already in cfg.OutDir. The last step writes manifest.json atomically, so a
// concurrent reader never sees a half-built image.
func Build(ctx context.Context, cfg BuildConfig) (*Image, error) {
	p := progress{w: cfg.Progress}
	done := p.step(ctx, "resolve inputs")
	cfg, in, err := plan(ctx, cfg)
	if err != nil {
		return nil, err
	}
	key := in.key()
	done(in.Kernel.Name + " " + in.Kernel.Version)

	if im, err := lookup(cfg.OutDir, key); err == nil {
		// Prune keeps what was used lately; failing to say so only risks a rebuild.
		_ = cachedir.MarkUsed(im.Dir())
		p.step(ctx, "image")("cached, nothing to do")
		return im, nil
	}
	if err := CheckBuildHost(); err != nil {
		return nil, err
	}
	for _, d := range []string{cfg.OutDir, filepath.Join(cfg.CacheDir, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("failed to create %s: %w", d, err)
		}
	}
	unlock, err := lockCache(cfg.CacheDir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	// Another build may have finished while this one waited for the lock.
	if im, err := lookup(cfg.OutDir, key); err == nil {
		p.step(ctx, "image")("built meanwhile by another process")
		return im, nil
	}

	// Holding the lock, anything left in tmp is from a build that died.
	if err := emptyTmp(filepath.Join(cfg.CacheDir, "tmp")); err != nil {
		return nil, err
	}
	// A full cache fails here, before anything is written, rather than halfway.
	if err := cachedir.EnsureFree(cfg.CacheDir, cachedir.BuildFreeBytes, "building an image"); err != nil {
		return nil, err
	}
	boot, err := buildBoot(ctx, cfg.CacheDir, in.Kernel, in.Busybox, p)
	if err != nil {
		return nil, err
	}
	tree, installed, err := bootstrapRootfs(ctx, cfg.CacheDir, cfg.Suite, cfg.Mirror, cfg.Packages, p)
	if err != nil {
		return nil, err
	}
	im, err := assemble(ctx, cfg, key, boot, tree, installed, in, p)
	if err != nil {
		return nil, err
	}
	zerolog.Ctx(ctx).Info().Str(logKeyImage, im.Dir()).Msg("image built")
	return im, nil
}

// plan checks the configuration, fills in defaults and pins every input: the agent's
// digest and the kernel and busybox versions apt would download now.
func plan(ctx context.Context, cfg BuildConfig) (BuildConfig, inputs, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return cfg, inputs{}, err
	}
	agentSum, err := checkAgent(cfg.AgentBinary)
	if err != nil {
		return cfg, inputs{}, err
	}
	state := aptState()
	r, ok := loadResolved(cfg.CacheDir, cfg.KernelPackage, state)
	if !ok {
		records, err := aptShow(ctx, cfg.KernelPackage, busyboxPackage)
		if err != nil {
			return cfg, inputs{}, fmt.Errorf("failed to resolve the kernel and busybox packages: %w", err)
		}
		kernel, err := concreteKernel(ctx, cfg.KernelPackage, records[cfg.KernelPackage])
		if err != nil {
			return cfg, inputs{}, err
		}
		r = resolved{AptState: state, KernelPackage: cfg.KernelPackage, Kernel: kernel,
			Busybox: debPackage{Name: busyboxPackage, Version: records[busyboxPackage]["Version"]}}
		saveResolved(cfg.CacheDir, r)
	}
	caPEM, caSum, err := readCACerts(cfg.CACerts)
	if err != nil {
		return cfg, inputs{}, err
	}
	var harness *harnessTarball
	var harnessID string
	if h := cfg.Harness; h != nil {
		tb, err := fetchHarness(ctx, cfg.CacheDir, cfg.NPMRegistry, *h, harnessClient())
		if err != nil {
			return cfg, inputs{}, fmt.Errorf("failed to get the harness %s %s: %w", h.Name, h.Version, err)
		}
		harness, harnessID = &tb, h.Name+"@"+h.Version+" "+tb.integrity
	}
	kernel, busybox := r.Kernel, r.Busybox
	return cfg, inputs{
		Recipe: [3]int{bootRecipe, rootfsRecipe, assembleRecipe},
		Suite:  cfg.Suite, Mirror: cfg.Mirror, Packages: cfg.Packages,
		Kernel: kernel, Busybox: busybox, Agent: agentSum, Headroom: cfg.Headroom,
		CACerts: caSum, caPEM: caPEM, Harness: harnessID, harness: harness,
	}, nil
}

// lookup returns the image recorded for an input key in outDir's index.
func lookup(outDir, key string) (*Image, error) {
	hexDigest, err := os.ReadFile(filepath.Join(outDir, ".index", key))
	if err != nil {
		return nil, err
	}
	return Load(filepath.Join(outDir, strings.TrimSpace(string(hexDigest))))
}

// lockCache takes an exclusive lock on the cache so two builds never write the same
// entries at once; the lock dies with the process.
func lockCache(cacheDir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(cacheDir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("failed to open the cache lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("failed to lock the cache %s: %w", cacheDir, err)
	}
	return func() { f.Close() }, nil
}
