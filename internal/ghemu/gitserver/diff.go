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

// ThreeDotDiff is GitHub's base...head comparison, the one a pull request shows: what
// head changed since its merge base with base, with renames detected (git's default
// 50% similarity) and three lines of context. Both are revisions as Commit takes them.
// ErrNoMergeBase when the histories are unrelated.
func (s *Server) ThreeDotDiff(ctx context.Context, owner, repo, base, head string) ([]FileDiff, error) {
	mb, err := s.MergeBase(ctx, owner, repo, base, head)
	if err != nil {
		return nil, err
	}
	dir, err := s.openRepo(owner, repo)
	if err != nil {
		return nil, err
	}
	h, err := s.resolve(ctx, dir, head)
	if err != nil {
		return nil, err
	}
	// Two passes over the same diff queue: --raw -z gives exact paths and blobs (no
	// quoting), the patch pass the hunks. git emits both in the same order, one
	// "diff --git" section per raw entry, mode-only changes included.
	raw, err := s.run(ctx, dir, nil, nil, "diff-tree", "-r", "-M", "--raw", "-z", "--no-abbrev", mb, h)
	if err != nil {
		return nil, fmt.Errorf("failed to list the changes between %s and %s: %w", mb, h, err)
	}
	files, err := parseRawZ(raw)
	if err != nil {
		return nil, err
	}
	patch, err := s.run(ctx, dir, nil, nil, "diff-tree", "-r", "-M", "-p", "--no-color", "--no-ext-diff",
		"--no-textconv", "-U3", mb, h)
	if err != nil {
		return nil, fmt.Errorf("failed to diff %s and %s: %w", mb, h, err)
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
