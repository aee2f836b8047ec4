package rest

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/bumperdev/bumper/ghemu/apierr"
	"github.com/bumperdev/bumper/ghemu/gitserver"
	"github.com/bumperdev/bumper/ghemu/state"
)

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
	files, err := a.conv.PullDiff(r.Context(), c.repo, p.Number, p.BaseSHA, p.HeadSHA)
	if err != nil {
		apierr.Write(w, err)
		return
	}
	writeList(c, w, r, files, func(f gitserver.FileDiff) obj { return renderDiffEntry(c.st.BaseURL(), c.repo, p.HeadSHA, f) })
}

// maxPullCommits is how many commits GitHub lists for a pull request at most.
const maxPullCommits = 250

// listPullCommits serves GET /repos/{o}/{r}/pulls/{n}/commits: the commits of base..head,
// oldest first, as GitHub lists them (at most 250).
func (a *API) listPullCommits(w http.ResponseWriter, r *http.Request, c *call) {
	_, p, err := c.pull()
	if err != nil {
		apierr.Write(w, err)
		return
	}
	shas, err := a.git.CommitsBetween(r.Context(), c.repo.Owner, c.repo.Name, p.BaseSHA, p.HeadSHA, maxPullCommits)
	if err != nil {
		apierr.Write(w, err)
		return
	}
	list := make([]*gitserver.CommitInfo, len(shas))
	for i, sha := range shas {
		ci, err := a.commits.Get(r.Context(), c.repo, sha)
		if err != nil {
			apierr.Write(w, err)
			return
		}
		// rev-list is newest first; GitHub lists oldest first.
		list[len(shas)-1-i] = ci
	}
	writeList(c, w, r, list, func(ci *gitserver.CommitInfo) obj { return renderCommit(c, c.repo, ci) })
}
