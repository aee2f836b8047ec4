package gitserver

import (
	"context"
	"fmt"
	"strings"
)

// PushedCommit is a commit as GitHub's push webhook lists it: the commit, the paths it
// added, removed and modified against its first parent, and whether it is distinct (no
// other ref reached it before).
type PushedCommit struct {
	CommitInfo
	Added, Removed, Modified []string
	Distinct                 bool
}

// PushedCommits are the commits a ref update from before to after brought to ref, as a
// push webhook's "commits" lists them: oldest first, the newest limit of them. A new
// ref (before "") brings what no other ref reaches; a deleted one (after "") nothing.
// head is the after commit itself (nil for a deletion), which the webhook's
// head_commit shows even when the update brought no new commit.
func (s *Server) PushedCommits(ctx context.Context, owner, repo, ref, before, after string, limit int) (commits []PushedCommit, head *PushedCommit, err error) {
	if after == "" {
		return nil, nil, nil
	}
	dir, err := s.openRef(owner, repo, ref)
	if err != nil {
		return nil, nil, err
	}
	// Commits another ref reaches were pushed before: not distinct.
	others := []string{"--exclude=" + ref, "--all"}
	args := []string{"rev-list", "--reverse", after}
	if before != "" {
		args = append(args, "^"+before)
	} else {
		args = append(args, "--not")
		args = append(args, others...)
	}
	out, err := s.run(ctx, dir, nil, nil, args...)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to list the commits of %s: %w", ref, err)
	}
	shas := strings.Fields(string(out))
	if len(shas) > limit {
		shas = shas[len(shas)-limit:]
	}
	out, err = s.run(ctx, dir, nil, nil, append([]string{"rev-list", after, "--not"}, others...)...)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to list the commits only %s reaches: %w", ref, err)
	}
	distinct := map[string]bool{}
	for _, sha := range strings.Fields(string(out)) {
		distinct[sha] = true
	}
	for _, sha := range shas {
		pc, err := s.pushedCommit(ctx, dir, sha)
		if err != nil {
			return nil, nil, err
		}
		pc.Distinct = distinct[sha]
		commits = append(commits, *pc)
	}
	head, err = s.pushedCommit(ctx, dir, after)
	if err != nil {
		return nil, nil, err
	}
	head.Distinct = distinct[after]
	return commits, head, nil
}

// pushedCommit reads one commit and the paths it changed against its first parent.
func (s *Server) pushedCommit(ctx context.Context, dir, sha string) (*PushedCommit, error) {
	raw, err := s.run(ctx, dir, nil, nil, "cat-file", "commit", sha)
	if err != nil {
		return nil, fmt.Errorf("failed to read commit %s: %w", sha, err)
	}
	ci, err := parseCommit(raw)
	if err != nil {
		return nil, fmt.Errorf("failed to parse commit %s: %w", sha, err)
	}
	ci.SHA = sha
	pc := &PushedCommit{CommitInfo: *ci, Added: []string{}, Removed: []string{}, Modified: []string{}}
	out, err := s.run(ctx, dir, nil, nil, "diff-tree", "--no-commit-id", "-r", "-z", "--name-status",
		"--root", "--diff-merges=first-parent", "--no-renames", sha)
	if err != nil {
		return nil, fmt.Errorf("failed to list the files of %s: %w", sha, err)
	}
	fields := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		switch path := fields[i+1]; fields[i] {
		case "A":
			pc.Added = append(pc.Added, path)
		case "D":
			pc.Removed = append(pc.Removed, path)
		default:
			pc.Modified = append(pc.Modified, path)
		}
	}
	return pc, nil
}
