package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// checkout writes the base commit's tree, puts HEAD on the work branch at it, sets the
// agent's identity, and prepares the index so that git in the VM trusts it.
func (w *Workspace) checkout(ctx context.Context) error {
	if _, err := w.git.run(ctx, nil, 1<<20, "checkout", "--quiet", "--detach", "--no-recurse-submodules", w.Start); err != nil {
		return fmt.Errorf("failed to check out %s: %w", w.Start, err)
	}
	// The work branch at the base, created only if absent, then HEAD on it: neither
	// touches the index the checkout just wrote.
	if _, err := w.git.run(ctx, nil, 1<<20, "update-ref", "-m", "bumper: work branch at its start", "refs/heads/"+w.Branch, w.Start, ""); err != nil {
		return fmt.Errorf("failed to create the work branch %s: %w", w.Branch, err)
	}
	if _, err := w.git.run(ctx, nil, 1<<20, "symbolic-ref", "HEAD", "refs/heads/"+w.Branch); err != nil {
		return fmt.Errorf("failed to check out the work branch %s: %w", w.Branch, err)
	}
	for _, kv := range [][2]string{
		{"user.name", w.opts.Identity.Name}, {"user.email", w.opts.Identity.Email},
		// The VM sees these files through a new file system: other inode numbers,
		// owners and change times. Compare only what survives the copy (whole-second
		// modification time and size), or the agent's first git status re-reads and
		// re-hashes every file under emulation.
		{"core.checkStat", "minimal"}, {"core.trustCtime", "false"},
	} {
		if _, err := w.git.run(ctx, nil, 1<<20, "config", "--local", kv[0], kv[1]); err != nil {
			return fmt.Errorf("failed to set %s: %w", kv[0], err)
		}
	}
	// With checkStat=minimal git sees a change only through the whole-second mtime and
	// the size: an agent that rewrote a file to the same size within the second of the
	// checkout would go unseen, and its change uncommitted. So every checked-out file is
	// dated an hour back (no write in the VM, whose clock is the host's, can share that
	// second), and the index refreshed to those dates on the host, where hashing is fast.
	if err := backdate(w.RepoDir, time.Now().Add(-time.Hour).Truncate(time.Second)); err != nil {
		return err
	}
	if _, err := w.git.run(ctx, nil, 1<<20, "update-index", "-q", "--refresh"); err != nil {
		return fmt.Errorf("failed to refresh the index: %w", err)
	}
	// Files checked out in the second the index was written count as "racily clean"
	// and would be re-hashed in the VM too. The index is newer than every file, so
	// date it after them.
	later := time.Now().Truncate(time.Second).Add(2 * time.Second)
	if err := os.Chtimes(filepath.Join(w.RepoDir, ".git", "index"), later, later); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("failed to date the index: %w", err)
	}
	return nil
}

// backdate sets the modification time of everything under dir but .git to t, never
// following a link (a link's own time is set: a checked-out link may point anywhere).
func backdate(dir string, t time.Time) error {
	tv := []unix.Timeval{unix.NsecToTimeval(t.UnixNano()), unix.NsecToTimeval(t.UnixNano())}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p == filepath.Join(dir, ".git") {
			return filepath.SkipDir
		}
		return unix.Lutimes(p, tv)
	})
	if err != nil {
		return fmt.Errorf("failed to date the checkout: %w", err)
	}
	return nil
}

// allowedConfig are the only keys .git/config may hold after Prepare (git writes the
// core ones itself at init).
var allowedConfig = map[string]bool{
	"core.repositoryformatversion": true, "core.filemode": true, "core.bare": true,
	"core.logallrefupdates": true, "core.checkstat": true, "core.trustctime": true,
	"user.name": true, "user.email": true,
}

// verify refuses a workspace whose HEAD, work branch or configuration is not exactly
// what Prepare meant to make.
func (w *Workspace) verify(ctx context.Context) error {
	// The configuration first: git reads it (and what it includes) for every command.
	if err := checkConfig(ctx, filepath.Join(w.RepoDir, ".git", "config"), w.git); err != nil {
		return err
	}
	head, err := w.git.line(ctx, "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return fmt.Errorf("%w: %w", ErrHeadMismatch, err)
	}
	if head != w.Start {
		return fmt.Errorf("%w: HEAD is %s, want %s; refusing the workspace", ErrHeadMismatch, head, w.Start)
	}
	sym, err := w.git.line(ctx, "symbolic-ref", "HEAD")
	if err != nil {
		return fmt.Errorf("%w: %w", ErrHeadMismatch, err)
	}
	if sym != "refs/heads/"+w.Branch {
		return fmt.Errorf("%w: HEAD is on %s, want refs/heads/%s; refusing the workspace", ErrHeadMismatch, sym, w.Branch)
	}
	return nil
}

// checkConfig reads a repository's config file alone (not what it would include) and
// refuses any key outside allowedConfig: a URL with credentials, an extra header, a
// credential helper, an include, a filter or a hook path would all be outside it.
func checkConfig(ctx context.Context, path string, g *gitRunner) error {
	c := *g
	c.gitDir, c.workTree = "", ""
	out, err := c.run(ctx, nil, 1<<20, "config", "--file", path, "--no-includes", "--null", "--list")
	if err != nil {
		return fmt.Errorf("failed to read %s: %w", path, err)
	}
	for _, kv := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		key, _, _ := strings.Cut(kv, "\n")
		if key != "" && !allowedConfig[strings.ToLower(key)] {
			return fmt.Errorf("%w: %s", ErrUnsafeConfig, key)
		}
	}
	return nil
}
