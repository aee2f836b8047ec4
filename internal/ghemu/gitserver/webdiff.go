package gitserver

import (
	"context"
	"fmt"
)

// diffArgs make git's patch output the same whatever the repository says: no colour,
// no external diff or textconv drivers (a repository's attributes must not run
// programs on the emulator's host), and renames detected as GitHub shows them.
var diffArgs = []string{"--no-color", "--no-ext-diff", "--no-textconv", "--find-renames", "--patch"}

// Diff is the unified diff a pull request from head into base shows on GitHub: the
// changes on head since it left base (git diff base...head), whatever base did since.
// Both are revisions as Commit takes them.
func (s *Server) Diff(ctx context.Context, owner, repo, base, head string) ([]byte, error) {
	dir, err := s.openRepo(owner, repo)
	if err != nil {
		return nil, err
	}
	b, err := s.resolve(ctx, dir, base)
	if err != nil {
		return nil, err
	}
	h, err := s.resolve(ctx, dir, head)
	if err != nil {
		return nil, err
	}
	mb, err := s.runLine(ctx, dir, "merge-base", b, h)
	if err != nil {
		if exitCode(err) == 1 {
			// Unrelated histories: GitHub refuses to compare them too.
			return nil, fmt.Errorf("%w: %s and %s", ErrNoMergeBase, base, head)
		}
		return nil, fmt.Errorf("failed to find the merge base of %s and %s: %w", base, head, err)
	}
	args := append([]string{"diff"}, diffArgs...)
	out, err := s.run(ctx, dir, nil, nil, append(args, mb, h)...)
	if err != nil {
		return nil, fmt.Errorf("failed to diff %s...%s: %w", base, head, err)
	}
	return out, nil
}

// CommitDiff is the unified diff of one commit against its first parent (against
// nothing for a root commit), as GitHub's commit page shows it.
func (s *Server) CommitDiff(ctx context.Context, owner, repo, rev string) ([]byte, error) {
	dir, err := s.openRepo(owner, repo)
	if err != nil {
		return nil, err
	}
	c, err := s.resolve(ctx, dir, rev)
	if err != nil {
		return nil, err
	}
	args := append([]string{"diff-tree", "--root", "--no-commit-id", "--diff-merges=first-parent"}, diffArgs...)
	out, err := s.run(ctx, dir, nil, nil, append(args, c)...)
	if err != nil {
		return nil, fmt.Errorf("failed to diff commit %s: %w", rev, err)
	}
	return out, nil
}

// Patch is the pull request from head into base as GitHub's patch_url serves it: the
// commits on head since it left base, each as an email (git format-patch --stdout).
func (s *Server) Patch(ctx context.Context, owner, repo, base, head string) ([]byte, error) {
	dir, err := s.openRepo(owner, repo)
	if err != nil {
		return nil, err
	}
	b, err := s.resolve(ctx, dir, base)
	if err != nil {
		return nil, err
	}
	h, err := s.resolve(ctx, dir, head)
	if err != nil {
		return nil, err
	}
	args := append([]string{"format-patch", "--stdout", "--no-signature"}, diffArgs...)
	out, err := s.run(ctx, dir, nil, nil, append(args, b+".."+h)...)
	if err != nil {
		return nil, fmt.Errorf("failed to format the patches of %s..%s: %w", base, head, err)
	}
	return out, nil
}
