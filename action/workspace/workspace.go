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
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/internal/revision"
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
	// ErrNotMerged: an update run's work does not keep the merge of Options.UpdateTo on
	// the pull request's line (the merge was undone, or the branch rebased onto it).
	ErrNotMerged = errors.New("the work branch does not merge the base branch's head into the pull request's head")
)

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
	// UpdateTo is an update run's base branch head, which the VM merges into the
	// branch (Options.UpdateTo); empty otherwise.
	UpdateTo string
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
		Repository: repo, Base: opts.Base, Start: opts.Start, Branch: opts.Branch, UpdateTo: opts.UpdateTo, opts: opts,
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
	if w.UpdateTo != "" {
		// The merge checks the base branch's files out in the VM: they meet the same
		// limits and path rules as the head's.
		if err := step("inspect update", func() error { return w.inspectTree(ctx, w.UpdateTo) }); err != nil {
			return nil, err
		}
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

// BundleCommand is what the guest runs at the end of the run to hand the work branch
// back: a bundle of the branch's commits since the start (and, for an update run, not
// the base branch's, which the host has), written to /out. Git refuses to write an
// empty bundle, so no commits means no bundle (Result: ErrNoBundle).
func (w *Workspace) BundleCommand() []string {
	argv := []string{"git", "-C", GuestRepo, "bundle", "create", "--quiet", GuestBundle, "refs/heads/" + w.Branch, "^" + w.Start}
	if w.UpdateTo != "" {
		argv = append(argv, "^"+w.UpdateTo)
	}
	return argv
}

// Own are the revision arguments that select the run's own commits up to head: those
// on top of the start and, for an update run, not the base branch's ("head ^start
// [^update-to]"), for git rev-list and git log. Everything else is someone else's: the
// base commit's history, the pull request's earlier commits, the base branch's.
func (w *Workspace) Own(head string) []string {
	args := []string{head, "^" + w.Start}
	if w.UpdateTo != "" {
		args = append(args, "^"+w.UpdateTo)
	}
	return args
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
