package gitserver

import (
	"bytes"
	"context"
	"fmt"
	"strings"
)

// FileDiff is one changed file between two commits, as GitHub's pull request files and
// review comments need it.
type FileDiff struct {
	// Status is git's letter: A (added), D (deleted), M (modified), R (renamed),
	// T (type changed).
	Status string
	// Path is the file's path in the new commit (in the old one for D).
	Path string
	// OldPath is the path in the old commit; it differs from Path for R only.
	OldPath string
	// OldBlob and NewBlob are the blob object names (all zeros where the side is absent).
	OldBlob, NewBlob string
	// Patch is git's unified diff of the file from its first hunk header on, without the
	// "diff --git" headers; empty for a binary file or a change of mode only.
	Patch string
	// Binary is set when git found either side binary.
	Binary bool
}

// cleanDiffArgs make git's diff output the same whatever the repository says: no
// colour, no external diff or textconv drivers (a repository's attributes must not run
// programs on the emulator's host), and renames detected as GitHub shows them (git's
// default 50% similarity). Every diff the emulator serves goes through runDiff, so the
// REST files, review comments and the web view agree on what changed.
var cleanDiffArgs = []string{"--no-color", "--no-ext-diff", "--no-textconv", "--find-renames"}

// runDiff runs the git command cmd (diff-tree or format-patch) with cleanDiffArgs
// before args.
func (s *Server) runDiff(ctx context.Context, dir, cmd string, args ...string) ([]byte, error) {
	return s.run(ctx, dir, nil, nil, append(append([]string{cmd}, cleanDiffArgs...), args...)...)
}

// threeDot opens the repository and resolves base...head to the commits git compares:
// their merge base and head. ErrNoMergeBase when the histories are unrelated, as
// GitHub refuses to compare them too.
func (s *Server) threeDot(ctx context.Context, owner, repo, base, head string) (dir, mb, h string, err error) {
	dir, shas, err := s.openCommits(ctx, owner, repo, base, head)
	if err != nil {
		return "", "", "", err
	}
	mb, err = s.mergeBase(ctx, dir, shas[0], shas[1], base, head)
	if err != nil {
		return "", "", "", err
	}
	return dir, mb, shas[1], nil
}

// threeDotPatch is git's patch of mb against h, three lines of context.
func (s *Server) threeDotPatch(ctx context.Context, dir, mb, h string) ([]byte, error) {
	out, err := s.runDiff(ctx, dir, "diff-tree", "-r", "--patch", "-U3", mb, h)
	if err != nil {
		return nil, fmt.Errorf("failed to diff %s and %s: %w", mb, h, err)
	}
	return out, nil
}

// ThreeDotDiff is GitHub's base...head comparison, the one a pull request shows: what
// head changed since its merge base with base, with renames detected and three lines
// of context, file by file. Both are revisions as Commit takes them. ErrNoMergeBase
// when the histories are unrelated.
func (s *Server) ThreeDotDiff(ctx context.Context, owner, repo, base, head string) ([]FileDiff, error) {
	dir, mb, h, err := s.threeDot(ctx, owner, repo, base, head)
	if err != nil {
		return nil, err
	}
	// Two passes over the same diff queue: --raw -z gives exact paths and blobs (no
	// quoting), the patch pass the hunks. With the same rename detection git emits both
	// in the same order, one "diff --git" section per raw entry, mode-only changes
	// included.
	raw, err := s.runDiff(ctx, dir, "diff-tree", "-r", "--raw", "-z", "--no-abbrev", mb, h)
	if err != nil {
		return nil, fmt.Errorf("failed to list the changes between %s and %s: %w", mb, h, err)
	}
	files, err := parseRawZ(raw)
	if err != nil {
		return nil, err
	}
	patch, err := s.threeDotPatch(ctx, dir, mb, h)
	if err != nil {
		return nil, err
	}
	sections := splitPatch(patch)
	if len(sections) != len(files) {
		return nil, fmt.Errorf("failed to pair the diff of %s and %s: %d files but %d patches", mb, h, len(files), len(sections))
	}
	for i, sec := range sections {
		files[i].Patch, files[i].Binary = patchBody(sec)
	}
	return files, nil
}

