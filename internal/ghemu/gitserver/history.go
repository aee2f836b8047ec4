package gitserver

import (
	"context"
	"fmt"
)

// IsAncestor reports whether ancestor is reachable from descendant (a commit is its
// own ancestor). Both are revisions as Commit takes them.
func (s *Server) IsAncestor(ctx context.Context, owner, repo, ancestor, descendant string) (bool, error) {
	dir, err := s.openRepo(owner, repo)
	if err != nil {
		return false, err
	}
	a, err := s.resolve(ctx, dir, ancestor)
	if err != nil {
		return false, err
	}
	d, err := s.resolve(ctx, dir, descendant)
	if err != nil {
		return false, err
	}
	return s.isAncestor(ctx, dir, a, d)
}

func (s *Server) isAncestor(ctx context.Context, dir, a, d string) (bool, error) {
	_, err := s.run(ctx, dir, nil, nil, "merge-base", "--is-ancestor", a, d)
	switch exitCode(err) {
	case -1:
		if err != nil {
			return false, fmt.Errorf("failed to compare %s and %s: %w", a, d, err)
		}
		return true, nil
	case 1:
		return false, nil
	}
	return false, fmt.Errorf("failed to compare %s and %s: %w", a, d, err)
}

// MergeBase returns the best common ancestor of two revisions (ErrNoMergeBase when
// their histories are unrelated).
func (s *Server) MergeBase(ctx context.Context, owner, repo, a, b string) (string, error) {
	dir, err := s.openRepo(owner, repo)
	if err != nil {
		return "", err
	}
	ca, err := s.resolve(ctx, dir, a)
	if err != nil {
		return "", err
	}
	cb, err := s.resolve(ctx, dir, b)
	if err != nil {
		return "", err
	}
	out, err := s.runLine(ctx, dir, "merge-base", ca, cb)
	if err != nil {
		if exitCode(err) == 1 {
			return "", fmt.Errorf("%w: %s and %s", ErrNoMergeBase, a, b)
		}
		return "", fmt.Errorf("failed to find the merge base of %s and %s: %w", a, b, err)
	}
	return out, nil
}
