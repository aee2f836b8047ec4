package gitserver

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// IsAncestor reports whether ancestor is reachable from descendant (a commit is its
// own ancestor). Both are revisions as Commit takes them.
func (s *Server) IsAncestor(ctx context.Context, owner, repo, ancestor, descendant string) (bool, error) {
	dir, shas, err := s.openCommits(ctx, owner, repo, ancestor, descendant)
	if err != nil {
		return false, err
	}
	return s.isAncestor(ctx, dir, shas[0], shas[1])
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
	dir, shas, err := s.openCommits(ctx, owner, repo, a, b)
	if err != nil {
		return "", err
	}
	return s.mergeBase(ctx, dir, shas[0], shas[1], a, b)
}

// mergeBase is MergeBase on resolved commits ca and cb; a and b are the revisions as
// the caller named them, for the error.
func (s *Server) mergeBase(ctx context.Context, dir, ca, cb, a, b string) (string, error) {
	out, err := s.runLine(ctx, dir, "merge-base", ca, cb)
	if err != nil {
		if exitCode(err) == 1 {
			return "", fmt.Errorf("%w: %s and %s", ErrNoMergeBase, a, b)
		}
		return "", fmt.Errorf("failed to find the merge base of %s and %s: %w", a, b, err)
	}
	return out, nil
}

// Messages returns the messages of the commits reachable from head and not from
// exclude, newest first, at most limit of them.
func (s *Server) Messages(ctx context.Context, owner, repo, exclude, head string, limit int) ([]string, error) {
	dir, shas, err := s.openCommits(ctx, owner, repo, exclude, head)
	if err != nil {
		return nil, err
	}
	out, err := s.run(ctx, dir, nil, nil, "log", "-z", "--format=%B", "--max-count="+strconv.Itoa(limit), shas[1], "^"+shas[0], "--")
	if err != nil {
		return nil, fmt.Errorf("failed to read the messages of %s..%s: %w", exclude, head, err)
	}
	var msgs []string
	for _, m := range strings.Split(string(out), "\x00") {
		if m != "" {
			msgs = append(msgs, m)
		}
	}
	return msgs, nil
}