// Diff is the unified diff a pull request from head into base shows on GitHub, whole:
// the patch ThreeDotDiff cuts into files, as the web view and diff_url serve it.
// Both are revisions as Commit takes them; ErrNoMergeBase when the histories are
// unrelated.
func (s *Server) Diff(ctx context.Context, owner, repo, base, head string) ([]byte, error) {
	dir, mb, h, err := s.threeDot(ctx, owner, repo, base, head)
	if err != nil {
		return nil, err
	}
	return s.threeDotPatch(ctx, dir, mb, h)
}

// CommitDiff is the unified diff of one commit against its first parent (against
// nothing for a root commit), as GitHub's commit page shows it.
func (s *Server) CommitDiff(ctx context.Context, owner, repo, rev string) ([]byte, error) {
	dir, shas, err := s.openCommits(ctx, owner, repo, rev)
	if err != nil {
		return nil, err
	}
	out, err := s.runDiff(ctx, dir, "diff-tree", "--root", "--no-commit-id", "--diff-merges=first-parent", "--patch", shas[0])
	if err != nil {
		return nil, fmt.Errorf("failed to diff commit %s: %w", rev, err)
	}
	return out, nil
}

// Patch is the pull request from head into base as GitHub's patch_url serves it: the
// commits on head since it left base, each as an email (git format-patch --stdout).
func (s *Server) Patch(ctx context.Context, owner, repo, base, head string) ([]byte, error) {
	dir, shas, err := s.openCommits(ctx, owner, repo, base, head)
	if err != nil {
		return nil, err
	}
	out, err := s.runDiff(ctx, dir, "format-patch", "--stdout", "--no-signature", "--patch", shas[0]+".."+shas[1])
	if err != nil {
		return nil, fmt.Errorf("failed to format the patches of %s..%s: %w", base, head, err)
	}
	return out, nil
}

// parseRawZ reads `git diff-tree --raw -z`: ":oldmode newmode old new status\0path\0"
// and, for renames and copies, a second path.
func parseRawZ(raw []byte) ([]FileDiff, error) {
	fields := strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00")
	var out []FileDiff
	for i := 0; i < len(fields); {
		meta := fields[i]
		if meta == "" {
			break
		}
		parts := strings.Fields(strings.TrimPrefix(meta, ":"))
		if len(parts) != 5 || i+1 >= len(fields) {
			return nil, fmt.Errorf("failed to parse git's raw diff entry %q", meta)
		}
		f := FileDiff{OldBlob: parts[2], NewBlob: parts[3], Status: parts[4][:1]}
		f.Path, f.OldPath = fields[i+1], fields[i+1]
		i += 2
		if f.Status == "R" || f.Status == "C" {
			if i >= len(fields) {
				return nil, fmt.Errorf("failed to parse git's raw diff entry %q: no new path", meta)
			}
			f.Path = fields[i]
			i++
		}
		out = append(out, f)
	}
	return out, nil
}

// splitPatch cuts a multi-file patch into its "diff --git" sections.
func splitPatch(p []byte) [][]byte {
	var out [][]byte
	start := -1
	for off := 0; off < len(p); {
		end := bytes.IndexByte(p[off:], '\n')
		next := len(p)
		if end >= 0 {
			next = off + end + 1
		}
		if bytes.HasPrefix(p[off:], []byte("diff --git ")) {
			if start >= 0 {
				out = append(out, p[start:off])
			}
			start = off
		}
		off = next
	}
	if start >= 0 {
		out = append(out, p[start:])
	}
	return out
}

// patchBody keeps a section from its first hunk header on, as GitHub's `patch` field
// does, without the final newline.
func patchBody(sec []byte) (string, bool) {
	i := bytes.Index(sec, []byte("\n@@ "))
	if i < 0 {
		return "", bytes.Contains(sec, []byte("\nBinary files ")) || bytes.Contains(sec, []byte("\nGIT binary patch"))
	}
	return strings.TrimSuffix(string(sec[i+1:]), "\n"), false
}
