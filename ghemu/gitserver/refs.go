package gitserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bumperdev/bumper/internal/pktline"
)

// CreateRepository creates the bare repository owner/repo with defaultBranch as HEAD.
// With files it also makes the first commit on that branch, by author, and returns its
// object name; with no files the repository stays empty (as GitHub's without
// auto_init) and the name is "".
func (s *Server) CreateRepository(ctx context.Context, owner, repo, defaultBranch string, files map[string][]byte, author Signature) (string, error) {
	dir, err := s.repoDir(owner, repo)
	if err != nil {
		return "", err
	}
	if err := checkBranch(defaultBranch); err != nil {
		return "", err
	}
	if len(files) > 0 {
		if err := author.check("author"); err != nil {
			return "", err
		}
	}
	s.createMu.Lock()
	defer s.createMu.Unlock()
	unlock := s.lock(owner, repo)
	defer unlock()
	if _, err := s.openRepo(owner, repo); err == nil {
		return "", fmt.Errorf("%w: %s/%s", ErrRepositoryExists, owner, repo)
	}
	// An owner's repositories share one directory whatever case their names use.
	ownerDir, ok := findFold(s.root, owner)
	if !ok {
		ownerDir = filepath.Dir(dir)
		if err := os.MkdirAll(ownerDir, 0o755); err != nil {
			return "", fmt.Errorf("failed to create the owner directory: %w", err)
		}
	}
	dir = filepath.Join(ownerDir, repo+".git")
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("%w: %s/%s", ErrRepositoryExists, owner, repo)
		}
		return "", fmt.Errorf("failed to create the repository directory: %w", err)
	}
	if _, err := s.run(ctx, dir, nil, nil, "init", "--quiet", "--bare", "--initial-branch="+defaultBranch); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("failed to initialise %s/%s: %w", owner, repo, err)
	}
	if len(files) == 0 {
		return "", nil
	}
	sha, err := s.commitFiles(ctx, dir, defaultBranch, "", files, "Initial commit", author)
	if err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("failed to make the first commit of %s/%s: %w", owner, repo, err)
	}
	return sha, nil
}

// Refs returns every ref of the repository (full name to object name), HEAD excluded.
func (s *Server) Refs(ctx context.Context, owner, repo string) (map[string]string, error) {
	dir, err := s.openRepo(owner, repo)
	if err != nil {
		return nil, err
	}
	return s.refs(ctx, dir)
}

func (s *Server) refs(ctx context.Context, dir string) (map[string]string, error) {
	out, err := s.run(ctx, dir, nil, nil, "for-each-ref", "--format=%(objectname) %(refname)")
	if err != nil {
		return nil, fmt.Errorf("failed to list refs: %w", err)
	}
	refs := make(map[string]string)
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if sha, name, ok := strings.Cut(line, " "); ok {
			refs[name] = sha
		}
	}
	return refs, nil
}

// readRef returns where ref points, and whether it exists.
func (s *Server) readRef(ctx context.Context, dir, ref string) (string, bool, error) {
	out, err := s.runLine(ctx, dir, "rev-parse", "--verify", "--quiet", ref)
	if err != nil {
		if exitCode(err) == 1 {
			return "", false, nil
		}
		return "", false, fmt.Errorf("failed to read %s: %w", ref, err)
	}
	return out, true, nil
}

// requireObject fails with ErrObjectNotFound when the object is not in the repository.
func (s *Server) requireObject(ctx context.Context, dir, oid string) error {
	if _, err := s.run(ctx, dir, nil, nil, "cat-file", "-e", oid); err != nil {
		if exitCode(err) == 1 || exitCode(err) == 128 {
			return fmt.Errorf("%w: %s", ErrObjectNotFound, oid)
		}
		return fmt.Errorf("failed to look up object %s: %w", oid, err)
	}
	return nil
}

// UpdateRef sets the full ref name to newSHA as a compare-and-swap: with oldSHA "" it
// creates the ref and fails with ErrRefExists if it is there; otherwise it moves the ref
// only if it points at oldSHA now (ErrRefNotFound, ErrRefMismatch). newSHA must exist
// (ErrObjectNotFound).
func (s *Server) UpdateRef(ctx context.Context, owner, repo, ref, newSHA, oldSHA string) error {
	dir, err := s.openRef(owner, repo, ref)
	if err != nil {
		return err
	}
	if err := checkOID("new object", newSHA); err != nil {
		return err
	}
	if oldSHA != "" {
		if err := checkOID("old object", oldSHA); err != nil {
			return err
		}
	}
	unlock := s.lock(owner, repo)
	defer unlock()
	if err := s.requireObject(ctx, dir, newSHA); err != nil {
		return err
	}
	cur, exists, err := s.readRef(ctx, dir, ref)
	if err != nil {
		return err
	}
	switch {
	case oldSHA == "" && exists:
		return fmt.Errorf("%w: %s", ErrRefExists, ref)
	case oldSHA != "" && !exists:
		return fmt.Errorf("%w: %s", ErrRefNotFound, ref)
	case oldSHA != "" && cur != oldSHA:
		return fmt.Errorf("%w: %s is at %s, not %s", ErrRefMismatch, ref, cur, oldSHA)
	}
	return s.writeRef(ctx, dir, ref, newSHA, oldSHA)
}

