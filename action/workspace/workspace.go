// Package workspace prepares a run's workspace on the host and reads the agent's work
// back from it.
//
// Prepare fetches exactly the approved base commit through the firewall's git gateway
// (which adds the token and audits the fetch), checks it out on the run's work branch
// with a neutral author identity, and writes the task files beside it. The result is a
// directory that sandbox.Config.WorkspaceDir turns into the VM's workspace disk:
//
//	Dir/            the workspace disk's root; /workspace in the VM
//	  repo/         the checkout at the base commit, on bumper/<issue>-<attempt>
//	  task/         the task files (TASK.md, task.json), outside the repository's tree
//	OutDir/         sandbox.Spec.OutDir: what the guest left in /out
//	  repo.bundle   the work branch as a git bundle (BundleCommand writes it)
//
// Git runs with a clean environment (no system, global or user configuration, no
// credential helper, no prompt, no hooks, HTTP to the fetch's one URL only, objects
// checked), so a repository cannot run code on the host or write outside the
// workspace while it is fetched or checked out. The fetch goes through a loopback relay
// that passes only the read side of smart HTTP for the run's repository and cuts it at
// Options.MaxFetchBytes. Nothing the VM returns is trusted: Result checks the bundle's
// size, header, refs and objects before it reads a head and a diff stat from it.
package workspace

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/bumperdev/bumper/internal/revision"
	"github.com/bumperdev/bumper/sandbox/agentproto"
)

// Where the VM sees the workspace: sandbox's guest agent mounts the workspace disk at
// /workspace and returns /out.
const (
	GuestDir    = "/workspace"
	GuestRepo   = GuestDir + "/" + RepoDirName
	GuestTask   = GuestDir + "/" + TaskDirName
	GuestOut    = "/out"
	GuestBundle = GuestOut + "/" + BundleName
	// GuestBase and GuestHead are a review workspace's read-only trees of the base
	// commit and of the pull request's head (Options.Review).
	GuestBase = GuestDir + "/" + BaseDirName
	GuestHead = GuestDir + "/" + HeadDirName
)

// Names inside the workspace and out directories.
const (
	RepoDirName = "repo"
	TaskDirName = "task"
	BundleName  = "repo.bundle"
	BaseDirName = "base"
	HeadDirName = "head"
)

// Log keys.
const (
	logKeyStep       = "step"
	logKeyDuration   = "duration"
	logKeyRepository = "repository"
	logKeyBase       = "base"
	logKeyBranch     = "branch"
	logKeyFetched    = "fetched_bytes"
	logKeyFiles      = "files"
)

// Defaults for the zero values of Options.
const (
	DefaultMaxFetchBytes    = 1 << 30
	DefaultMaxCheckoutBytes = 2 << 30
	DefaultMaxFiles         = 250000
	DefaultMaxTaskBytes     = 8 << 20
	DefaultMaxBundleBytes   = 256 << 20
	DefaultMaxCommits       = 1000
	DefaultMaxDiffBytes     = 16 << 20
)

// DefaultIdentity is the author and committer of the agent's commits unless Options
// says otherwise: no person's name, an address that can never be anyone's.
var DefaultIdentity = Identity{Name: "Bumper Agent", Email: "agent@bumper.invalid"}

// Errors of Prepare and Result, wrapped with details; test them with errors.Is.
var (
	ErrInvalidOptions   = errors.New("invalid workspace options")
	ErrCommitNotFound   = errors.New("the git host does not have the base commit")
	ErrFetchTooLarge    = errors.New("the fetch exceeded its size limit")
	ErrCheckoutTooLarge = errors.New("the base commit's tree exceeds the checkout limits")
	ErrUnsafeTree       = errors.New("the base commit's tree holds a path git must never check out")
	ErrHeadMismatch     = errors.New("the checked-out HEAD is not the requested commit")
	ErrUnsafeConfig     = errors.New("the repository's .git/config holds a key it must not")
	ErrNoBundle         = errors.New("the guest left no bundle of the work branch (no commits, or the run failed before writing it)")
	ErrBadBundle        = errors.New("the guest's bundle is refused")
	// ErrBranchMoved: the work branch on the git host is no longer at Options.Start,
	// the commit the run was dispatched for.
	ErrBranchMoved = errors.New("the pull request's branch moved since the run was dispatched")
)

// Identity is a git author.
type Identity struct {
	Name, Email string
}

