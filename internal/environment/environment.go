// Package environment is the identity of a repository's environment (issue #12): the
// digest of everything an environment image is made from, which names it in the image
// cache. The same inputs give the same key wherever it is computed: by `bumper env
// build DIR` on an admin's laptop (Key, over a checkout) and by the runner (Key over
// the workspace's checkout, or KeyAt over its git objects at the base commit). It
// lives in internal/ because both cmd/bumper and action/runner use it, and the
// sandbox-side builder may key its cache with it: action/ is closed to the sandbox.
//
// The repository is not trusted. Files are read only inside the tree and never
// through a link: a path with a symbolic link in it is refused (a link in the
// repository pointing at /etc/shadow is never followed), as is anything but a regular
// file. Sizes are bounded per file and in all, and the number of files after pattern
// expansion.
package environment

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/bumperdev/bumper/internal/repoconfig"
	"github.com/bumperdev/bumper/internal/revision"
)

// SchemaVersion is the version of the key's encoding; it changes whenever the encoding
// or what goes into it does, so an old key can never name a new recipe's image.
const SchemaVersion = 1

// Limits on what the key reads.
const (
	// MaxFileBytes bounds one file (the setup script or an input).
	MaxFileBytes = 16 << 20
	// MaxFiles bounds the input files after pattern expansion.
	MaxFiles = 1000
	// MaxTotalBytes bounds all files together.
	MaxTotalBytes = 256 << 20
	// MaxListed bounds the directory entries read while expanding patterns.
	MaxListed = 100_000
)

// Errors of Key and KeyAt, wrapped with the path; test them with errors.Is.
var (
	ErrLink     = errors.New("is a symbolic link or passes through one; Bumper reads only regular files in the repository's tree, never through a link")
	ErrNotFile  = errors.New("is not a regular file")
	ErrNotFound = errors.New("does not exist")
	ErrTooLarge = errors.New("is too large")
	ErrTooMany  = errors.New("too many files")
	ErrBadInput = errors.New("invalid environment")
)

// Kind is what a tree entry is, as the tree says without following links.
type Kind int

// The kinds of entries.
const (
	KindOther Kind = iota // a device, socket, FIFO or submodule: never read
	KindFile              // a regular file
	KindDir               // a directory
	KindLink              // a symbolic link: never followed
)

// Entry is one entry of a directory listing.
type Entry struct {
	Name string
	Kind Kind
}

// Tree is a read-only view of a repository's files: a checkout (Dir) or a commit's
// objects (GitTree). Paths are slash-separated and relative to the tree's root; "." is
// the root.
type Tree interface {
	// List lists a directory's entries without following links; a missing directory is
	// an error wrapping fs.ErrNotExist.
	List(ctx context.Context, dir string) ([]Entry, error)
	// Read returns a regular file's content. List has already shown every component of
	// name to be a directory and its last a file; Read still must not follow a link
	// out of the tree. More than max bytes is an error wrapping ErrTooLarge.
	Read(ctx context.Context, name string, max int64) ([]byte, error)
}

// Input is one thing that went into a key, for `bumper env build` to print.
type Input struct {
	// Kind is "schema", "base", "package", "setup", "cache_path", "allow", "file" or
	// "repository" (In).
	Kind string
	// Value is the version, digest, package, path or host.
	Value string
	// Size and Digest (sha256:<hex>) describe a file's content (setup and file).
	Size   int64
	Digest string
}

func (in Input) String() string {
	if in.Digest != "" {
		return fmt.Sprintf("%s %s (%d bytes, %s)", in.Kind, in.Value, in.Size, in.Digest)
	}
	return in.Kind + " " + in.Value
}

// Identity is an environment's key and what went into it.
type Identity struct {
	// Digest is sha256:<64 hex> over the canonical encoding of the inputs.
	Digest string
	// Inputs are what was encoded, in encoding order.
	Inputs []Input
}

// In is the identity scoped to one repository (owner/name, case-insensitive, as GitHub
// compares them): the runner's key. Two repositories on one runner host never share an
// environment, even with the same inputs, because a setup may run files it does not
// declare (a script it calls), which the key does not cover: another repository with
// the same declared inputs could otherwise leave a poisoned image for this one's runs.
func (id Identity) In(repository string) Identity {
	repository = strings.ToLower(repository)
	e := encoder{h: sha256.New()}
	e.str("bumper environment of a repository")
	e.str(id.Digest)
	e.str(repository)
	inputs := append(slices.Clone(id.Inputs), Input{Kind: "repository", Value: repository})
	return Identity{Digest: "sha256:" + hex.EncodeToString(e.h.Sum(nil)), Inputs: inputs}
}

