package image

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/bumperdev/bumper/internal/cachedir"
)

// bootRecipe changes whenever the way vmlinux and initrd.img are made changes, so cached
// boot files from an older builder are not reused.
const bootRecipe = 1

const bootInfoFile = "boot.json"

// bootFiles are a cached kernel and initramfs pair.
type bootFiles struct {
	dir    string
	Kernel Kernel `json:"kernel"`
	Initrd Initrd `json:"initrd"`
}

// bootKey names the cache entry for one kernel, busybox and module set.
func bootKey(kernel, busybox debPackage) string {
	script := sha256.Sum256(initScript)
	return jsonKey(struct {
		Recipe  int
		Kernel  debPackage
		Busybox debPackage
		Modules []string
		Init    string
	}{bootRecipe, kernel, busybox, GuestModules(), hex.EncodeToString(script[:])})
}

// buildBoot returns the vmlinux and initrd.img for the given packages, from the cache
// under cacheDir/boot or freshly made.
func buildBoot(ctx context.Context, cacheDir string, kernel, busybox debPackage, p progress) (*bootFiles, error) {
	final := filepath.Join(cacheDir, "boot", bootKey(kernel, busybox))
	if bf, err := readBootFiles(final); err == nil {
		_ = cachedir.MarkUsed(final)
		p.step(ctx, "kernel and initramfs")("cached")
		return bf, nil
	}
	work, err := os.MkdirTemp(filepath.Join(cacheDir, "tmp"), "boot-")
	if err != nil {
		return nil, fmt.Errorf("failed to create a work directory: %w", err)
	}
	defer os.RemoveAll(work)
	out := filepath.Join(work, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		return nil, fmt.Errorf("failed to create a work directory: %w", err)
	}

	done := p.step(ctx, "download "+kernel.Name+" "+kernel.Version)
	kdir := filepath.Join(work, "kernel")
	if err := downloadAndUnpack(ctx, kernel, work, kdir); err != nil {
		return nil, err
	}
	done("")

	done = p.step(ctx, "extract vmlinux")
	vmlinuz, err := filepath.Glob(filepath.Join(kdir, "boot", "vmlinuz-*"))
	if err != nil || len(vmlinuz) != 1 {
		return nil, fmt.Errorf("failed to find the kernel in %s: want one boot/vmlinuz-*, found %d", kernel.Name, len(vmlinuz))
	}
	release := strings.TrimPrefix(filepath.Base(vmlinuz[0]), "vmlinuz-")
	bz, err := os.ReadFile(vmlinuz[0])
	if err != nil {
		return nil, fmt.Errorf("failed to read the kernel: %w", err)
	}
	vmlinux, err := ExtractVmlinux(ctx, bz)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(out, KernelFile), vmlinux, 0o644); err != nil {
		return nil, fmt.Errorf("failed to write vmlinux: %w", err)
	}
	kernelSum := sha256.Sum256(vmlinux)
	done(fmt.Sprintf("%d MB", len(vmlinux)>>20))

	done = p.step(ctx, "resolve kernel modules")
	modRoot := filepath.Join(kdir, "lib", "modules", release)
	modules, paths, err := resolveGuestModules(modRoot)
	if err != nil {
		return nil, err
	}
	done(strings.Join(modules, " "))

	done = p.step(ctx, "build initramfs")
	bbdir := filepath.Join(work, "busybox")
	if err := downloadAndUnpack(ctx, busybox, work, bbdir); err != nil {
		return nil, err
	}
	bb, err := os.ReadFile(filepath.Join(bbdir, "bin", "busybox"))
	if err != nil {
		return nil, fmt.Errorf("failed to read busybox from %s: %w", busybox.Name, err)
	}
	var initrd bytes.Buffer
	if err := writeInitramfs(&initrd, bb, release, modRoot, paths); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(out, InitrdFile), initrd.Bytes(), 0o644); err != nil {
		return nil, fmt.Errorf("failed to write the initramfs: %w", err)
	}
	initrdSum := sha256.Sum256(initrd.Bytes())
	done(fmt.Sprintf("%d modules, %.1f MB", len(modules), float64(initrd.Len())/(1<<20)))

	bf := &bootFiles{
		Kernel: Kernel{Package: kernel.Name, Version: kernel.Version, Release: release, SHA256: hex.EncodeToString(kernelSum[:])},
		Initrd: Initrd{SHA256: hex.EncodeToString(initrdSum[:]), Modules: modules, Busybox: busybox.Version},
	}
	info, err := json.MarshalIndent(bf, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("failed to encode %s: %w", bootInfoFile, err)
	}
	if err := os.WriteFile(filepath.Join(out, bootInfoFile), info, 0o644); err != nil {
		return nil, fmt.Errorf("failed to write %s: %w", bootInfoFile, err)
	}
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return nil, fmt.Errorf("failed to create the boot cache: %w", err)
	}
	if err := os.Rename(out, final); err != nil {
		return nil, fmt.Errorf("failed to store the kernel and initramfs in the cache: %w", err)
	}
	bf.dir = final
	return bf, nil
}

// resolveGuestModules returns GuestModules plus their dependencies in load order, and
// their paths relative to modRoot.
func resolveGuestModules(modRoot string) (names, paths []string, err error) {
	dep, err := generateModulesDep(modRoot)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to resolve kernel modules: %w", err)
	}
	md, err := parseModulesDep(bytes.NewReader(dep))
	if err != nil {
		return nil, nil, err
	}
	builtinRaw, err := os.ReadFile(filepath.Join(modRoot, "modules.builtin"))
	if err != nil {
		return nil, nil, fmt.Errorf("failed to resolve kernel modules: %w", err)
	}
	builtin, err := parseBuiltin(bytes.NewReader(builtinRaw))
	if err != nil {
		return nil, nil, err
	}
	names, err = md.resolve(GuestModules(), builtin)
	if err != nil {
		return nil, nil, err
	}
	for _, n := range names {
		paths = append(paths, path.Clean(md.path[n]))
	}
	return names, paths, nil
}

// readBootFiles loads a cached boot entry, checking both files against boot.json.
func readBootFiles(dir string) (*bootFiles, error) {
	raw, err := os.ReadFile(filepath.Join(dir, bootInfoFile))
	if err != nil {
		return nil, err
	}
	bf := &bootFiles{dir: dir}
	if err := json.Unmarshal(raw, bf); err != nil {
		return nil, fmt.Errorf("failed to read %s: %w", bootInfoFile, err)
	}
	for file, want := range map[string]string{KernelFile: bf.Kernel.SHA256, InitrdFile: bf.Initrd.SHA256} {
		got, _, err := hashFile(filepath.Join(dir, file))
		if err != nil {
			return nil, err
		}
		if got != want {
			return nil, errors.New("cached " + file + " does not match " + bootInfoFile)
		}
	}
	return bf, nil
}
