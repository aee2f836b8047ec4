package rest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/bumperdev/bumper/ghemu/apierr"
	"github.com/bumperdev/bumper/ghemu/gitserver"
	"github.com/bumperdev/bumper/ghemu/state"
)

// A pull request's diff is GitHub's three-dot comparison, base...head: what the head
// branch changed since it left the base. The files route shows it, and review comments
// must land on one of its lines. It is computed from the git repository on demand, so it
// follows pushes to either branch without bookkeeping.

// maxPullFiles is how many files GitHub lists for one pull request.
const maxPullFiles = 3000

// pullDiff returns the changed files of pull request n between base and head. The base
// is the commit the pull request was last compared against (it follows the base branch
// while open and stays where it was at merge), so a merged pull request still lists its
// files.
func (a *API) pullDiff(ctx context.Context, rp *state.Repo, n int, base, head string) ([]gitserver.FileDiff, error) {
	files, err := a.git.ThreeDotDiff(ctx, rp.Owner, rp.Name, base, head)
	if errors.Is(err, gitserver.ErrNoMergeBase) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("failed to diff pull request #%d: %w", n, err)
	}
	if len(files) > maxPullFiles {
		files = files[:maxPullFiles]
	}
	return files, nil
}

// fileStatus is GitHub's name for git's status letter.
func fileStatus(letter string) string {
	switch letter {
	case "A":
		return "added"
	case "D":
		return "removed"
	case "R":
		return "renamed"
	case "C":
		return "copied"
	case "T":
		return "changed"
	}
	return "modified"
}

// findLine returns the index of the patch line a comment on (side, line) lands on:
// on RIGHT an added or context line of the new file, on LEFT a removed or context line
// of the old one. -1 when no hunk holds it.
func findLine(lines []gitserver.PatchLine, side string, line int) int {
	for i, pl := range lines {
		switch {
		case side == "RIGHT" && (pl.Kind == '+' || pl.Kind == ' ') && pl.New == line:
			return i
		case side == "LEFT" && (pl.Kind == '-' || pl.Kind == ' ') && pl.Old == line:
			return i
		}
	}
	return -1
}

// diffHunk is what GitHub stores with a review comment: the hunk's header and its lines
// down to the commented one.
func diffHunk(lines []gitserver.PatchLine, idx int) string {
	start := idx
	for start > 0 && lines[start].Kind != '@' {
		start--
	}
	texts := make([]string, 0, idx-start+1)
	for _, pl := range lines[start : idx+1] {
		texts = append(texts, pl.Text)
	}
	return strings.Join(texts, "\n")
}

func renderDiffEntry(base string, rp *state.Repo, headSHA string, f gitserver.FileDiff) obj {
	adds, dels := gitserver.CountChanges(gitserver.ParsePatch(f.Patch))
	// A removed file is shown at the commit where it still existed: its blob is the old one.
	blob, at := f.NewBlob, headSHA
	if f.Status == "D" {
		blob = f.OldBlob
	}
	escaped := escapePath(f.Path)
	o := obj{
		"sha": blob, "filename": f.Path, "status": fileStatus(f.Status),
		"additions": adds, "deletions": dels, "changes": adds + dels,
		"blob_url":     base + "/" + rp.FullName() + "/blob/" + at + "/" + escaped,
		"raw_url":      base + "/" + rp.FullName() + "/raw/" + at + "/" + escaped,
		"contents_url": base + "/repos/" + rp.FullName() + "/contents/" + escaped + "?ref=" + at,
	}
	if f.Patch != "" {
		o["patch"] = f.Patch
	}
	if f.Status == "R" || f.Status == "C" {
		o["previous_filename"] = f.OldPath
	}
	return o
}

// escapePath percent-encodes each segment of a repository path for a URL.
func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// listPullFiles serves GET /repos/{o}/{r}/pulls/{n}/files.
func (a *API) listPullFiles(w http.ResponseWriter, r *http.Request, c *call) {
	_, p, err := c.pull()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	files, err := a.pullDiff(r.Context(), c.repo, p.Number, p.BaseSHA, p.HeadSHA)
	if err != nil {
		apierr.Write(w, err)
		return
	}
	writeList(c, w, r, files, func(f gitserver.FileDiff) obj { return renderDiffEntry(c.st.BaseURL(), c.repo, p.HeadSHA, f) })
}
