package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/bumperdev/bumper/internal/revision"
)

// Environment of MergeScript.
const (
	// MergeEnvUpdateTo names the commit to merge (Workspace.UpdateTo).
	MergeEnvUpdateTo = "BUMPER_UPDATE_TO"
	// MergeEnvMessage is the message of the merge commit, when the merge is clean.
	MergeEnvMessage = "BUMPER_COMMIT_MESSAGE"
)

// MergeScript is what the guest runs in the repository before an update run's agent:
// it merges $BUMPER_UPDATE_TO into the work branch with a merge commit (git merge
// --no-ff --no-commit; never a rebase, never a fast-forward). A clean merge is committed
// with $BUMPER_COMMIT_MESSAGE; a conflicted one is left as git leaves it, markers in the
// files and the merge in progress, for the agent to resolve and commit. No hook runs.
// Its standard output is for ParseMerge alone (git's own goes to standard error): a
// line "bumper-merge: clean <head>", "bumper-merge: conflicted" followed by the
// unmerged paths, each ended by a NUL, or "bumper-merge: none <exit status>" when git
// started no merge (nothing to merge, or it failed before it began).
const MergeScript = `set -u
nohooks="-c core.hooksPath=/dev/null -c rerere.enabled=false"
git $nohooks merge --no-ff --no-commit --no-edit --no-verify --no-stat --no-progress "$BUMPER_UPDATE_TO" >&2
st=$?
if ! git rev-parse -q --verify MERGE_HEAD >/dev/null; then
	echo "bumper-merge: none $st"
	exit 0
fi
if [ "$st" = 0 ] && [ -z "$(git ls-files -u | head -n 1)" ]; then
	if ! git $nohooks commit -q --no-verify -m "$BUMPER_COMMIT_MESSAGE" >&2; then
		echo "bumper-merge: none commit"
		exit 0
	fi
	echo "bumper-merge: clean $(git rev-parse HEAD)"
	exit 0
fi
echo "bumper-merge: conflicted"
git diff --name-only -z --diff-filter=U`

// Merged is what MergeScript did.
type Merged struct {
	// Clean says git merged without conflicts and the merge commit Head was made.
	Clean bool
	Head  string
	// Conflicts are the paths git left unmerged (Clean false), as git names them.
	Conflicts []string
}

// ErrMerge: the guest started no merge of the base branch's head (nothing to merge, or
// git failed before it began), or said something MergeScript does not.
var ErrMerge = errors.New("the base branch's head could not be merged")

// ParseMerge reads MergeScript's standard output. What it says came from the guest
// before the agent ran, but the paths are the repository's: they are data, never
// parsed further.
func ParseMerge(out []byte) (*Merged, error) {
	first, rest, _ := bytes.Cut(out, []byte("\n"))
	status, ok := strings.CutPrefix(string(first), "bumper-merge: ")
	if !ok {
		return nil, fmt.Errorf("%w: the merge step said %.200q", ErrMerge, first)
	}
	switch verb, arg, _ := strings.Cut(status, " "); verb {
	case "clean":
		if !revision.IsCommitID(arg) || len(rest) > 0 {
			return nil, fmt.Errorf("%w: the merge step said %.200q", ErrMerge, first)
		}
		return &Merged{Clean: true, Head: arg}, nil
	case "conflicted":
		m := &Merged{}
		for _, p := range bytes.Split(bytes.TrimSuffix(rest, []byte{0}), []byte{0}) {
			if len(p) > 0 {
				m.Conflicts = append(m.Conflicts, string(p))
			}
		}
		if len(m.Conflicts) == 0 {
			return nil, fmt.Errorf("%w: git said the merge conflicted but named no unmerged path", ErrMerge)
		}
		return m, nil
	case "none":
		if arg == "0" {
			return nil, fmt.Errorf("%w: it is already in the pull request's branch; there is nothing to update", ErrMerge)
		}
		return nil, fmt.Errorf("%w: git merge started no merge (%s); its output is in the run's log", ErrMerge, arg)
	}
	return nil, fmt.Errorf("%w: the merge step said %.200q", ErrMerge, first)
}

// maxMarkerPaths bounds the paths ConflictMarkers looks at: git's command line.
const maxMarkerPaths = 1000

// ConflictMarkers lists which of paths still hold a conflict marker at the start of a
// line ("<<<<<<< " or ">>>>>>> ", as git writes them) in commit's tree, read on the host
// from the objects (git grep: no work tree, no text conversion, binary files skipped).
// An update run's merge is not resolved while one is left. Only the first 1,000 paths
// are looked at.
func (w *Workspace) ConflictMarkers(ctx context.Context, commit string, paths []string) ([]string, error) {
	if !revision.IsCommitID(commit) {
		return nil, fmt.Errorf("%w: commit %q", ErrInvalidOptions, commit)
	}
	if len(paths) == 0 {
		return nil, nil
	}
	args := []string{"grep", "-l", "-z", "-I", "--no-textconv", "-E", "^(<{7}|>{7})( |$)", commit, "--"}
	for _, p := range paths[:min(len(paths), maxMarkerPaths)] {
		args = append(args, ":(literal)"+p)
	}
	out, err := w.git.run(ctx, nil, 4<<20, args...)
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 {
		return nil, nil // no match
	}
	if err != nil {
		return nil, fmt.Errorf("failed to look for conflict markers: %w", err)
	}
	var found []string
	for _, rec := range bytes.Split(bytes.TrimSuffix(out, []byte{0}), []byte{0}) {
		if p, ok := strings.CutPrefix(string(rec), commit+":"); ok {
			found = append(found, p)
		}
	}
	return found, nil
}
