package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bumperdev/bumper/sandbox/agentproto"
)

// writeTask writes the task files into the task directory, never through a link; a
// review workspace's task directory is marked read-only for the VM.
func (w *Workspace) writeTask() error {
	for name, data := range w.opts.Task {
		if err := writeNew(filepath.Join(w.TaskDir, name), data); err != nil {
			return fmt.Errorf("failed to write task file %s: %w", name, err)
		}
	}
	if w.opts.Review {
		if err := writeNew(filepath.Join(w.TaskDir, agentproto.ReadOnlyMarker), nil); err != nil {
			return fmt.Errorf("failed to mark the task directory read-only: %w", err)
		}
	}
	return nil
}

// AddTaskFile writes one more file into the task directory, before the VM boots: what
// the runner computes from the fetched repository (a review run's pr.diff). Its name
// follows Options.Task's naming rule and must be new; its size is the caller's to bound
// (Options.Task's size limits are for what serve sends).
func (w *Workspace) AddTaskFile(name string, data []byte) error {
	if !taskNameRE.MatchString(name) || name == agentproto.ReadOnlyMarker {
		return fmt.Errorf("%w: task file name %q: use letters, digits, '.', '_', '-', not starting with '.'", ErrInvalidOptions, name)
	}
	if err := writeNew(filepath.Join(w.TaskDir, name), data); err != nil {
		return fmt.Errorf("failed to write task file %s: %w", name, err)
	}
	return nil
}

// writeNew creates a file that must not exist, never through a link.
func writeNew(p string, data []byte) error {
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY|noFollow, 0o644)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}

// reviewTrees writes the base commit's and the start commit's trees (files only, no
// .git) into base/ and head/ with git's own checkout-index, which writes nothing
// through a link, from an index of their own; each marked read-only for the VM. The
// base's tree is what a review run's program runs from: approved, never the pull
// request's.
func (w *Workspace) reviewTrees(ctx context.Context) error {
	if err := w.inspectTree(ctx, w.Base); err != nil {
		return err
	}
	w.BaseDir, w.HeadDir = filepath.Join(w.Dir, BaseDirName), filepath.Join(w.Dir, HeadDirName)
	for _, t := range []struct{ commit, dir string }{{w.Base, w.BaseDir}, {w.Start, w.HeadDir}} {
		if err := os.Mkdir(t.dir, 0o755); err != nil {
			return fmt.Errorf("failed to create %s: %w", t.dir, err)
		}
		g := *w.git
		g.indexFile = filepath.Join(w.Root, "export.index")
		if _, err := g.run(ctx, nil, 1<<20, "read-tree", t.commit); err != nil {
			return fmt.Errorf("failed to read the tree of %s: %w", t.commit, err)
		}
		if _, err := g.run(ctx, nil, 1<<20, "checkout-index", "--all", "--force", "--prefix="+t.dir+"/"); err != nil {
			return fmt.Errorf("failed to write the tree of %s: %w", t.commit, err)
		}
		if err := os.Remove(g.indexFile); err != nil {
			return fmt.Errorf("failed to remove the export's index: %w", err)
		}
		if err := writeNew(filepath.Join(t.dir, agentproto.ReadOnlyMarker), nil); err != nil {
			return fmt.Errorf("failed to mark %s read-only (does the tree hold a file of that name?): %w", t.dir, err)
		}
	}
	return nil
}
