package runner

import (
	"context"
	"strings"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/workspace"
)

// headScript prints where HEAD points and the commit it names. It runs as a command of
// its own, when no process of the agent is left (the guest kills them after each
// command), and git rev-parse and symbolic-ref run no hook, filter or monitor the
// repository's configuration could name: its output is the guest's truth.
//
// First it refuses a repository that hides files from git, so that the working tree
// verification runs on is the commit's: index entries marked assume-unchanged or
// skip-worktree (git add -A passes them by), excludes or attributes outside the
// committed tree, a worktree or excludes file set in the configuration, a .git that is
// not the repository's own directory.
const headScript = `set -e
if [ ! -d .git ] || [ -L .git ]; then echo "bumper-hidden: .git is not a directory"; exit 0; fi
xdg=${XDG_CONFIG_HOME:-$HOME/.config}
for f in .git/info/exclude .git/info/attributes "$xdg/git/ignore" "$xdg/git/attributes"; do
	if [ -s "$f" ]; then echo "bumper-hidden: $f"; exit 0; fi
done
for k in core.worktree core.excludesFile core.attributesFile; do
	if git config --get "$k" >/dev/null; then echo "bumper-hidden: $k is set"; exit 0; fi
done
hidden=$(git ls-files -v | grep -c '^[a-zS]' || true)
if [ "$hidden" != 0 ]; then echo "bumper-hidden: $hidden index entries marked assume-unchanged or skip-worktree"; exit 0; fi
git symbolic-ref -q HEAD || true
git rev-parse --verify -q HEAD`

// readHead pins the commit verification is about to judge: the work branch's head,
// with HEAD on the work branch (so the working tree verification runs on is that
// commit's). The push later must be exactly this commit.
func readHead(ctx context.Context, vm *guest) (string, error) {
	var out, errOut strings.Builder
	st, err := vm.exec(ctx, []string{"sh", "-c", headScript}, nil, &out, &errOut)
	if err != nil {
		return "", err
	}
	if st.Error != "" || st.Signal != "" {
		return "", failWith(evidence.OutcomeFailure, "failed to read the work branch's head: the command %s", st)
	}
	if hidden, ok := strings.CutPrefix(strings.TrimSpace(out.String()), "bumper-hidden: "); ok {
		return "", failWith(evidence.OutcomeFailure, "the agent hid files from git (%s): verification would not run on the commit that is pushed", cut(hidden, 200))
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	branch := "refs/heads/" + vm.ws.Branch
	if st.Code != 0 || len(lines) != 2 || lines[0] != branch || !workspace.IsCommitID(lines[1]) {
		return "", failWith(evidence.OutcomeFailure, "the agent left the work branch: HEAD must be on %s with a commit (found %q, exit %d)", branch, cut(out.String(), 200), st.Code)
	}
	return lines[1], nil
}
