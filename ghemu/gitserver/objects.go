package gitserver

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bumperdev/bumper/internal/pktline"
)

// CommitInfo is a commit as the emulator renders it in GitHub's commit objects.
type CommitInfo struct {
	SHA       string
	Tree      string
	Parents   []string
	Author    Signature
	Committer Signature
	Message   string
}

// resolve returns the object name of the commit rev names: a full object name, a full
// ref name ("refs/heads/main"), or a branch or tag name ("main", "v1"; branches win).
// It fails with ErrObjectNotFound when rev names no commit.
func (s *Server) resolve(ctx context.Context, dir, rev string) (string, error) {
	var candidates []string
	switch {
	case pktline.CheckOID(rev) == nil:
		candidates = []string{rev}
	case strings.HasPrefix(rev, "refs/"):
		if err := checkRef(rev); err != nil {
			return "", err
		}
		candidates = []string{rev}
	default:
		if err := checkBranch(rev); err != nil {
			return "", fmt.Errorf("%w: %q is neither a full object name nor a ref name", ErrInvalidName, rev)
		}
		candidates = []string{"refs/heads/" + rev, "refs/tags/" + rev}
	}
	for _, c := range candidates {
		out, err := s.runLine(ctx, dir, "rev-parse", "--verify", "--quiet", c+"^{commit}")
		if err == nil {
			return out, nil
		}
		if exitCode(err) != 1 {
			return "", fmt.Errorf("failed to resolve %s: %w", rev, err)
		}
	}
	return "", fmt.Errorf("%w: no commit %s", ErrObjectNotFound, rev)
}

// openCommits opens the repository and resolves each of revs to its commit, in order:
// how the reads that name commits begin.
func (s *Server) openCommits(ctx context.Context, owner, repo string, revs ...string) (string, []string, error) {
	dir, err := s.openRepo(owner, repo)
	if err != nil {
		return "", nil, err
	}
	shas := make([]string, len(revs))
	for i, rev := range revs {
		if shas[i], err = s.resolve(ctx, dir, rev); err != nil {
			return "", nil, err
		}
	}
	return dir, shas, nil
}

// Commit reads the commit rev names: a full object name, a full ref name, or a branch
// or tag name (branches win); ErrObjectNotFound when rev names no commit.
func (s *Server) Commit(ctx context.Context, owner, repo, rev string) (*CommitInfo, error) {
	dir, shas, err := s.openCommits(ctx, owner, repo, rev)
	if err != nil {
		return nil, err
	}
	sha := shas[0]
	raw, err := s.run(ctx, dir, nil, nil, "cat-file", "commit", sha)
	if err != nil {
		return nil, fmt.Errorf("failed to read commit %s: %w", sha, err)
	}
	c, err := parseCommit(raw)
	if err != nil {
		return nil, fmt.Errorf("failed to parse commit %s: %w", sha, err)
	}
	c.SHA = sha
	return c, nil
}

// parseCommit reads git's commit object format: header lines, a blank line, the message.
func parseCommit(raw []byte) (*CommitInfo, error) {
	header, message, ok := bytes.Cut(raw, []byte("\n\n"))
	if !ok {
		header, message = bytes.TrimSuffix(raw, []byte("\n")), nil
	}
	c := &CommitInfo{Message: string(message)}
	for _, line := range strings.Split(string(header), "\n") {
		key, value, _ := strings.Cut(line, " ")
		var err error
		switch key {
		case "tree":
			c.Tree = value
		case "parent":
			c.Parents = append(c.Parents, value)
		case "author":
			c.Author, err = parseIdent(value)
		case "committer":
			c.Committer, err = parseIdent(value)
		}
		if err != nil {
			return nil, fmt.Errorf("bad %s line: %w", key, err)
		}
	}
	if c.Tree == "" {
		return nil, fmt.Errorf("no tree line")
	}
	return c, nil
}

// parseIdent reads "Name <email> 1700000000 +0100".
func parseIdent(v string) (Signature, error) {
	lt, gt := strings.IndexByte(v, '<'), strings.LastIndexByte(v, '>')
	if lt < 0 || gt < lt {
		return Signature{}, fmt.Errorf("identity %q has no <email>", v)
	}
	sig := Signature{Name: strings.TrimSpace(v[:lt]), Email: v[lt+1 : gt]}
	fields := strings.Fields(v[gt+1:])
	if len(fields) != 2 {
		return Signature{}, fmt.Errorf("identity %q has no timestamp and zone", v)
	}
	secs, err := strconv.ParseInt(fields[0], 10, 64)
	if err != nil {
		return Signature{}, fmt.Errorf("identity %q: bad timestamp: %w", v, err)
	}
	zone, err := time.Parse("-0700", fields[1])
	if err != nil {
		return Signature{}, fmt.Errorf("identity %q: bad zone: %w", v, err)
	}
	sig.When = time.Unix(secs, 0).In(zone.Location())
	return sig, nil
}

// ReadFile returns the content and blob object name of the file at path in the commit
// rev names. It fails with ErrFileNotFound when there is none and ErrNotAFile when the
// path is a directory or a submodule.
func (s *Server) ReadFile(ctx context.Context, owner, repo, rev, path string) ([]byte, string, error) {
	dir, err := s.openRepo(owner, repo)
	if err != nil {
		return nil, "", err
	}
	if err := checkPath(path); err != nil {
		return nil, "", err
	}
	sha, err := s.resolve(ctx, dir, rev)
	if err != nil {
		return nil, "", err
	}
	out, err := s.run(ctx, dir, nil, nil, "ls-tree", "-z", "--full-tree", sha, "--", path)
	if err != nil {
		return nil, "", fmt.Errorf("failed to look up %s: %w", path, err)
	}
	entry, _, _ := bytes.Cut(out, []byte{0})
	meta, name, ok := bytes.Cut(entry, []byte{'\t'})
	if !ok || string(name) != path {
		return nil, "", fmt.Errorf("%w: %s at %s", ErrFileNotFound, path, rev)
	}
	fields := strings.Fields(string(meta))
	if len(fields) != 3 {
		return nil, "", fmt.Errorf("failed to parse ls-tree output %q", entry)
	}
	if fields[1] != "blob" {
		return nil, "", fmt.Errorf("%w: %s is a %s", ErrNotAFile, path, fields[1])
	}
	content, err := s.run(ctx, dir, nil, nil, "cat-file", "blob", fields[2])
	if err != nil {
		return nil, "", fmt.Errorf("failed to read blob %s: %w", fields[2], err)
	}
	return content, fields[2], nil
}

