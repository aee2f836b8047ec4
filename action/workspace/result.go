package workspace

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/internal/revision"
)

// ResultRef is where Result keeps the work branch it read from the bundle, in the
// host's repository (never a branch: nothing on the host checks it out). Publishing
// pushes it to the work branch.
const ResultRef = "refs/bumper/result"

// maxBundleHeader bounds a bundle's header (signature, capabilities, prerequisites and
// refs); git's own are a few hundred bytes.
const maxBundleHeader = 64 << 10

// Result is the agent's work as it came back from the VM.
type Result struct {
	// Base is the commit the work branch started at (the approved base commit, or a
	// fix run's pull request head); Head the work branch's new head, which descends
	// from it.
	Base, Head string
	// Commits is the number of the run's own commits from Base to Head (not the base
	// branch's an update run merged).
	Commits int
	// Diff is the change from Base to Head, for the evidence.
	Diff evidence.DiffStat
	// BundleBytes is the size of the bundle the guest wrote.
	BundleBytes int64
}

// bundleHeader is what a bundle says it holds.
type bundleHeader struct {
	version       int
	size          int64 // bytes of header, up to and including its empty line
	prerequisites []string
	refs          map[string]string // ref name to object name
}

// Result reads the bundle the guest left in OutDir (BundleCommand), which is untrusted:
// it must be a regular file within MaxBundleBytes, carry exactly the work branch and
// nothing else, be complete on top of what the host has (git bundle verify), pass
// git's object checks on the way in, and its head must descend from the base commit
// by at most MaxCommits commits of its own (an update run's must also keep its merge:
// ErrNotMerged). It then returns the head and the diff stat. The head is kept in the
// host's repository as refs/bumper/result.
func (w *Workspace) Result(ctx context.Context) (*Result, error) {
	p := filepath.Join(w.OutDir, BundleName)
	info, err := os.Lstat(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: no %s in the guest's /out", ErrNoBundle, BundleName)
	}
	if err != nil {
		return nil, fmt.Errorf("failed to read the guest's bundle: %w", err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file (%s)", ErrBadBundle, BundleName, info.Mode().Type())
	}
	if info.Size() > w.opts.MaxBundleBytes {
		return nil, fmt.Errorf("%w: %d bytes, more than %d (Options.MaxBundleBytes)", ErrBadBundle, info.Size(), w.opts.MaxBundleBytes)
	}
	f, err := os.OpenFile(p, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return nil, fmt.Errorf("failed to open the guest's bundle: %w", err)
	}
	hdr, err := readBundleHeader(f)
	f.Close()
	if err != nil {
		return nil, err
	}
	want := "refs/heads/" + w.Branch
	head, ok := hdr.refs[want]
	if len(hdr.refs) != 1 || !ok {
		names := make([]string, 0, len(hdr.refs))
		for r := range hdr.refs {
			names = append(names, r)
		}
		slices.Sort(names)
		return nil, fmt.Errorf("%w: it must carry exactly %s, it carries %q", ErrBadBundle, want, names)
	}
	if _, err := w.git.run(ctx, nil, 1<<20, "bundle", "verify", p); err != nil {
		return nil, fmt.Errorf("%w: git bundle verify: %w", ErrBadBundle, err)
	}
	if head == w.Start {
		return nil, fmt.Errorf("%w: %s is still at the commit it started at", ErrNoBundle, want)
	}
	// The pack goes in through index-pack with git's object checks as errors (git
	// fetch from a bundle skips them), then must be complete from head to the base.
	if err := w.indexPack(ctx, p, hdr.size); err != nil {
		return nil, fmt.Errorf("%w: reading its objects: %w", ErrBadBundle, err)
	}
	if _, err := w.git.run(ctx, nil, 1<<20, append([]string{"rev-list", "--objects", "--quiet"}, w.Own(head)...)...); err != nil {
		return nil, fmt.Errorf("%w: its objects are incomplete: %w", ErrBadBundle, err)
	}
	if typ, err := w.git.line(ctx, "cat-file", "-t", head); err != nil {
		return nil, fmt.Errorf("%w: reading its head: %w", ErrBadBundle, err)
	} else if typ != "commit" {
		return nil, fmt.Errorf("%w: its %s names a %s, not a commit", ErrBadBundle, want, typ)
	}
	if _, err := w.git.run(ctx, nil, 1<<20, "update-ref", ResultRef, head); err != nil {
		return nil, fmt.Errorf("failed to keep the work branch's head: %w", err)
	}
	if _, err := w.git.run(ctx, nil, 1<<10, "merge-base", "--is-ancestor", w.Start, head); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 1 {
			// For a fix run this is the fast-forward rule: its push may only add commits
			// on top of the pull request's head.
			from := "the base commit"
			if w.Start != w.Base {
				from = "the pull request's head"
			}
			return nil, fmt.Errorf("%w: %s (%s) does not descend from %s %s", ErrBadBundle, want, head, from, w.Start)
		}
		return nil, fmt.Errorf("failed to compare the head with the base: %w", err)
	}
	if w.UpdateTo != "" {
		if err := w.checkMerged(ctx, head); err != nil {
			return nil, err
		}
	}
	n, err := w.git.line(ctx, append([]string{"rev-list", "--count"}, w.Own(head)...)...)
	if err != nil {
		return nil, fmt.Errorf("failed to count the work branch's commits: %w", err)
	}
	commits, err := strconv.Atoi(n)
	if err != nil || commits > w.opts.MaxCommits {
		return nil, fmt.Errorf("%w: %s commits on the work branch, at most %d (Options.MaxCommits)", ErrBadBundle, n, w.opts.MaxCommits)
	}
	diff, err := w.diffStat(ctx, head)
	if err != nil {
		return nil, err
	}
	return &Result{Base: w.Start, Head: head, Commits: commits, Diff: diff, BundleBytes: info.Size()}, nil
}