// Key computes the identity of env on the base image whose digest is base, reading
// the setup script and the input files from the checkout in repoDir (the working tree
// as it is: uncommitted changes count, which is what an admin iterating on a setup
// script wants).
func Key(base string, env repoconfig.Environment, repoDir string) (Identity, error) {
	t, err := Dir(repoDir)
	if err != nil {
		return Identity{}, err
	}
	defer t.Close()
	return KeyAt(context.Background(), base, env, t)
}

// KeyAt computes the identity of env on the base image base, reading files from tree.
// The runner's tree is the workspace it prepared at the approved base commit
// (GitTree over its objects, or Dir over its checkout), so no file is read through
// GitHub's API and the key covers exactly the commit the setup will run at.
func KeyAt(ctx context.Context, base string, env repoconfig.Environment, tree Tree) (Identity, error) {
	if !revision.Valid(base) {
		return Identity{}, fmt.Errorf("%w: base image digest %q is not sha256:<64 hex digits>", ErrBadInput, base)
	}
	if len(env.Packages) == 0 && env.Setup == "" {
		return Identity{}, fmt.Errorf("%w: it declares neither packages nor a setup script", ErrBadInput)
	}
	for _, p := range append([]string{env.Setup}, env.Inputs...) {
		if p != "" && !inTree(p) {
			return Identity{}, fmt.Errorf("%w: %q is not a clean path inside the repository; parse %s with repoconfig first", ErrBadInput, p, repoconfig.Path)
		}
	}
	r := &reader{ctx: ctx, tree: tree}
	var setup []byte
	if env.Setup != "" {
		if err := r.resolve(env.Setup, false); err != nil {
			return Identity{}, fmt.Errorf("failed to read environment.setup: %w", err)
		}
		var err error
		if setup, err = r.read(env.Setup); err != nil {
			return Identity{}, fmt.Errorf("failed to read environment.setup: %w", err)
		}
		r.set = nil // the setup counts once, as the setup
	}
	for _, pat := range env.Inputs {
		if err := r.resolve(pat, hasMeta(pat)); err != nil {
			return Identity{}, fmt.Errorf("failed to read environment.inputs: %w", err)
		}
	}
	files := slices.Sorted(func(yield func(string) bool) {
		for f := range r.set {
			if !yield(f) {
				return
			}
		}
	})
	contents := make([][]byte, len(files))
	for i, f := range files {
		b, err := r.read(f)
		if err != nil {
			return Identity{}, fmt.Errorf("failed to read environment.inputs: %w", err)
		}
		contents[i] = b
	}

	e := encoder{h: sha256.New()}
	add := func(kind, value string, content []byte) {
		in := Input{Kind: kind, Value: value}
		if content != nil {
			in.Size, in.Digest = int64(len(content)), revision.Of(content)
		}
		e.inputs = append(e.inputs, in)
	}
	e.str("bumper environment key")
	e.u64(SchemaVersion)
	add("schema", fmt.Sprint(SchemaVersion), nil)
	e.str("base")
	e.str(base)
	add("base", base, nil)
	e.list("packages", sortedUnique(env.Packages), func(p string) { add("package", p, nil) })
	e.str("setup")
	if env.Setup == "" {
		e.u64(0)
	} else {
		e.u64(1)
		e.str(env.Setup)
		e.bytes(setup)
		add("setup", env.Setup, setup)
	}
	e.list("cache_paths", sortedUnique(env.CachePaths), func(p string) { add("cache_path", p, nil) })
	e.list("allow", sortedUnique(env.Allow), func(h string) { add("allow", h, nil) })
	e.str("inputs")
	e.u64(uint64(len(files)))
	for i, f := range files {
		e.str(f)
		e.bytes(contents[i])
		add("file", f, contents[i])
	}
	return Identity{Digest: "sha256:" + hex.EncodeToString(e.h.Sum(nil)), Inputs: e.inputs}, nil
}

// encoder writes the canonical encoding: every string and byte string is prefixed
// with its length, every list with its count, so no two different inputs can encode
// to the same bytes by moving a boundary.
type encoder struct {
	h      hash.Hash
	inputs []Input
}

func (e *encoder) u64(n uint64) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], n)
	e.h.Write(b[:])
}

func (e *encoder) bytes(b []byte) {
	e.u64(uint64(len(b)))
	e.h.Write(b)
}

func (e *encoder) str(s string) { e.bytes([]byte(s)) }

func (e *encoder) list(name string, items []string, each func(string)) {
	e.str(name)
	e.u64(uint64(len(items)))
	for _, s := range items {
		e.str(s)
		each(s)
	}
}