// CommitFiles commits files on top of parentSHA and moves branch to the new commit,
// without a work tree. A nil content deletes the path. With parentSHA "" it makes a
// root commit on a branch that must not exist (ErrRefExists); otherwise branch must be
// at parentSHA (ErrRefNotFound, ErrRefMismatch), so two writers cannot lose each
// other's commits. author is also the committer.
func (s *Server) CommitFiles(ctx context.Context, owner, repo, branch, parentSHA string, files map[string][]byte, message string, author Signature) (string, error) {
	dir, err := s.openRepo(owner, repo)
	if err != nil {
		return "", err
	}
	if err := checkBranch(branch); err != nil {
		return "", err
	}
	if parentSHA != "" {
		if err := checkOID("parent", parentSHA); err != nil {
			return "", err
		}
	}
	unlock := s.lock(owner, repo)
	defer unlock()
	return s.commitFiles(ctx, dir, branch, parentSHA, files, message, author)
}

// commitFiles is CommitFiles with the lock held: a throw-away index (GIT_INDEX_FILE)
// built from the parent's tree, the files hashed in, then write-tree, commit-tree and a
// compare-and-swap update-ref.
func (s *Server) commitFiles(ctx context.Context, dir, branch, parent string, files map[string][]byte, message string, author Signature) (string, error) {
	if strings.TrimSpace(message) == "" {
		return "", fmt.Errorf("%w: a commit needs a message", ErrInvalidName)
	}
	if err := author.check("author"); err != nil {
		return "", err
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		if err := checkPath(p); err != nil {
			return "", err
		}
		paths = append(paths, p)
	}
	sort.Strings(paths)
	ref := "refs/heads/" + branch
	cur, exists, err := s.readRef(ctx, dir, ref)
	if err != nil {
		return "", err
	}
	switch {
	case parent == "" && exists:
		return "", fmt.Errorf("%w: %s (pass its commit as the parent to add to it)", ErrRefExists, ref)
	case parent != "" && !exists:
		return "", fmt.Errorf("%w: %s", ErrRefNotFound, ref)
	case parent != "" && cur != parent:
		return "", fmt.Errorf("%w: %s is at %s, not %s", ErrRefMismatch, ref, cur, parent)
	}

	tmp, err := os.MkdirTemp("", "gitserver-index-")
	if err != nil {
		return "", fmt.Errorf("failed to create a temporary index directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index")}
	if parent != "" {
		if _, err := s.run(ctx, dir, nil, env, "read-tree", parent); err != nil {
			return "", fmt.Errorf("failed to read the tree of %s: %w", parent, err)
		}
	}
	var info bytes.Buffer
	for _, p := range paths {
		content := files[p]
		if content == nil {
			fmt.Fprintf(&info, "0 %s\t%s\x00", zeroOID(parent), p)
			continue
		}
		blob, err := s.run(ctx, dir, content, nil, "hash-object", "-w", "--stdin")
		if err != nil {
			return "", fmt.Errorf("failed to store %s: %w", p, err)
		}
		fmt.Fprintf(&info, "100644 %s\t%s\x00", bytes.TrimSpace(blob), p)
	}
	if info.Len() > 0 {
		if _, err := s.run(ctx, dir, info.Bytes(), env, "update-index", "-z", "--index-info"); err != nil {
			return "", fmt.Errorf("failed to stage files: %w", err)
		}
	}
	tree, err := s.run(ctx, dir, nil, env, "write-tree")
	if err != nil {
		return "", fmt.Errorf("failed to write the tree: %w", err)
	}
	var parents []string
	if parent != "" {
		parents = []string{parent}
	}
	sha, err := s.commitTree(ctx, dir, string(bytes.TrimSpace(tree)), message, author, parents...)
	if err != nil {
		return "", fmt.Errorf("failed to create the commit: %w", err)
	}
	if err := s.writeRef(ctx, dir, ref, sha, parent); err != nil {
		return "", err
	}
	return sha, nil
}

// commitTree writes a commit of tree with the parents, author as both author and
// committer, and returns its object name.
func (s *Server) commitTree(ctx context.Context, dir, tree, message string, author Signature, parents ...string) (string, error) {
	return s.commitTreeAs(ctx, dir, tree, message, author, author, parents...)
}

// commitTreeAs is commitTree with a committer of its own.
func (s *Server) commitTreeAs(ctx context.Context, dir, tree, message string, author, committer Signature, parents ...string) (string, error) {
	args := []string{"commit-tree", tree}
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	// One clock reading for both, so that "now" cannot differ between them.
	now := time.Now()
	if author.When.IsZero() {
		author.When = now
	}
	if committer.When.IsZero() {
		committer.When = author.When
	}
	env := append(author.env("AUTHOR"), committer.env("COMMITTER")...)
	out, err := s.run(ctx, dir, []byte(message), env, args...)
	if err != nil {
		return "", err
	}
	return string(bytes.TrimSpace(out)), nil
}
