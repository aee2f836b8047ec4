package gitserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bumperdev/bumper/internal/pktline"
)

// TreeEntry is one entry of a tree, as GitHub's Git Data API names it: Path (relative
// to the tree), Mode ("100644", "100755", "040000", "160000", "120000"), Type ("blob",
// "tree", "commit"), SHA ("" in a request deletes Path) and, for a blob, its Size.
type TreeEntry struct {
	Path, Mode, Type, SHA string
	Size                  int64
}

// WriteBlob stores content as a blob and returns its object name.
func (s *Server) WriteBlob(ctx context.Context, owner, repo string, content []byte) (string, error) {
	dir, err := s.openRepo(owner, repo)
	if err != nil {
		return "", err
	}
	out, err := s.run(ctx, dir, content, nil, "hash-object", "-w", "--stdin")
	if err != nil {
		return "", fmt.Errorf("failed to store a blob: %w", err)
	}
	return string(bytes.TrimSpace(out)), nil
}

// objectType is the type of object oid, "" when the repository lacks it.
func (s *Server) objectType(ctx context.Context, dir, oid string) string {
	if pktline.CheckOID(oid) != nil {
		return ""
	}
	t, err := s.runLine(ctx, dir, "cat-file", "-t", oid)
	if err != nil {
		return ""
	}
	return t
}

// MakeTree writes the tree of base (a tree or commit; "" for none) with entries
// applied, as POST /git/trees does: each entry's path added or replaced, an entry
// without a SHA deleting its path. A blob or tree entry must name an object of its
// type the repository has (ErrObjectNotFound); a submodule's commit need not exist.
// It returns the new tree's name and its top-level entries.
func (s *Server) MakeTree(ctx context.Context, owner, repo, base string, entries []TreeEntry) (string, []TreeEntry, error) {
	dir, err := s.openRepo(owner, repo)
	if err != nil {
		return "", nil, err
	}
	tmp, err := os.MkdirTemp("", "gitserver-tree-")
	if err != nil {
		return "", nil, fmt.Errorf("failed to create a temporary index directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index")}
	if base != "" {
		if t := s.objectType(ctx, dir, base); t != "tree" && t != "commit" {
			return "", nil, fmt.Errorf("%w: base_tree %s", ErrObjectNotFound, base)
		}
		if _, err := s.run(ctx, dir, nil, env, "read-tree", base); err != nil {
			return "", nil, fmt.Errorf("failed to read base tree %s: %w", base, err)
		}
	}
	// Entries apply in order, as GitHub applies them; update-index takes them in
	// batches, flushed before a subtree is read in.
	var info bytes.Buffer
	flush := func() error {
		if info.Len() == 0 {
			return nil
		}
		defer info.Reset()
		if _, err := s.run(ctx, dir, info.Bytes(), env, "update-index", "-z", "--replace", "--index-info"); err != nil {
			return fmt.Errorf("failed to apply the tree's entries: %w", err)
		}
		return nil
	}
	// remove stages the deletion of path and of everything below it.
	remove := func(path string) error {
		// A bare repository's ls-files matches no pathspec: the whole index, filtered.
		if err := flush(); err != nil {
			return err
		}
		out, err := s.run(ctx, dir, nil, env, "ls-files", "-z")
		if err != nil {
			return fmt.Errorf("failed to list %s: %w", path, err)
		}
		for _, p := range strings.Split(string(out), "\x00") {
			if p == path || strings.HasPrefix(p, path+"/") {
				fmt.Fprintf(&info, "0 %s\t%s\x00", zeroOID(base), p)
			}
		}
		return nil
	}
	for _, e := range entries {
		if err := checkPath(e.Path); err != nil {
			return "", nil, err
		}
		if e.SHA == "" {
			if err := remove(e.Path); err != nil {
				return "", nil, err
			}
			continue
		}
		switch t := s.objectType(ctx, dir, e.SHA); {
		case e.Type == "commit":
			if pktline.CheckOID(e.SHA) != nil {
				return "", nil, fmt.Errorf("%w: %s is not an object name", ErrInvalidName, e.SHA)
			}
		case t != e.Type:
			return "", nil, fmt.Errorf("%w: %s %s for %s", ErrObjectNotFound, e.Type, e.SHA, e.Path)
		}
		if e.Type == "tree" {
			// A subtree replaces what was at its path.
			if err := remove(e.Path); err != nil {
				return "", nil, err
			}
			if err := flush(); err != nil {
				return "", nil, err
			}
			if _, err := s.run(ctx, dir, nil, env, "read-tree", "--prefix="+e.Path+"/", e.SHA); err != nil {
				return "", nil, fmt.Errorf("failed to read tree %s into %s: %w", e.SHA, e.Path, err)
			}
			continue
		}
		fmt.Fprintf(&info, "%s %s\t%s\x00", strings.TrimLeft(e.Mode, "0"), e.SHA, e.Path)
	}
	if err := flush(); err != nil {
		return "", nil, err
	}
	out, err := s.run(ctx, dir, nil, env, "write-tree")
	if err != nil {
		return "", nil, fmt.Errorf("failed to write the tree: %w", err)
	}
	tree := string(bytes.TrimSpace(out))
	list, err := s.lsTree(ctx, dir, tree)
	if err != nil {
		return "", nil, err
	}
	return tree, list, nil
}

