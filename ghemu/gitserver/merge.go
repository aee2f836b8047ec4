package gitserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
)

// ErrConflict: the two commits do not merge cleanly.
var ErrConflict = errors.New("merge conflict")

// Merge makes a merge commit of head into branch, as GitHub's "Create a merge commit"
// does, and moves branch to it. The merge is computed without a work tree
// (`git merge-tree --write-tree`, git 2.38 or later); conflicts give ErrConflict and
// leave the branch where it was. author is also the committer.
func (s *Server) Merge(ctx context.Context, owner, repo, branch, head, message string, author Signature) (string, error) {
	dir, err := s.openRepo(owner, repo)
	if err != nil {
		return "", err
	}
	if err := checkBranch(branch); err != nil {
		return "", err
	}
	if err := checkOID("head", head); err != nil {
		return "", err
	}
	if err := author.check("author"); err != nil {
		return "", err
	}
	unlock := s.lock(owner, repo)
	defer unlock()
	ref := "refs/heads/" + branch
	base, err := s.existingRef(ctx, dir, ref)
	if err != nil {
		return "", err
	}
	out, err := s.run(ctx, dir, nil, nil, "merge-tree", "--write-tree", "--no-messages", base, head)
	if err != nil {
		if exitCode(err) == 1 {
			return "", fmt.Errorf("%w: %s into %s", ErrConflict, head, branch)
		}
		return "", fmt.Errorf("failed to merge %s into %s: %w", head, branch, err)
	}
	tree := string(bytes.TrimSpace(bytes.SplitN(out, []byte("\n"), 2)[0]))
	sha, err := s.commitTree(ctx, dir, tree, message, author, base, head)
	if err != nil {
		return "", fmt.Errorf("failed to create the merge commit: %w", err)
	}
	if err := s.writeRef(ctx, dir, ref, sha, base); err != nil {
		return "", err
	}
	return sha, nil
}
