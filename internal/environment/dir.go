package environment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// DirTree is a checkout on disk, opened as an os.Root: no path it is asked for can
// leave the directory, whatever links the repository holds.
type DirTree struct {
	root *os.Root
}

// Dir opens the checkout in dir. Close it when done.
func Dir(dir string) (*DirTree, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("failed to open the checkout %s: %w", dir, err)
	}
	return &DirTree{root: root}, nil
}

// Close releases the directory.
func (t *DirTree) Close() error { return t.root.Close() }

// List implements Tree: entries' kinds as the directory says, links unfollowed.
func (t *DirTree) List(_ context.Context, dir string) ([]Entry, error) {
	if fi, err := t.root.Lstat(dir); err != nil {
		return nil, err
	} else if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("%s: %w", dir, ErrLink)
	}
	f, err := t.root.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	des, err := f.ReadDir(MaxListed + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	out := make([]Entry, 0, len(des))
	for _, d := range des {
		out = append(out, Entry{Name: d.Name(), Kind: kindOf(d.Type())})
	}
	return out, nil
}

func kindOf(m fs.FileMode) Kind {
	switch {
	case m&fs.ModeSymlink != 0:
		return KindLink
	case m.IsDir():
		return KindDir
	case m.IsRegular():
		return KindFile
	}
	return KindOther
}

// Read implements Tree. The name is checked not to be a link before it is opened, and
// the opened file to be that same regular file: a link swapped in between is refused,
// and os.Root keeps even that open inside the tree. O_NONBLOCK keeps a FIFO swapped in
// from blocking the open.
func (t *DirTree) Read(_ context.Context, name string, max int64) ([]byte, error) {
	before, err := t.root.Lstat(name)
	if err != nil {
		return nil, err
	}
	if kindOf(before.Mode()) != KindFile {
		if before.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("%s: %w", name, ErrLink)
		}
		return nil, fmt.Errorf("%s: %w", name, ErrNotFile)
	}
	if before.Size() > max {
		return nil, fmt.Errorf("%s: %w", name, ErrTooLarge)
	}
	f, err := t.root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("%s: %w", name, ErrLink)
		}
		return nil, err
	}
	defer f.Close()
	after, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !after.Mode().IsRegular() || !os.SameFile(before, after) {
		return nil, fmt.Errorf("%s changed while it was read: %w", name, ErrLink)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: %w", name, ErrTooLarge)
	}
	return b, nil
}