// lsTree lists a tree's top-level entries.
func (s *Server) lsTree(ctx context.Context, dir, tree string) ([]TreeEntry, error) {
	out, err := s.run(ctx, dir, nil, nil, "ls-tree", "-z", "--long", tree)
	if err != nil {
		return nil, fmt.Errorf("failed to list tree %s: %w", tree, err)
	}
	var list []TreeEntry
	for _, line := range strings.Split(string(out), "\x00") {
		meta, path, ok := strings.Cut(line, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 4 {
			continue
		}
		size, _ := strconv.ParseInt(f[3], 10, 64)
		list = append(list, TreeEntry{Path: path, Mode: f[0], Type: f[1], SHA: f[2], Size: size})
	}
	return list, nil
}

// CommitSpec is a commit POST /git/commits writes.
type CommitSpec struct {
	Tree              string
	Parents           []string
	Author, Committer Signature
	Message           string
	// Sign, when set, signs the commit: it is given the object without a signature
	// (the payload) and returns the armored signature, which goes into a gpgsig header.
	Sign func(payload string) string
}

// WriteCommit writes the commit spec describes without moving any ref, and returns
// its name, the signed payload and the signature ("" when unsigned). The tree and
// every parent must exist (ErrObjectNotFound).
func (s *Server) WriteCommit(ctx context.Context, owner, repo string, spec CommitSpec) (sha, payload, signature string, err error) {
	dir, err := s.openRepo(owner, repo)
	if err != nil {
		return "", "", "", err
	}
	return s.writeCommit(ctx, dir, spec)
}

// writeCommit is WriteCommit in an open repository.
func (s *Server) writeCommit(ctx context.Context, dir string, spec CommitSpec) (sha, payload, signature string, err error) {
	if s.objectType(ctx, dir, spec.Tree) != "tree" {
		return "", "", "", fmt.Errorf("%w: tree %s", ErrObjectNotFound, spec.Tree)
	}
	for _, p := range spec.Parents {
		if s.objectType(ctx, dir, p) != "commit" {
			return "", "", "", fmt.Errorf("%w: parent %s", ErrObjectNotFound, p)
		}
	}
	if err := spec.Author.check("author"); err != nil {
		return "", "", "", err
	}
	if err := spec.Committer.check("committer"); err != nil {
		return "", "", "", err
	}
	now := time.Now()
	if spec.Author.When.IsZero() {
		spec.Author.When = now
	}
	if spec.Committer.When.IsZero() {
		spec.Committer.When = spec.Author.When
	}
	var head bytes.Buffer
	fmt.Fprintf(&head, "tree %s\n", spec.Tree)
	for _, p := range spec.Parents {
		fmt.Fprintf(&head, "parent %s\n", p)
	}
	fmt.Fprintf(&head, "author %s\ncommitter %s\n", ident(spec.Author), ident(spec.Committer))
	payload = head.String() + "\n" + spec.Message
	obj := payload
	if spec.Sign != nil {
		signature = spec.Sign(payload)
		// A header's continuation lines start with a space.
		obj = head.String() + "gpgsig " + strings.ReplaceAll(strings.TrimRight(signature, "\n"), "\n", "\n ") + "\n\n" + spec.Message
	}
	out, err := s.run(ctx, dir, []byte(obj), nil, "hash-object", "-t", "commit", "-w", "--stdin")
	if err != nil {
		return "", "", "", fmt.Errorf("failed to write the commit: %w", err)
	}
	return string(bytes.TrimSpace(out)), payload, signature, nil
}

// WebFlowSignature stands in for GitHub's web-flow signature, which GitHub puts on the
// commits it makes itself (an App's commit through the Git Data API, a merge, an
// "Update branch"): an armored block over a digest of the payload. Only the emulator
// judges it (it records the commit as verified when it signs), so it need not be
// OpenPGP.
func WebFlowSignature(payload string) string {
	sum := sha256.Sum256([]byte("ghemu web-flow signature\x00" + payload))
	return "-----BEGIN PGP SIGNATURE-----\n\n" + base64.StdEncoding.EncodeToString(sum[:]) + "\n-----END PGP SIGNATURE-----\n"
}

// ident is a signature as a commit's author or committer line writes it.
func ident(sig Signature) string {
	return fmt.Sprintf("%s <%s> %d %s", sig.Name, sig.Email, sig.When.Unix(), sig.When.Format("-0700"))
}

// CommitsBetween lists the commits reachable from head and not from exclude, newest
// first, at most limit.
func (s *Server) CommitsBetween(ctx context.Context, owner, repo, exclude, head string, limit int) ([]string, error) {
	dir, shas, err := s.openCommits(ctx, owner, repo, exclude, head)
	if err != nil {
		return nil, err
	}
	out, err := s.run(ctx, dir, nil, nil, "rev-list", "--max-count="+strconv.Itoa(limit), shas[1], "^"+shas[0], "--")
	if err != nil {
		return nil, fmt.Errorf("failed to list the commits of %s..%s: %w", exclude, head, err)
	}
	return strings.Fields(string(out)), nil
}
