package image

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/bumperdev/bumper/internal/cachedir"
)

// rootfsRecipe changes whenever the debootstrap step or the clean-up after it changes,
// so trees cached by an older builder are not reused.
const rootfsRecipe = 1

// BasePackages returns the packages always in the rootfs besides Debian minbase.
func BasePackages() []string { return []string{"ca-certificates", "git"} }

// Guest user the agent runs commands as.
const (
	guestUser = "agent"
	guestUID  = 1000
)

const rootfsPackagesFile = "packages.json"

// bootstrapKey names the cached debootstrap tree for one suite, mirror and package set.
func bootstrapKey(suite, mirror string, packages []string) string {
	return jsonKey(struct {
		Recipe   int
		Suite    string
		Mirror   string
		Packages []string
	}{rootfsRecipe, suite, mirror, packages})
}

// bootstrapRootfs returns a cleaned Debian tree for the suite, mirror and packages, from
// the cache under cacheDir/rootfs or made with debootstrap (the slow step, ~30 s). The
// tree holds everything but the agent, so a new agent binary reuses it.
func bootstrapRootfs(ctx context.Context, cacheDir, suite, mirror string, packages []string, p progress) (tree string, installed []Package, err error) {
	final := filepath.Join(cacheDir, "rootfs", bootstrapKey(suite, mirror, packages))
	if raw, err := os.ReadFile(filepath.Join(final, rootfsPackagesFile)); err == nil {
		if err := json.Unmarshal(raw, &installed); err == nil {
			_ = cachedir.MarkUsed(final)
			p.step(ctx, "debootstrap "+suite)("cached")
			return filepath.Join(final, "tree"), installed, nil
		}
	}
	work, err := os.MkdirTemp(filepath.Join(cacheDir, "tmp"), "rootfs-")
	if err != nil {
		return "", nil, fmt.Errorf("failed to create a work directory: %w", err)
	}
	defer func() {
		if rerr := removeTree(work); rerr != nil && err == nil {
			err = rerr
		}
	}()
	tree = filepath.Join(work, "tree")

	done := p.step(ctx, fmt.Sprintf("debootstrap %s (minbase + %s) from %s", suite, strings.Join(packages, ","), mirror))
	_, err = runCmd(ctx, "", nil, "debootstrap", "--variant=minbase", "--components=main",
		"--include="+strings.Join(packages, ","), suite, tree, mirror)
	if err != nil {
		return "", nil, fmt.Errorf("failed to bootstrap the rootfs (check the mirror and the package names): %w", err)
	}
	done("")

	done = p.step(ctx, "prepare rootfs")
	if err := prepareTree(ctx, tree); err != nil {
		return "", nil, err
	}
	installed, err = installedPackages(ctx, tree)
	if err != nil {
		return "", nil, err
	}
	raw, err := json.MarshalIndent(installed, "", "  ")
	if err != nil {
		return "", nil, fmt.Errorf("failed to encode the package list: %w", err)
	}
	if err := os.WriteFile(filepath.Join(work, rootfsPackagesFile), raw, 0o644); err != nil {
		return "", nil, fmt.Errorf("failed to write the package list: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return "", nil, fmt.Errorf("failed to create the rootfs cache: %w", err)
	}
	if err := os.Rename(work, final); err != nil {
		return "", nil, fmt.Errorf("failed to store the rootfs in the cache: %w", err)
	}
	done(fmt.Sprintf("%d packages", len(installed)))
	return filepath.Join(final, "tree"), installed, nil
}

// prepareTree adds the guest user and directories and removes what must not ship: apt
// caches and lists, logs, the host's resolv.conf (the guest has no resolver; the proxy
// resolves names) and machine ids.
func prepareTree(ctx context.Context, tree string) error {
	if _, err := runCmd(ctx, "", nil, "chroot", tree, "useradd", "--uid", fmt.Sprint(guestUID),
		"--user-group", "--create-home", "--home-dir", "/home/"+guestUser, "--shell", "/bin/bash", guestUser); err != nil {
		return fmt.Errorf("failed to add the guest user: %w", err)
	}
	for _, d := range []string{"workspace", "out"} {
		p := filepath.Join(tree, d)
		if err := os.MkdirAll(p, 0o755); err != nil {
			return fmt.Errorf("failed to create /%s: %w", d, err)
		}
		if err := os.Chown(p, guestUID, guestUID); err != nil {
			return fmt.Errorf("failed to hand /%s to the guest user: %w", d, err)
		}
	}
	files := map[string]string{
		"etc/hosts":    "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n",
		"etc/hostname": "sandbox\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(tree, name), []byte(content), 0o644); err != nil {
			return fmt.Errorf("failed to write /%s: %w", name, err)
		}
	}
	for _, name := range []string{"etc/resolv.conf", "etc/machine-id", "var/lib/dbus/machine-id"} {
		if err := os.Remove(filepath.Join(tree, name)); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("failed to remove /%s: %w", name, err)
		}
	}
	for _, dir := range []string{"var/cache/apt", "var/lib/apt/lists", "var/log", "tmp", "var/tmp"} {
		if err := emptyDir(filepath.Join(tree, dir)); err != nil {
			return err
		}
	}
	return nil
}

// emptyDir removes the regular files and symlinks under dir, keeping the directories
// (apt and dpkg expect them to exist).
func emptyDir(dir string) error {
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if !d.IsDir() {
			return os.Remove(p)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("failed to clean %s: %w", dir, err)
	}
	return nil
}

// installedPackages lists the installed packages of a tree with the host's dpkg-query.
func installedPackages(ctx context.Context, tree string) ([]Package, error) {
	out, err := runCmd(ctx, "", nil, "dpkg-query", "--admindir="+filepath.Join(tree, "var/lib/dpkg"),
		"-W", "-f", "${Package}\t${Version}\t${db:Status-Status}\n")
	if err != nil {
		return nil, fmt.Errorf("failed to list the rootfs packages: %w", err)
	}
	var pkgs []Package
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) == 3 && f[2] == "installed" {
			pkgs = append(pkgs, Package{Name: f[0], Version: f[1]})
		}
	}
	sort.Slice(pkgs, func(i, j int) bool { return pkgs[i].Name < pkgs[j].Name })
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("failed to list the rootfs packages: dpkg-query found none in %s", tree)
	}
	return pkgs, nil
}

// treeUsage returns the bytes a tree needs on a 4 KiB-block file system and its inode
// count, counting hard links once.
func treeUsage(tree string) (bytes int64, inodes int64, err error) {
	seen := map[uint64]bool{}
	err = filepath.WalkDir(tree, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			if seen[st.Ino] {
				return nil
			}
			seen[st.Ino] = true
		}
		inodes++
		if info.Mode().IsRegular() || info.IsDir() {
			bytes += (info.Size() + 4095) / 4096 * 4096
		}
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("failed to measure the rootfs: %w", err)
	}
	return bytes, inodes, nil
}