func sortedUnique(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

// inTree reports whether p is a clean relative path that stays inside the tree.
func inTree(p string) bool {
	return p != "." && path.Clean(p) == p && !path.IsAbs(p) && p != ".." && !strings.HasPrefix(p, "../")
}

func hasMeta(p string) bool { return strings.ContainsAny(p, "*?[") }

// isGitDir says a directory entry is git's own, which no tree source shares.
func isGitDir(name string) bool { return strings.EqualFold(name, ".git") }

// reader expands patterns over a tree and reads files within the limits.
type reader struct {
	ctx     context.Context
	tree    Tree
	set     map[string]bool
	matched int
	listed  int
	total   int64
}

// resolve adds the files pat names to r.set. A literal path must exist and be a
// regular file; a pattern must match at least one. A link on the way is refused, and
// so is a link a pattern matches.
func (r *reader) resolve(pat string, glob bool) error {
	r.matched = 0
	if err := r.walk(".", strings.Split(pat, "/"), pat, glob); err != nil {
		return err
	}
	if glob && r.matched == 0 {
		return fmt.Errorf("%s: the pattern matches no file; fix it or remove it from environment.inputs", pat)
	}
	return nil
}

func (r *reader) add(name string) error {
	r.matched++
	if r.set == nil {
		r.set = map[string]bool{}
	}
	if !r.set[name] {
		if len(r.set) >= MaxFiles {
			return fmt.Errorf("%w: environment.inputs name more than %d files; name fewer (the files the setup reads)", ErrTooMany, MaxFiles)
		}
		r.set[name] = true
	}
	return nil
}

func (r *reader) walk(dir string, parts []string, pat string, glob bool) error {
	if err := r.ctx.Err(); err != nil {
		return err
	}
	entries, err := r.tree.List(r.ctx, dir)
	if err != nil {
		return fmt.Errorf("failed to list %s: %w", dir, err)
	}
	if r.listed += len(entries); r.listed > MaxListed {
		return fmt.Errorf("%w: expanding environment.inputs read more than %d directory entries; use narrower patterns", ErrTooMany, MaxListed)
	}
	part, last := parts[0], len(parts) == 1
	join := func(name string) string {
		if dir == "." {
			return name
		}
		return dir + "/" + name
	}
	if !hasMeta(part) {
		i := slices.IndexFunc(entries, func(e Entry) bool { return e.Name == part })
		if i < 0 || isGitDir(part) {
			if glob {
				return nil
			}
			return fmt.Errorf("%s: %w", pat, ErrNotFound)
		}
		return r.take(entries[i], join(part), parts, pat, glob)
	}
	slices.SortFunc(entries, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	for _, e := range entries {
		if ok, _ := path.Match(part, e.Name); !ok || isGitDir(e.Name) {
			continue
		}
		if !last && e.Kind != KindDir {
			continue // a wildcard descends into directories only; a link is not one
		}
		if last && e.Kind == KindDir {
			continue // a pattern names files
		}
		if err := r.take(e, join(e.Name), parts, pat, glob); err != nil {
			return err
		}
	}
	return nil
}

// take follows one matched entry: into it if parts go on, or adds it as a file.
func (r *reader) take(e Entry, name string, parts []string, pat string, glob bool) error {
	switch {
	case e.Kind == KindLink:
		return fmt.Errorf("%s (%s): %w", name, pat, ErrLink)
	case len(parts) > 1 && e.Kind != KindDir:
		if glob {
			return nil
		}
		return fmt.Errorf("%s (%s): %w", name, pat, ErrNotFound)
	case len(parts) > 1:
		return r.walk(name, parts[1:], pat, glob)
	case e.Kind != KindFile:
		return fmt.Errorf("%s: %w (a directory, device, FIFO or submodule); name files", name, ErrNotFile)
	}
	return r.add(name)
}

func (r *reader) read(name string) ([]byte, error) {
	b, err := r.tree.Read(r.ctx, name, MaxFileBytes)
	if errors.Is(err, ErrTooLarge) {
		return nil, fmt.Errorf("%s %w: more than %d bytes (16 MiB), the most one file of an environment may hold; name a smaller file (a lock file, not a build output)", name, ErrTooLarge, MaxFileBytes)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", name, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("failed to read %s: %w", name, err)
	}
	if r.total += int64(len(b)); r.total > MaxTotalBytes {
		return nil, fmt.Errorf("%w: the environment's files hold more than %d bytes in all; name fewer or smaller files", ErrTooLarge, MaxTotalBytes)
	}
	return b, nil
}
