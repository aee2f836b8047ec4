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
	m, err := s.MergeInto(ctx, owner, repo, MergeSpec{Branch: branch, Head: head, Message: message, Author: author})
	return m.SHA, err
}

// MergeSpec is a merge commit to make on a branch: Head merged into Branch's tip.
type MergeSpec struct {
	// Branch is moved to the merge commit, whose first parent is its tip.
	Branch string
	// Expect, when set, is the commit Branch must be at (ErrRefMismatch otherwise): the
	// merge is made on the tip its caller saw, or not at all.
	Expect string
	// Head is the commit merged in, the second parent.
	Head    string
	Message string
	// Author is who merged; Committer who made the commit (GitHub's own identity for
	// the merges its web flow makes). A zero Committer is the author.
	Author, Committer Signature
	// Sign, when set, signs the commit's payload (WebFlowSignature: GitHub signs the
	// merges it makes); MergeInto then returns the payload and the signature.
	Sign func(payload string) string
}

// Merged is the merge commit MergeInto made: its name and, when it was signed, the
// payload signed and the signature.
type Merged struct {
	SHA, Payload, Signature string
}

// MergeInto makes the merge commit m describes and moves m.Branch to it, under the
// repository's ref lock. Conflicts give ErrConflict and leave the branch where it was.
func (s *Server) MergeInto(ctx context.Context, owner, repo string, m MergeSpec) (Merged, error) {
	dir, err := s.openRepo(owner, repo)
	if err != nil {
		return Merged{}, err
	}
	if err := checkBranch(m.Branch); err != nil {
		return Merged{}, err
	}
	if err := checkOID("head", m.Head); err != nil {
		return Merged{}, err
	}
	if m.Expect != "" {
		if err := checkOID("expected tip", m.Expect); err != nil {
			return Merged{}, err
		}
	}
	if err := m.Author.check("author"); err != nil {
		return Merged{}, err
	}
	committer := m.Committer
	if committer.Name == "" && committer.Email == "" {
		committer = m.Author
	}
	if err := committer.check("committer"); err != nil {
		return Merged{}, err
	}
	unlock := s.lock(owner, repo)
	defer unlock()
	ref := "refs/heads/" + m.Branch
	base, err := s.existingRef(ctx, dir, ref)
	if err != nil {
		return Merged{}, err
	}
	if m.Expect != "" && base != m.Expect {
		return Merged{}, fmt.Errorf("%w: %s is at %s, not %s", ErrRefMismatch, ref, base, m.Expect)
	}
	tree, conflict, err := s.mergeTree(ctx, dir, base, m.Head)
	if err != nil {
		return Merged{}, err
	}
	if conflict {
		return Merged{}, fmt.Errorf("%w: %s into %s", ErrConflict, m.Head, m.Branch)
	}
	var out Merged
	if m.Sign != nil {
		out.SHA, out.Payload, out.Signature, err = s.writeCommit(ctx, dir, CommitSpec{Tree: tree, Parents: []string{base, m.Head},
			Message: m.Message, Author: m.Author, Committer: committer, Sign: m.Sign})
	} else {
		out.SHA, err = s.commitTreeAs(ctx, dir, tree, m.Message, m.Author, committer, base, m.Head)
	}
	if err != nil {
		return Merged{}, fmt.Errorf("failed to create the merge commit: %w", err)
	}
	if err := s.writeRef(ctx, dir, ref, out.SHA, base); err != nil {
		return Merged{}, err
	}
	return out, nil
}

// mergeTree merges two commits without a work tree: the merged tree, or conflict.
func (s *Server) mergeTree(ctx context.Context, dir, ours, theirs string) (string, bool, error) {
	out, err := s.run(ctx, dir, nil, nil, "merge-tree", "--write-tree", "--no-messages", ours, theirs)
	if err != nil {
		if exitCode(err) == 1 {
			return "", true, nil
		}
		return "", false, fmt.Errorf("failed to merge %s and %s: %w", theirs, ours, err)
	}
	return string(bytes.TrimSpace(bytes.SplitN(out, []byte("\n"), 2)[0])), false, nil
}

// Mergeability is what a real merge of a pull request's two commits says.
type Mergeability struct {
	// Conflict: head does not merge into base cleanly.
	Conflict bool
	// Behind: base has commits that head lacks.
	Behind bool
}

// CheckMerge merges head into base as a merge of the pull request would, without
// moving anything (the merged tree's objects stay in the repository, as GitHub keeps
// its test merge), and says whether it conflicts and whether base has commits head
// lacks. Both are revisions as Commit takes them; ErrNoMergeBase when the histories
// are unrelated.
func (s *Server) CheckMerge(ctx context.Context, owner, repo, base, head string) (Mergeability, error) {
	dir, shas, err := s.openCommits(ctx, owner, repo, base, head)
	if err != nil {
		return Mergeability{}, err
	}
	if _, err := s.mergeBase(ctx, dir, shas[0], shas[1], base, head); err != nil {
		return Mergeability{}, err
	}
	contained, err := s.isAncestor(ctx, dir, shas[0], shas[1])
	if err != nil {
		return Mergeability{}, err
	}
	_, conflict, err := s.mergeTree(ctx, dir, shas[0], shas[1])
	if err != nil {
		return Mergeability{}, err
	}
	return Mergeability{Conflict: conflict, Behind: !contained}, nil
}