func (id Identity) check() error {
	for _, v := range []string{id.Name, id.Email} {
		if v == "" || len(v) > 200 || strings.ContainsAny(v, "<>\"\\\n\r\x00") {
			return fmt.Errorf("identity %q <%q>: name and email must be non-empty, at most 200 bytes, without < > \" \\ or line breaks", id.Name, id.Email)
		}
	}
	if !strings.Contains(id.Email, "@") {
		return fmt.Errorf("identity email %q has no @", id.Email)
	}
	return nil
}

// Options says what to prepare.
type Options struct {
	// GitURL is the firewall's git gateway for the run's repository,
	// http://<firewall>/git/<owner>/<repo>.git: plain HTTP to a loopback or private
	// address, without credentials (the gateway adds the token).
	GitURL string
	// Base is the approved base commit, 40 hexadecimal digits.
	Base string
	// Issue and Attempt name the work branch, bumper/<issue>-<attempt>, unless Branch
	// names it.
	Issue, Attempt int
	// Branch is the work branch when it is not the attempt's own: a fix or review run
	// works on the pull request's branch, bumper/<issue>-<n> of an earlier attempt.
	Branch string
	// Start is the commit the work branch starts at when it is not Base: a fix or
	// review run's pull request head (40 hexadecimal digits). The branch is then
	// fetched from the git host too, and must still be at Start (ErrBranchMoved); the
	// work comes back on top of Start.
	Start string
	// Review lays out a review run's workspace: the base commit's tree in base/ and
	// Start's in head/ (files only, no .git), and base/, head/ and the task directory
	// read-only in the VM (agentproto.ReadOnlyMarker), so that nothing run before the
	// reviewer (the repository's tests, which the pull request wrote) changes its
	// program or its inputs.
	Review bool
	// FullHistory fetches the base commit's whole history instead of the commit alone.
	FullHistory bool
	// Identity is the author and committer set for the agent's commits (default
	// DefaultIdentity).
	Identity Identity
	// Task is written into the task directory: file name to content (wire.Task.Files()).
	// Names are plain file names: letters, digits, '.', '_', '-', not starting with '.'.
	Task map[string][]byte
	// Dir is where the workspace's directory is made (default os.TempDir()).
	Dir string
	// Git is the git binary (default "git" from PATH).
	Git string
	// MaxFetchBytes bounds what the git host may send (default DefaultMaxFetchBytes).
	MaxFetchBytes int64
	// MaxCheckoutBytes and MaxFiles bound the base commit's tree before it is checked
	// out: a small pack can hold a file that inflates to gigabytes.
	MaxCheckoutBytes int64
	MaxFiles         int
	// MaxTaskBytes bounds the task files together (default DefaultMaxTaskBytes).
	MaxTaskBytes int64
	// MaxBundleBytes, MaxCommits and MaxDiffBytes bound what Result accepts from the
	// guest (defaults DefaultMaxBundleBytes, DefaultMaxCommits, DefaultMaxDiffBytes).
	MaxBundleBytes int64
	MaxCommits     int
	MaxDiffBytes   int64
}

func (o Options) withDefaults() Options {
	if o.Start == "" {
		o.Start = o.Base
	}
	if o.Branch == "" && o.Issue > 0 && o.Attempt > 0 {
		o.Branch = Branch(o.Issue, o.Attempt)
	}
	if o.Identity == (Identity{}) {
		o.Identity = DefaultIdentity
	}
	if o.Dir == "" {
		o.Dir = os.TempDir()
	}
	if o.Git == "" {
		o.Git = "git"
	}
	if o.MaxFetchBytes == 0 {
		o.MaxFetchBytes = DefaultMaxFetchBytes
	}
	if o.MaxCheckoutBytes == 0 {
		o.MaxCheckoutBytes = DefaultMaxCheckoutBytes
	}
	if o.MaxFiles == 0 {
		o.MaxFiles = DefaultMaxFiles
	}
	if o.MaxTaskBytes == 0 {
		o.MaxTaskBytes = DefaultMaxTaskBytes
	}
	if o.MaxBundleBytes == 0 {
		o.MaxBundleBytes = DefaultMaxBundleBytes
	}
	if o.MaxCommits == 0 {
		o.MaxCommits = DefaultMaxCommits
	}
	if o.MaxDiffBytes == 0 {
		o.MaxDiffBytes = DefaultMaxDiffBytes
	}
	return o
}

