package image

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"
)

// Log keys used by this package.
const (
	logKeyCommand  = "command"
	logKeyStep     = "step"
	logKeyDuration = "duration"
	logKeyImage    = "image"
)

var (
	debPackageName    = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]+$`)
	concreteKernelPkg = regexp.MustCompile(`^linux-image-[0-9][^ ]*-amd64$`)
)

// debPackage is a Debian package pinned to one version.
type debPackage struct {
	Name    string
	Version string
}

// runCmd runs a command and returns its stdout; a failure carries the tail of stderr.
func runCmd(ctx context.Context, dir string, env []string, name string, args ...string) ([]byte, error) {
	zerolog.Ctx(ctx).Debug().Strs(logKeyCommand, append([]string{name}, args...)).Msg("running")
	cmd := exec.CommandContext(ctx, name, args...)
	// On cancellation, SIGTERM first: debootstrap unmounts what it mounted in its
	// target from a trap that SIGKILL would skip.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	cmd.Dir = dir
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, tail(stderr.Bytes(), 2000))
	}
	return stdout.Bytes(), nil
}

// tail returns at most the last n bytes of b, trimmed.
func tail(b []byte, n int) string {
	b = bytes.TrimSpace(b)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// aptShow returns, by package name, the fields of the candidate versions of packages
// from the host's apt lists (apt-cache show), the ones apt-get download will pick. One
// call for several packages: each apt-cache run costs about a second on a busy host.
func aptShow(ctx context.Context, names ...string) (map[string]map[string]string, error) {
	for _, name := range names {
		if !debPackageName.MatchString(name) {
			return nil, fmt.Errorf("%q is not a Debian package name (lower-case letters, digits, '+', '-', '.')", name)
		}
	}
	args := append([]string{"show", "--no-all-versions"}, names...)
	out, err := runCmd(ctx, "", nil, "apt-cache", args...)
	if err != nil {
		return nil, fmt.Errorf("failed to look up %s in the host's apt lists (run apt-get update if they are stale): %w", strings.Join(names, ", "), err)
	}
	records := map[string]map[string]string{}
	fields := map[string]string{}
	var last string
	flush := func() {
		if name := fields["Package"]; name != "" {
			if _, seen := records[name]; !seen {
				records[name] = fields
			}
		}
		fields = map[string]string{}
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			flush()
		case line[0] == ' ' || line[0] == '\t':
			fields[last] += "\n" + strings.TrimSpace(line)
		default:
			if k, v, ok := strings.Cut(line, ":"); ok {
				last = k
				fields[k] = strings.TrimSpace(v)
			}
		}
	}
	flush()
	for _, name := range names {
		if records[name]["Version"] == "" {
			return nil, fmt.Errorf("failed to look up package %s: apt-cache shows no candidate version; run apt-get update", name)
		}
	}
	return records, nil
}

// resolveKernelPackage turns a kernel package name into a concrete, versioned package:
// a metapackage such as linux-image-amd64 resolves to the linux-image-<abi>-amd64 it
// depends on.
func resolveKernelPackage(ctx context.Context, name string) (debPackage, error) {
	records, err := aptShow(ctx, name)
	if err != nil {
		return debPackage{}, fmt.Errorf("failed to resolve kernel package: %w", err)
	}
	return concreteKernel(ctx, name, records[name])
}

// concreteKernel resolves a kernel package whose apt-cache fields are known.
func concreteKernel(ctx context.Context, name string, fields map[string]string) (debPackage, error) {
	if concreteKernelPkg.MatchString(name) {
		return debPackage{Name: name, Version: fields["Version"]}, nil
	}
	for _, dep := range strings.Split(fields["Depends"], ",") {
		alt, _, _ := strings.Cut(dep, "|")
		dname, _, _ := strings.Cut(strings.TrimSpace(alt), " ")
		if concreteKernelPkg.MatchString(dname) {
			return resolveKernelPackage(ctx, dname)
		}
	}
	return debPackage{}, fmt.Errorf("failed to resolve kernel package: %s is not a linux-image-<abi>-amd64 package and does not depend on one; pass a kernel package such as linux-image-amd64", name)
}

// downloadAndUnpack fetches one package with apt-get download into workDir and unpacks
// it with dpkg-deb -x into dest. Nothing is installed on the host.
func downloadAndUnpack(ctx context.Context, pkg debPackage, workDir, dest string) error {
	// apt drops privileges to _apt for downloads; it must be able to enter the directory.
	if err := os.Chmod(workDir, 0o755); err != nil {
		return fmt.Errorf("failed to prepare the download directory: %w", err)
	}
	if _, err := runCmd(ctx, workDir, nil, "apt-get", "download", "-q", pkg.Name+"="+pkg.Version); err != nil {
		return fmt.Errorf("failed to download %s %s (is the host's apt mirror reachable? run apt-get update): %w", pkg.Name, pkg.Version, err)
	}
	debs, err := filepath.Glob(filepath.Join(workDir, pkg.Name+"_*.deb"))
	if err != nil || len(debs) != 1 {
		return fmt.Errorf("failed to find the downloaded %s .deb in %s (found %d)", pkg.Name, workDir, len(debs))
	}
	if _, err := runCmd(ctx, "", nil, "dpkg-deb", "-x", debs[0], dest); err != nil {
		return fmt.Errorf("failed to unpack %s: %w", debs[0], err)
	}
	if err := os.Remove(debs[0]); err != nil {
		return fmt.Errorf("failed to remove %s: %w", debs[0], err)
	}
	return nil
}
