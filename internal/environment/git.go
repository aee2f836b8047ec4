package environment

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/bumperdev/bumper/internal/revision"
)

// GitTree is a commit's tree in a local repository, read from its objects: what the
// commit holds, whatever the working tree looks like. Links are entries of mode
// 120000 and are never resolved; submodules are KindOther. Git runs with no system,
// global or user configuration and without replace refs, so nothing outside the
// objects changes what is read, and no configured program runs.
type GitTree struct {
	// Git is the git binary (default "git" from PATH).
	Git string
	// Repo is the repository's work tree or git directory.
	Repo string
	// Commit is the commit, 40 lower-case hex digits.
	Commit string
}

func (t GitTree) run(ctx context.Context, stdout io.Writer, args ...string) error {
	if !revision.IsCommitID(t.Commit) {
		return fmt.Errorf("%w: commit %q is not 40 lower-case hex digits", ErrBadInput, t.Commit)
	}
	bin := t.Git
	if bin == "" {
		bin = "git"
	}
	cmd := exec.CommandContext(ctx, bin, append([]string{"--no-replace-objects", "-C", t.Repo}, args...)...)
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=/nonexistent", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0", "LC_ALL=C",
	}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = stdout, &limited{w: &stderr, left: 4096}
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if strings.Contains(msg, "does not exist") || strings.Contains(msg, "Not a valid object name") || strings.Contains(msg, "not a tree object") {
			return fmt.Errorf("%w: %s", fs.ErrNotExist, msg)
		}
		return fmt.Errorf("git %s: %w: %s", args[0], err, msg)
	}
	return nil
}

// object is the commit's object at p: the root tree for ".".
func (t GitTree) object(p string) string {
	if p == "." {
		return t.Commit + "^{tree}"
	}
	return t.Commit + ":" + p
}

// List implements Tree with git ls-tree.
func (t GitTree) List(ctx context.Context, dir string) ([]Entry, error) {
	var out bytes.Buffer
	if err := t.run(ctx, &limited{w: &out, left: 64 << 20}, "ls-tree", "-z", t.object(dir)); err != nil {
		return nil, err
	}
	var entries []Entry
	for _, rec := range strings.Split(strings.TrimSuffix(out.String(), "\x00"), "\x00") {
		if rec == "" {
			continue
		}
		meta, name, ok := strings.Cut(rec, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 {
			return nil, fmt.Errorf("git ls-tree: unexpected entry %q", rec)
		}
		k := KindOther
		switch f[0] {
		case "040000":
			k = KindDir
		case "100644", "100755":
			k = KindFile
		case "120000":
			k = KindLink
		}
		entries = append(entries, Entry{Name: name, Kind: k})
		if len(entries) > MaxListed {
			break
		}
	}
	return entries, nil
}

// Read implements Tree with git cat-file: the blob as committed, no filter applied.
func (t GitTree) Read(ctx context.Context, name string, max int64) ([]byte, error) {
	var size bytes.Buffer
	if err := t.run(ctx, &size, "cat-file", "-s", t.object(name)); err != nil {
		return nil, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(size.String()), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("git cat-file -s %s: %q", name, size.String())
	}
	if n > max {
		return nil, fmt.Errorf("%s: %w", name, ErrTooLarge)
	}
	var out bytes.Buffer
	w := &limited{w: &out, left: max + 1}
	if err := t.run(ctx, w, "cat-file", "blob", t.object(name)); err != nil {
		return nil, err
	}
	if w.over || int64(out.Len()) > max {
		return nil, fmt.Errorf("%s: %w", name, ErrTooLarge)
	}
	return out.Bytes(), nil
}

// limited keeps the first left bytes and drops the rest, saying so.
type limited struct {
	w    io.Writer
	left int64
	over bool
}

func (l *limited) Write(p []byte) (int, error) {
	n := len(p)
	if int64(len(p)) > l.left {
		p, l.over = p[:l.left], true
	}
	l.left -= int64(len(p))
	if _, err := l.w.Write(p); err != nil {
		return 0, err
	}
	return n, nil
}