var (
	gitPathRE  = regexp.MustCompile(`^/git/([A-Za-z0-9_.-]{1,100})/([A-Za-z0-9_.-]{1,100})\.git$`)
	taskNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)
)

// Branch is the work branch of an attempt: bumper/<issue>-<attempt>, the one ref the
// firewall lets the run push.
func Branch(issue, attempt int) string {
	return "bumper/" + strconv.Itoa(issue) + "-" + strconv.Itoa(attempt)
}

// BranchAttempt reads the attempt out of a work branch of issue,
// bumper/<issue>-<attempt>, written exactly as Branch writes it; ok is false for any
// other name.
func BranchAttempt(branch string, issue int) (attempt int, ok bool) {
	rest, found := strings.CutPrefix(branch, "bumper/"+strconv.Itoa(issue)+"-")
	if !found || issue < 1 {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 1 || strconv.Itoa(n) != rest {
		return 0, false
	}
	return n, true
}

// ParseGitURL checks a git gateway URL and returns it with the repository it names
// (owner/name).
func ParseGitURL(raw string) (*url.URL, string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, "", fmt.Errorf("%w: GitURL %q: %w", ErrInvalidOptions, raw, err)
	}
	bad := func(why string) (*url.URL, string, error) {
		return nil, "", fmt.Errorf("%w: GitURL %q %s; use the firewall's git gateway, http://<firewall address>/git/<owner>/<repo>.git", ErrInvalidOptions, raw, why)
	}
	switch {
	case u.Scheme != "http":
		return bad("is not plain http (the gateway is on loopback or the VM's private link; it speaks TLS upstream)")
	case u.User != nil:
		return bad("carries credentials; the gateway adds the token, the runner never holds it in a URL")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.Opaque != "":
		return bad("has a query or fragment")
	}
	addr, err := netip.ParseAddr(u.Hostname())
	if err != nil || addr.Zone() != "" {
		return bad("does not name the firewall by an IP address")
	}
	if addr = addr.Unmap(); !addr.IsLoopback() && !addr.IsPrivate() {
		return bad("is not a loopback or private address")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return bad("has an invalid port")
		}
	}
	m := gitPathRE.FindStringSubmatch(u.Path)
	if m == nil || u.RawPath != "" || m[1] == "." || m[1] == ".." || m[2] == "." || m[2] == ".." {
		return bad("does not have the path /git/<owner>/<repo>.git")
	}
	return u, m[1] + "/" + m[2], nil
}