// checkMerged holds an update run's head to what the run is for: the base branch's
// head merged into the pull request's, never a rebase. UpdateTo must be an ancestor of
// head (the merge was kept), and Start on head's first-parent line (the branch goes on
// from the pull request's head, which the merge commit's first parent is; a branch
// rebuilt on top of UpdateTo, or a merge the other way round, has it on another line).
func (w *Workspace) checkMerged(ctx context.Context, head string) error {
	if _, err := w.git.run(ctx, nil, 1<<10, "merge-base", "--is-ancestor", w.UpdateTo, head); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 1 {
			return fmt.Errorf("%w: %s does not hold %s, the base branch's head (the merge was aborted or undone)", ErrNotMerged, head, w.UpdateTo)
		}
		return fmt.Errorf("failed to compare the head with the base branch's: %w", err)
	}
	// Start is an ancestor (checked before), so the first-parent line reaches it within
	// the run's own commits, if it passes through it at all.
	line, err := w.git.run(ctx, nil, 41*int64(w.opts.MaxCommits+2), "rev-list", "--first-parent", fmt.Sprintf("--max-count=%d", w.opts.MaxCommits+1), head)
	if err != nil {
		return fmt.Errorf("failed to read the work branch's first-parent line: %w", err)
	}
	if !slices.Contains(strings.Fields(string(line)), w.Start) {
		return fmt.Errorf("%w: the pull request's head %s is not on %s's first-parent line: the branch must go on from it with a merge commit whose first parent it is, never be rebuilt on the base branch", ErrNotMerged, w.Start, head)
	}
	return nil
}

// packChecks are git's object checks for what comes from the guest: fsck's errors,
// plus the path warnings that matter on a host that may check the tree out.
const packChecks = "--strict=hasdotgit=error,hasdot=error,hasdotdot=error,emptyname=error,fullpathname=error"

// indexPack feeds the bundle's pack (after its header of size bytes) to git index-pack
// with the object checks on; thin packs are completed from the base.
func (w *Workspace) indexPack(ctx context.Context, bundle string, size int64) error {
	f, err := os.OpenFile(bundle, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(size, io.SeekStart); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, w.git.bin, w.git.args(nil, "index-pack", "--stdin", "--fix-thin", packChecks)...)
	cmd.Env, cmd.Dir, cmd.Stdin = w.git.env(), w.RepoDir, f
	cmd.Stdout = &limitedBuffer{max: 4096, truncate: true}
	errBuf := &limitedBuffer{max: maxGitStderr, truncate: true}
	cmd.Stderr = errBuf
	if err := cmd.Run(); err != nil {
		return &GitError{Args: []string{"index-pack"}, Err: err, Stderr: strings.TrimSpace(errBuf.String())}
	}
	return nil
}