// writeRef points ref at newSHA if it is at oldSHA now ("": if it does not exist). The
// caller holds the lock and has already compared the ref with oldSHA, with the error
// its API promises; git's own compare-and-swap here only guards against writers outside
// this Server.
func (s *Server) writeRef(ctx context.Context, dir, ref, newSHA, oldSHA string) error {
	expect := oldSHA
	if expect == "" {
		expect = zeroOID(newSHA)
	}
	if _, err := s.run(ctx, dir, nil, nil, "update-ref", ref, newSHA, expect); err != nil {
		var ge *gitError
		if errors.As(err, &ge) && strings.Contains(ge.stderr, "exists; cannot create") {
			return fmt.Errorf("%w: %s: %s", ErrRefConflict, ref, ge.stderr)
		}
		return fmt.Errorf("failed to update %s: %w", ref, err)
	}
	return nil
}

// MoveRef points an existing ref at newSHA, as GitHub's PATCH /git/refs does: unless
// force is set the move must be a fast forward (ErrNotFastForward).
func (s *Server) MoveRef(ctx context.Context, owner, repo, ref, newSHA string, force bool) error {
	dir, err := s.openRef(owner, repo, ref)
	if err != nil {
		return err
	}
	if err := checkOID("new object", newSHA); err != nil {
		return err
	}
	unlock := s.lock(owner, repo)
	defer unlock()
	cur, err := s.existingRef(ctx, dir, ref)
	if err != nil {
		return err
	}
	// Checked before the ancestry test, which would fail on a missing object with a
	// less useful error than ErrObjectNotFound.
	if err := s.requireObject(ctx, dir, newSHA); err != nil {
		return err
	}
	if !force {
		ff, err := s.isAncestor(ctx, dir, cur, newSHA)
		if err != nil {
			return err
		}
		if !ff {
			return fmt.Errorf("%w: %s is at %s, which %s does not contain", ErrNotFastForward, ref, cur, newSHA)
		}
	}
	return s.writeRef(ctx, dir, ref, newSHA, cur)
}

// DeleteRef deletes the full ref name (ErrRefNotFound when absent).
func (s *Server) DeleteRef(ctx context.Context, owner, repo, ref string) error {
	dir, err := s.openRef(owner, repo, ref)
	if err != nil {
		return err
	}
	unlock := s.lock(owner, repo)
	defer unlock()
	cur, err := s.existingRef(ctx, dir, ref)
	if err != nil {
		return err
	}
	if _, err := s.run(ctx, dir, nil, nil, "update-ref", "-d", ref, cur); err != nil {
		return fmt.Errorf("failed to delete %s: %w", ref, err)
	}
	return nil
}

// DefaultBranch returns the branch HEAD names ("main").
func (s *Server) DefaultBranch(ctx context.Context, owner, repo string) (string, error) {
	dir, err := s.openRepo(owner, repo)
	if err != nil {
		return "", err
	}
	out, err := s.runLine(ctx, dir, "symbolic-ref", "HEAD")
	if err != nil {
		return "", fmt.Errorf("failed to read HEAD: %w", err)
	}
	branch, ok := strings.CutPrefix(out, "refs/heads/")
	if !ok {
		return "", fmt.Errorf("HEAD of %s/%s names %q, not a branch", owner, repo, out)
	}
	return branch, nil
}

// zeroOID is the all-zero name of the repository's hash length.
func zeroOID(like string) string {
	if pktline.CheckOID(like) == nil {
		return strings.Repeat("0", len(like))
	}
	return strings.Repeat("0", 40)
}

// openRef is openRepo for a call that names a ref, which must be well formed.
func (s *Server) openRef(owner, repo, ref string) (string, error) {
	dir, err := s.openRepo(owner, repo)
	if err != nil {
		return "", err
	}
	if err := checkRef(ref); err != nil {
		return "", err
	}
	return dir, nil
}

// existingRef reads a ref that must exist (ErrRefNotFound otherwise).
func (s *Server) existingRef(ctx context.Context, dir, ref string) (string, error) {
	cur, exists, err := s.readRef(ctx, dir, ref)
	if err != nil {
		return "", err
	}
	if !exists {
		return "", fmt.Errorf("%w: %s", ErrRefNotFound, ref)
	}
	return cur, nil
}