func (o Options) validate() (*url.URL, string, error) {
	u, repo, err := ParseGitURL(o.GitURL)
	if err != nil {
		return nil, "", err
	}
	var errs []error
	if !revision.IsCommitID(o.Base) {
		errs = append(errs, fmt.Errorf("base commit %q is not a full lowercase SHA-1 (40 hexadecimal digits)", o.Base))
	}
	if o.Issue < 1 || o.Attempt < 1 {
		errs = append(errs, fmt.Errorf("issue %d and attempt %d must be positive", o.Issue, o.Attempt))
	} else if n, ok := BranchAttempt(o.Branch, o.Issue); !ok || (o.Start == o.Base && n != o.Attempt) {
		errs = append(errs, fmt.Errorf("work branch %q: want bumper/%d-<attempt> (this attempt's own, unless the run starts at a pull request's head)", o.Branch, o.Issue))
	}
	if !revision.IsCommitID(o.Start) {
		errs = append(errs, fmt.Errorf("start commit %q is not a full lowercase SHA-1 (40 hexadecimal digits)", o.Start))
	}
	if err := o.Identity.check(); err != nil {
		errs = append(errs, err)
	}
	var total int64
	for name, data := range o.Task {
		if !taskNameRE.MatchString(name) {
			errs = append(errs, fmt.Errorf("task file name %q: use letters, digits, '.', '_', '-', not starting with '.'", name))
		}
		total += int64(len(data))
	}
	if len(o.Task) > 64 || total > o.MaxTaskBytes {
		errs = append(errs, fmt.Errorf("task files: %d files, %d bytes; at most 64 files and %d bytes", len(o.Task), total, o.MaxTaskBytes))
	}
	if o.MaxFetchBytes < 0 || o.MaxCheckoutBytes < 0 || o.MaxFiles < 0 || o.MaxBundleBytes < 0 || o.MaxCommits < 0 || o.MaxDiffBytes < 0 {
		errs = append(errs, errors.New("limits must not be negative"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	return u, repo, nil
}

// Step is one named part of Prepare with its duration.
type Step struct {
	Name     string
	Duration time.Duration
}

// Workspace is a prepared workspace. Close removes it.
type Workspace struct {
	// Root holds everything Prepare made: Dir, OutDir and git's empty home.
	Root string
	// Dir is the workspace disk's content (sandbox.Config.WorkspaceDir); RepoDir and
	// TaskDir are inside it.
	Dir, RepoDir, TaskDir string
	// OutDir receives the guest's /out (sandbox.Spec.OutDir); Result reads it.
	OutDir string
	// Repository is owner/name; Base the approved base commit; Start the commit the
	// work branch starts at (Base, or a pull request's head); Branch the work branch.
	Repository, Base, Start, Branch string
	// BaseDir and HeadDir are a review workspace's trees of Base and Start (inside
	// Dir); empty otherwise.
	BaseDir, HeadDir string
	// FetchedBytes is what the git host sent through the gateway.
	FetchedBytes int64
	// CheckoutBytes and Files are the size and count of the base commit's files.
	CheckoutBytes int64
	Files         int
	// Steps are Prepare's parts with their durations.
	Steps []Step

	opts Options
	git  *gitRunner
}

// Prepare makes a fresh workspace for opts: it fetches exactly opts.Base through the
// git gateway, checks it out on the work branch, sets the agent's identity, checks that
// HEAD is the base commit and that .git/config holds nothing but what Prepare wrote, and
// writes the task files. On failure nothing is left behind.
func Prepare(ctx context.Context, opts Options) (_ *Workspace, err error) {
	opts = opts.withDefaults()
	gw, repo, err := opts.validate()
	if err != nil {
		return nil, err
	}
	bin, err := exec.LookPath(opts.Git)
	if err != nil {
		return nil, fmt.Errorf("git not found (apt-get install git): %w", err)
	}
	root, err := os.MkdirTemp(opts.Dir, "bumper-workspace-")
	if err != nil {
		return nil, fmt.Errorf("failed to create the workspace directory: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(root)
		}
	}()
	w := &Workspace{
		Root: root, Dir: filepath.Join(root, "disk"), OutDir: filepath.Join(root, "out"),
		Repository: repo, Base: opts.Base, Start: opts.Start, Branch: opts.Branch, opts: opts,
	}
	w.RepoDir, w.TaskDir = filepath.Join(w.Dir, RepoDirName), filepath.Join(w.Dir, TaskDirName)
	home := filepath.Join(root, "home")
	for _, d := range []string{home, w.Dir, w.RepoDir, w.TaskDir, w.OutDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return nil, fmt.Errorf("failed to create %s: %w", d, err)
		}
	}
	w.git = &gitRunner{bin: bin, home: home, gitDir: filepath.Join(w.RepoDir, ".git"), workTree: w.RepoDir, ident: opts.Identity}
	log := zerolog.Ctx(ctx)
	step := func(name string, fn func() error) error {
		start := time.Now()
		err := fn()
		w.Steps = append(w.Steps, Step{Name: name, Duration: time.Since(start)})
		log.Debug().Str(logKeyStep, name).Dur(logKeyDuration, time.Since(start)).Err(err).Msg("workspace step")
		return err
	}
	if err := step("init", func() error {
		// No template: no sample hooks, no info/exclude, nothing but what git needs.
		_, err := w.git.run(ctx, nil, 64<<10, "init", "-q", "--template=", "--initial-branch="+w.Branch)
		return err
	}); err != nil {
		return nil, err
	}
	if err := step("fetch", func() error { return w.fetch(ctx, gw) }); err != nil {
		return nil, err
	}
	if err := step("inspect tree", func() error { return w.inspectTree(ctx, w.Start) }); err != nil {
		return nil, err
	}
	if err := step("checkout", func() error { return w.checkout(ctx) }); err != nil {
		return nil, err
	}
	if err := step("verify", func() error { return w.verify(ctx) }); err != nil {
		return nil, err
	}
	if opts.Review {
		if err := step("review trees", func() error { return w.reviewTrees(ctx) }); err != nil {
			return nil, err
		}
	}
	if err := step("task files", func() error { return w.writeTask() }); err != nil {
		return nil, err
	}
	log.Info().Str(logKeyRepository, repo).Str(logKeyBase, opts.Base).Str(logKeyBranch, w.Branch).
		Int64(logKeyFetched, w.FetchedBytes).Int(logKeyFiles, w.Files).Msg("workspace prepared")
	return w, nil
}

// fetch gets exactly the base commit (and with FullHistory its ancestors) through the
// relay; the commit is named by its object name, so no ref of the git host matters.
// When the run starts elsewhere (a pull request's head), the work branch is fetched
// too, down to what the base already gave, and must still name Start.
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

// writeTask writes the task files into the task directory, never through a link; a
// review workspace's task directory is marked read-only for the VM.
func (w *Workspace) writeTask() error {
	for name, data := range w.opts.Task {
		if err := writeNew(filepath.Join(w.TaskDir, name), data); err != nil {
			return fmt.Errorf("failed to write task file %s: %w", name, err)
		}
	}
	if w.opts.Review {
		if err := writeNew(filepath.Join(w.TaskDir, agentproto.ReadOnlyMarker), nil); err != nil {
			return fmt.Errorf("failed to mark the task directory read-only: %w", err)
		}
	}
	return nil
}

// AddTaskFile writes one more file into the task directory, before the VM boots: what
// the runner computes from the fetched repository (a review run's pr.diff). The name
// follows Options.Task's rules and must be new.
func (w *Workspace) AddTaskFile(name string, data []byte) error {
	if !taskNameRE.MatchString(name) || name == agentproto.ReadOnlyMarker {
		return fmt.Errorf("%w: task file name %q: use letters, digits, '.', '_', '-', not starting with '.'", ErrInvalidOptions, name)
	}
	if err := writeNew(filepath.Join(w.TaskDir, name), data); err != nil {
		return fmt.Errorf("failed to write task file %s: %w", name, err)
	}
	return nil
}

// writeNew creates a file that must not exist, never through a link.
func writeNew(p string, data []byte) error {
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY|noFollow, 0o644)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}

// reviewTrees writes the base commit's and the start commit's trees (files only, no
// .git) into base/ and head/ with git's own checkout-index, which writes nothing
// through a link, from an index of their own; each marked read-only for the VM. The
// base's tree is what a review run's program runs from: approved, never the pull
// request's.
func (w *Workspace) reviewTrees(ctx context.Context) error {
	if err := w.inspectTree(ctx, w.Base); err != nil {
		return err
	}
	w.BaseDir, w.HeadDir = filepath.Join(w.Dir, BaseDirName), filepath.Join(w.Dir, HeadDirName)
	for _, t := range []struct{ commit, dir string }{{w.Base, w.BaseDir}, {w.Start, w.HeadDir}} {
		if err := os.Mkdir(t.dir, 0o755); err != nil {
			return fmt.Errorf("failed to create %s: %w", t.dir, err)
		}
		g := *w.git
		g.indexFile = filepath.Join(w.Root, "export.index")
		if _, err := g.run(ctx, nil, 1<<20, "read-tree", t.commit); err != nil {
			return fmt.Errorf("failed to read the tree of %s: %w", t.commit, err)
		}
		if _, err := g.run(ctx, nil, 1<<20, "checkout-index", "--all", "--force", "--prefix="+t.dir+"/"); err != nil {
			return fmt.Errorf("failed to write the tree of %s: %w", t.commit, err)
		}
		if err := os.Remove(g.indexFile); err != nil {
			return fmt.Errorf("failed to remove the export's index: %w", err)
		}
		if err := writeNew(filepath.Join(t.dir, agentproto.ReadOnlyMarker), nil); err != nil {
			return fmt.Errorf("failed to mark %s read-only (does the tree hold a file of that name?): %w", t.dir, err)
		}
	}
	return nil
}

// BundleCommand is what the guest runs at the end of the run to hand the work branch
// back: a bundle of the branch's commits since the base, written to /out. Git refuses
// to write an empty bundle, so no commits means no bundle (Result: ErrNoBundle).
func (w *Workspace) BundleCommand() []string {
	return []string{"git", "-C", GuestRepo, "bundle", "create", "--quiet", GuestBundle, "refs/heads/" + w.Branch, "^" + w.Start}
}

// Close removes everything Prepare made.
func (w *Workspace) Close() error {
	if err := os.RemoveAll(w.Root); err != nil {
		return fmt.Errorf("failed to remove the workspace: %w", err)
	}
	return nil
}

// IsCommitID reports whether s is a full, lower-case SHA-1 commit id, the only form the
// runner accepts for a commit it is told about.
func IsCommitID(s string) bool { return revision.IsCommitID(s) }
