package workspace

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os/exec"
	"strconv"
	"strings"

	"github.com/bumperdev/bumper/sandbox/agentproto"
)

// fetch gets exactly the base commit (and with FullHistory its ancestors) through the
// relay; the commit is named by its object name, so no ref of the git host matters.
// When the run starts elsewhere (a pull request's head), the work branch is fetched
// too, down to what the base already gave, and must still name Start; an update run's
// UpdateTo is fetched last, by its object name.
func (w *Workspace) fetch(ctx context.Context, gw *url.URL) error {
	if err := w.fetchOne(ctx, gw, w.opts.Base, !w.opts.FullHistory); err != nil {
		return err
	}
	if w.Start != w.Base {
		ref := "refs/heads/" + w.Branch
		if err := w.fetchOne(ctx, gw, "+"+ref+":"+startRef, false); err != nil {
			return err
		}
		got, err := w.git.line(ctx, "rev-parse", "--verify", "--quiet", startRef+"^{commit}")
		if err != nil {
			return fmt.Errorf("failed to read %s as fetched: %w", ref, err)
		}
		if got != w.Start {
			return fmt.Errorf("%w: %s moved from %s to %s since the run was dispatched (a human pushed?); nothing was run on it", ErrBranchMoved, w.Branch, w.Start, got)
		}
	}
	if w.UpdateTo != "" {
		// By its object name, down to what the base and the branch already gave.
		if err := w.fetchOne(ctx, gw, w.UpdateTo, false); err != nil {
			return err
		}
		if got, err := w.git.line(ctx, "rev-parse", "--verify", "--quiet", w.UpdateTo+"^{commit}"); err != nil || got != w.UpdateTo {
			return fmt.Errorf("%w: %s (the base branch's head to merge) is not a commit in what %s sent (%q)", ErrCommitNotFound, w.UpdateTo, w.Repository, got)
		}
	}
	got, err := w.git.line(ctx, "rev-parse", "--verify", "--quiet", w.opts.Base+"^{commit}")
	if err != nil || got != w.opts.Base {
		return fmt.Errorf("%w: %s is not a commit in what %s sent (%q)", ErrCommitNotFound, w.opts.Base, w.Repository, got)
	}
	return nil
}

// startRef is where the work branch as fetched is kept in the host's repository.
const startRef = "refs/bumper/start"

// fetchOne fetches one refspec (a commit's object name, or a ref into startRef)
// through the relay.
func (w *Workspace) fetchOne(ctx context.Context, gw *url.URL, refspec string, shallow bool) error {
	r, err := startRelay(gw, w.opts.MaxFetchBytes)
	if err != nil {
		return err
	}
	defer r.close()
	args := []string{"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules", "--no-auto-maintenance"}
	if shallow {
		args = append(args, "--depth=1")
	}
	args = append(args, r.url, refspec)
	_, err = w.git.run(ctx, fetchConfig, 1<<20, args...)
	w.FetchedBytes += r.received.Load()
	if r.exceeded.Load() {
		return fmt.Errorf("%w: %s at %s sent more than %d bytes (Options.MaxFetchBytes); the repository is too large for this runner's limit", ErrFetchTooLarge, w.Repository, refspec, w.opts.MaxFetchBytes)
	}
	if err != nil {
		var ge *GitError
		if errors.As(err, &ge) && (strings.Contains(ge.Stderr, "not our ref") || strings.Contains(ge.Stderr, "couldn't find remote ref") || strings.Contains(ge.Stderr, "no such remote ref")) {
			return fmt.Errorf("%w: %s has no %s reachable from its refs: %w", ErrCommitNotFound, w.Repository, refspec, err)
		}
		if ref := r.refused(); len(ref) > 0 {
			return fmt.Errorf("failed to fetch %s at %s through the git gateway (%s): %w", w.Repository, refspec, strings.Join(ref, "; "), err)
		}
		return fmt.Errorf("failed to fetch %s at %s through the git gateway: %w", w.Repository, refspec, err)
	}
	return nil
}

// inspectTree reads the base commit's tree before anything is written: its total size
// and file count against the limits, and no path that means .git on some file system.
func (w *Workspace) inspectTree(ctx context.Context, commit string) error {
	cmd := exec.CommandContext(ctx, w.git.bin, w.git.args(nil, "ls-tree", "-r", "-l", "-z", "--full-tree", commit)...)
	cmd.Env, cmd.Dir = w.git.env(), w.RepoDir
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	errBuf := &limitedBuffer{max: maxGitStderr, truncate: true}
	cmd.Stderr = errBuf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("failed to start git ls-tree: %w", err)
	}
	perr := func() error {
		br := bufio.NewReaderSize(stdout, 64<<10)
		for {
			rec, err := br.ReadSlice(0)
			if errors.Is(err, io.EOF) && len(rec) == 0 {
				return nil
			}
			if err != nil {
				return fmt.Errorf("failed to read the base commit's tree: %w", err)
			}
			meta, path, ok := strings.Cut(string(rec[:len(rec)-1]), "\t")
			f := strings.Fields(meta)
			if !ok || len(f) != 4 {
				return fmt.Errorf("failed to read the base commit's tree: unexpected entry %q", meta)
			}
			if bad := unsafePath(path); bad != "" {
				return fmt.Errorf("%w: %q (%s)", ErrUnsafeTree, path, bad)
			}
			w.Files++
			if size, err := strconv.ParseInt(f[3], 10, 64); err == nil {
				w.CheckoutBytes += size
			}
			if w.Files > w.opts.MaxFiles {
				return fmt.Errorf("%w: %s at %s has more than %d files (Options.MaxFiles)", ErrCheckoutTooLarge, w.Repository, commit, w.opts.MaxFiles)
			}
			if w.CheckoutBytes > w.opts.MaxCheckoutBytes {
				return fmt.Errorf("%w: %s at %s is more than %d bytes once checked out (Options.MaxCheckoutBytes)", ErrCheckoutTooLarge, w.Repository, commit, w.opts.MaxCheckoutBytes)
			}
		}
	}()
	if perr != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return perr
	}
	if err := cmd.Wait(); err != nil {
		return &GitError{Args: []string{"ls-tree"}, Err: err, Stderr: strings.TrimSpace(errBuf.String())}
	}
	return nil
}

// unsafePath says why a tree path must never be checked out, or "".
func unsafePath(p string) string {
	if p == "" || strings.HasPrefix(p, "/") {
		return "empty or absolute"
	}
	if p == agentproto.ReadOnlyMarker {
		// At the top of the checkout the guest would take it for the host's mark and
		// mount the repository read-only (a pull request's agent could so break the
		// runs that follow it).
		return "the guest's read-only marker"
	}
	for _, part := range strings.Split(p, "/") {
		l := strings.ToLower(strings.TrimRight(part, ". "))
		switch {
		case part == "" || part == "." || part == "..":
			return "empty, . or .. component"
		case l == ".git" || l == "git~1":
			return "a component that names .git"
		}
	}
	return ""
}