// diffStat is the numstat from the base to head: renames as a deletion and an addition,
// no external diff or text conversion (those would run programs).
func (w *Workspace) diffStat(ctx context.Context, head string) (evidence.DiffStat, error) {
	out, err := w.git.run(ctx, nil, w.opts.MaxDiffBytes, "diff", "--numstat", "-z", "--no-renames", "--no-ext-diff", "--no-textconv", w.Start, head, "--")
	if err != nil {
		return evidence.DiffStat{}, fmt.Errorf("failed to read the diff stat: %w", err)
	}
	files, err := parseNumstat(out)
	if err != nil {
		return evidence.DiffStat{}, err
	}
	return evidence.NewDiffStat(files), nil
}

// parseNumstat reads `git diff --numstat -z --no-renames`: "<ins>\t<del>\t<path>\0" per
// file, "-" for both counts of a binary file.
func parseNumstat(out []byte) ([]evidence.FileStat, error) {
	files := []evidence.FileStat{}
	for _, rec := range bytes.Split(bytes.TrimSuffix(out, []byte{0}), []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		parts := strings.SplitN(string(rec), "\t", 3)
		if len(parts) != 3 || parts[2] == "" {
			return nil, fmt.Errorf("failed to read the diff stat: unexpected record %q", rec)
		}
		fs := evidence.FileStat{Path: parts[2]}
		if parts[0] == "-" && parts[1] == "-" {
			fs.Binary = true
		} else {
			ins, err1 := strconv.Atoi(parts[0])
			del, err2 := strconv.Atoi(parts[1])
			if err1 != nil || err2 != nil || ins < 0 || del < 0 {
				return nil, fmt.Errorf("failed to read the diff stat: unexpected counts in %q", rec)
			}
			fs.Insertions, fs.Deletions = ins, del
		}
		files = append(files, fs)
	}
	return files, nil
}

// readBundleHeader parses a v2 or v3 bundle header: "# v2 git bundle" (or v3 with
// capabilities, of which only object-format=sha1 is accepted), prerequisites
// "-<oid>[ comment]", refs "<oid> <refname>", then an empty line.
func readBundleHeader(r io.Reader) (*bundleHeader, error) {
	br := bufio.NewReaderSize(io.LimitReader(r, maxBundleHeader), 4096)
	bad := func(format string, a ...any) (*bundleHeader, error) {
		return nil, fmt.Errorf("%w: header: "+format, append([]any{ErrBadBundle}, a...)...)
	}
	h := &bundleHeader{refs: map[string]string{}}
	readLine := func() (string, bool) {
		s, err := br.ReadString('\n')
		if err != nil {
			return "", false
		}
		h.size += int64(len(s))
		return strings.TrimSuffix(s, "\n"), true
	}
	sig, ok := readLine()
	switch {
	case !ok:
		return bad("empty or cut short")
	case sig == "# v2 git bundle":
		h.version = 2
	case sig == "# v3 git bundle":
		h.version = 3
	default:
		return bad("not a git bundle (first line %.40q)", sig)
	}
	for {
		line, ok := readLine()
		if !ok {
			return bad("cut short or longer than %d bytes", maxBundleHeader)
		}
		switch {
		case line == "":
			return h, nil
		case strings.HasPrefix(line, "@"):
			if h.version != 3 || len(h.prerequisites) > 0 || len(h.refs) > 0 {
				return bad("capability %.60q out of place", line)
			}
			if line != "@object-format=sha1" {
				return bad("capability %.60q is not accepted (only object-format=sha1)", line)
			}
		case strings.HasPrefix(line, "-"):
			oid, _, _ := strings.Cut(line[1:], " ")
			if !revision.IsCommitID(oid) || len(h.refs) > 0 {
				return bad("prerequisite %.60q", line)
			}
			h.prerequisites = append(h.prerequisites, oid)
		default:
			oid, ref, ok := strings.Cut(line, " ")
			if !ok || !revision.IsCommitID(oid) || !strings.HasPrefix(ref, "refs/") || strings.ContainsAny(ref, " \t\x00") {
				return bad("ref line %.80q", line)
			}
			if _, dup := h.refs[ref]; dup || len(h.refs) >= 16 {
				return bad("duplicate or too many refs")
			}
			h.refs[ref] = oid
		}
	}
}
