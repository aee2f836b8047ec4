package runner

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/workspace"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/mdcode"
	"github.com/bumperdev/bumper/internal/textcut"
)

// MergeLogFile is git's output of an update run's merge, in the artifact.
const MergeLogFile = "merge.log"

// Bounds of what an update run's merge says.
const (
	// maxMergeOut bounds the merge step's own output (the unmerged paths).
	maxMergeOut = 4 << 20
	// maxNotePaths and maxNoteBytes bound the conflicted paths TASK.md lists (the note
	// goes into the VM through the environment); git status lists them all.
	maxNotePaths = 100
	maxNoteBytes = 32 << 10
)

// merged is what an update run's merge left for the agent: the paths it conflicted in
// (none when it was clean), which must hold no conflict marker when the work comes back.
type merged struct {
	conflicts []string
}

// merge merges the base branch's new head into the pull request's branch in the VM,
// before the agent (workspace.MergeScript: a merge commit, never a rebase): a clean
// merge is committed as the runner's own commit; a conflicted one is left in progress,
// its markers in the files, for the agent. Either way TASK.md gets what the merge did,
// and the evidence what was merged and where it conflicted. A merge git cannot start
// (nothing to merge, or an error) fails the run: there is no update to make.
func (r *run) merge(ctx context.Context, vm *guest) (merged, string, error) {
	logf, err := r.rec.outFile(MergeLogFile)
	if err != nil {
		return merged{}, "", err
	}
	defer logf.Close()
	w := r.rec.logTo(logf, MergeLogFile)
	defer w.Close()
	g := r.grant
	var out bytes.Buffer
	lw := &limitWriter{w: &out, left: maxMergeOut}
	env := []string{workspace.MergeEnvUpdateTo + "=" + g.UpdateTo,
		workspace.MergeEnvMessage + "=" + mergeMessage(g.UpdateTo, r.cfg.WorkItem.Issue)}
	st, err := vm.exec(ctx, []string{"sh", "-c", workspace.MergeScript}, env, lw, w)
	if err != nil {
		return merged{}, "", err
	}
	if st.Code != 0 || st.Signal != "" || st.Error != "" {
		return merged{}, "", failWith(evidence.OutcomeError, "the merge step failed in the VM: the command %s", st)
	}
	full := lw.left > 0
	raw := out.Bytes()
	if !full {
		// Cut inside a path: keep the whole ones.
		raw = raw[:bytes.LastIndexByte(raw, 0)+1]
	}
	m, err := workspace.ParseMerge(raw)
	if err != nil {
		return merged{}, "", failWith(evidence.OutcomeFailure, "failed to update the pull request's branch: %w", err)
	}
	rec := &evidence.Merge{From: g.HeadCommit, To: g.UpdateTo, Conflicted: !m.Clean, Files: []string{}}
	for _, p := range m.Conflicts[:min(len(m.Conflicts), evidence.MaxMergeFiles)] {
		kept, _ := textcut.Runes(p, 1000)
		rec.Files = append(rec.Files, kept)
	}
	rec.FilesOmitted = len(m.Conflicts) - len(rec.Files)
	if rd := r.rec.ev.Round; rd != nil {
		rd.Merge = rec
	}
	if err := r.appendTask(ctx, vm, mergeNote(g.UpdateTo, m, full)); err != nil {
		return merged{}, "", err
	}
	if m.Clean {
		return merged{}, fmt.Sprintf("merged %.12s into %.12s cleanly: %.12s", g.UpdateTo, g.HeadCommit, m.Head), nil
	}
	return merged{conflicts: m.Conflicts}, fmt.Sprintf("merged %.12s into %.12s with conflicts in %d file(s), left to the agent", g.UpdateTo, g.HeadCommit, len(m.Conflicts)), nil
}

// appendTask adds text to TASK.md in the VM (the task directory is the workspace
// disk's, written before the VM booted): what the runner learnt only in the VM. The
// text goes through the environment, never through the shell's parser.
func (r *run) appendTask(ctx context.Context, vm *guest, text string) error {
	var out strings.Builder
	st, err := vm.exec(ctx, []string{"sh", "-c", `printf '%s' "$BUMPER_TASK_NOTE" >> "$0"`, workspace.GuestTask + "/TASK.md"},
		[]string{"BUMPER_TASK_NOTE=" + text}, &out, &out)
	if err != nil {
		return err
	}
	if st.Code != 0 || st.Signal != "" || st.Error != "" {
		return failWith(evidence.OutcomeError, "failed to add the merge's outcome to TASK.md (the command %s): %s", st, cut(out.String(), 300))
	}
	return nil
}

// mergeNote is TASK.md's last section in an update run: what the merge did. Paths are
// the repository's: they are quoted in a fenced block they cannot close.
func mergeNote(to string, m *workspace.Merged, complete bool) string {
	var b strings.Builder
	b.WriteString("\n---\n\n## What the merge did\n\n")
	if m.Clean {
		fmt.Fprintf(&b, "The runner merged %s into the branch cleanly and committed the merge (%s). Check that the result still does what the task asks; "+
			"verification runs after your turn.\n", mdcode.Span(to), mdcode.Span(m.Head))
		return b.String()
	}
	var shown []string
	size := 0
	for _, p := range m.Conflicts {
		if len(shown) == maxNotePaths || size+len(p) > maxNoteBytes {
			break
		}
		shown, size = append(shown, p), size+len(p)+1
	}
	fmt.Fprintf(&b, "The merge of %s conflicted. Git left it in progress, with conflict markers in these files (%d", mdcode.Span(to), len(m.Conflicts))
	if !complete {
		b.WriteString(" listed, and more")
	}
	b.WriteString("):\n\n")
	b.WriteString(wire.QuoteBlock(strings.Join(shown, "\n")))
	if len(shown) < len(m.Conflicts) || !complete {
		b.WriteString("\n`git diff --name-only --diff-filter=U` lists every one.\n")
	}
	b.WriteString("\nResolve each, then commit the merge. No conflict marker may be left in these files: a head that holds one is not pushed.\n")
	return b.String()
}

// mergeMessage is the message of the merge commit the runner makes for a clean merge:
// neutral, as the runner's own commits are (and rewritten as the App's before the push).
func mergeMessage(to string, issue int) string {
	return fmt.Sprintf("Merge the base branch's head %.12s (issue %d)", to, issue)
}

// checkResolved refuses an update run's head that still holds conflict markers in the
// files its merge conflicted in, read on the host from the objects that are pushed.
func (r *run) checkResolved(ctx context.Context, ws *workspace.Workspace, head string, m merged) error {
	if len(m.conflicts) == 0 {
		return nil
	}
	left, err := ws.ConflictMarkers(ctx, head, m.conflicts)
	if err != nil {
		return failWith(evidence.OutcomeError, "%w", err)
	}
	if len(left) > 0 {
		return failWith(evidence.OutcomeFailure, "the merge is not resolved: conflict markers are left in %d file(s) (%s); nothing was pushed",
			len(left), cut(strings.Join(left, ", "), 300))
	}
	return nil
}
