package workitemtest

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/bumperdev/bumper/app/workitem"
)

// Whether a pull request merges, as GitHub computes it: in the background, after its
// head or its base branch moved, so that the first read after a move says nothing yet
// (mergeable null, mergeable_state "unknown") and a later one says. The fake merges the
// trees as git would, file by file, from the merge base (the commit of the default
// branch the pull request's branch was made from, or last merged): a file both sides
// changed differently conflicts (dirty). Otherwise GitHub names what else holds the
// merge back, in its order: blocked (a review the protection requires is missing),
// behind (the protection requires an up-to-date branch and the base moved on), clean.

// mergeState is what GitHub knows of one pull request's merge.
type mergeState struct {
	base     string // the merge base
	head     string // the heads GitHub computed for ("" before any read)
	baseHead string
	slow     int // reads GitHub still answers unknown (SlowMerge)
}

// merged is the tree of merging base into head from their merge base, and whether
// some file conflicts.
func merged(mergeBase, base, head files) (files, bool) {
	out := map[string]string{}
	paths := map[string]bool{}
	for _, t := range []files{mergeBase, base, head} {
		for p := range t {
			paths[p] = true
		}
	}
	conflict := false
	for p := range paths {
		m, mok := mergeBase[p]
		b, bok := base[p]
		h, hok := head[p]
		baseChanged := bok != mok || b != m
		headChanged := hok != mok || h != m
		switch {
		case baseChanged && headChanged && (bok != hok || b != h):
			conflict = true
		case baseChanged:
			if bok {
				out[p] = b
			}
		case hok:
			out[p] = h
		}
	}
	return out, conflict
}

// merge is the pull request's merge state; the caller holds mu.
func (r *repo) merge(number int) *mergeState {
	m, ok := r.merges[number]
	if !ok {
		p := r.issues[number].pull
		base, ok := r.forks[p.HeadRef]
		if !ok {
			base = r.refs["refs/heads/"+p.BaseRef]
		}
		m = &mergeState{base: base}
		r.merges[number] = m
	}
	return m
}

// pullView is a pull request as its GET shows it, with what GitHub knows of its merge:
// nothing on the first read after either side moved (GitHub starts computing then),
// then the result. The caller holds mu.
func (r *repo) pullView(number int) workitem.Pull {
	p := *r.issues[number].pull
	if p.State != "open" {
		return p
	}
	m := r.merge(number)
	baseHead := r.refs["refs/heads/"+p.BaseRef]
	if m.head != p.HeadSHA || m.baseHead != baseHead || m.slow > 0 {
		m.head, m.baseHead = p.HeadSHA, baseHead
		m.slow = max(m.slow-1, 0)
		p.MergeableState = "unknown"
		return p
	}
	_, conflict := merged(r.commits[m.base], r.commits[baseHead], r.commits[p.HeadSHA])
	ok := !conflict
	p.Mergeable = &ok
	prot, protected := r.protection[p.BaseRef]
	approved := slices.ContainsFunc(r.reviews[number], func(rv Review) bool { return rv.State == "APPROVED" })
	switch {
	case conflict:
		p.MergeableState = "dirty"
	case protected && prot.RequiredReviews > 0 && !approved:
		p.MergeableState = "blocked"
	case r.strict[p.BaseRef] && baseHead != m.base:
		p.MergeableState = "behind"
	default:
		p.MergeableState = "clean"
	}
	return p
}

// SlowMerge makes GitHub take reads more reads of a pull request to compute whether it
// merges, as on a busy day.
func (g *GitHub) SlowMerge(repoName string, number, reads int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.must(repoName).merge(number).slow = reads
}

// RequireUpToDate sets whether a branch's protection requires pull requests' branches
// to be up to date with it (strict status checks).
func (g *GitHub) RequireUpToDate(repoName, branch string, strict bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.must(repoName).strict[branch] = strict
}

// PushBase has sender push a commit of content onto a branch (the base of pull
// requests), and returns the commit and the push event GitHub delivers.
func (g *GitHub) PushBase(repoName, branch, sender string, content map[string]string) (string, workitem.PushEvent) {
	sha := g.Commit(repoName, branch, content)
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.must(repoName)
	return sha, workitem.PushEvent{Delivery: g.nextDelivery(), Repo: r.view(), Ref: "refs/heads/" + branch, After: sha, Sender: sender}
}

// PushMerge has sender push onto a pull request's branch a merge of the base branch's
// commit base, whose tree is the head's with content over it (the resolution of any
// conflict), as an update round's runner pushes it, and returns the commit and the
// synchronize events.
func (g *GitHub) PushMerge(repoName string, number int, sender, base string, content map[string]string) (string, []workitem.PullEvent) {
	g.mu.Lock()
	r := g.must(repoName)
	p := r.issues[number].pull
	m := r.merge(number)
	tree, _ := merged(r.commits[m.base], r.commits[base], r.commits[p.HeadSHA])
	for k, v := range content {
		tree[k] = v
	}
	m.base = base
	branch := p.HeadRef
	g.mu.Unlock()
	return g.pushTree(repoName, branch, sender, tree)
}

// pushTree moves a branch to a new commit of exactly tree and returns the synchronize
// events of the open pull requests from it.
func (g *GitHub) pushTree(repoName, branch, sender string, tree files) (string, []workitem.PullEvent) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.must(repoName)
	sha := g.commit(r, files{}, tree)
	r.refs["refs/heads/"+branch] = sha
	return sha, g.synchronize(r, branch, sender, sha)
}

// synchronize moves the open pull requests of a branch to sha and returns their
// synchronize events; the caller holds mu.
func (g *GitHub) synchronize(r *repo, branch, sender, sha string) []workitem.PullEvent {
	var evs []workitem.PullEvent
	for _, n := range slices.Sorted(maps.Keys(r.issues)) {
		is := r.issues[n]
		if p := is.pull; p != nil && is.state == "open" && strings.EqualFold(p.HeadRepo, r.name) && p.HeadRef == branch {
			p.HeadSHA = sha
			evs = append(evs, g.pullEvent(r, p, "synchronize", sender))
		}
	}
	return evs
}

// SetPullFiles changes what GitHub lists of a pull request's files, as after a merge of
// the base changed its diff.
func (g *GitHub) SetPullFiles(repoName string, number int, files ...workitem.PullFile) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.must(repoName).files[number] = slices.Clone(files)
}

// Sent takes the webhooks the App's own calls made GitHub deliver since the last Sent
// (the synchronize of an update-branch's push), oldest first.
func (g *GitHub) Sent() []workitem.PullEvent {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := g.sent
	g.sent = nil
	return out
}

// UpdateBranch implements workitem.GitHub: GitHub merges the base branch's head into the
// pull request's branch as the App (in the background on GitHub; here at once, its
// synchronize webhook kept for Sent), if the head is still expectedHead, the branch is
// behind, and the merge does not conflict; otherwise 422.
func (c client) UpdateBranch(_ context.Context, repoName string, number int, expectedHead string) error {
	r, unlock, err := c.call("UpdateBranch", repoName)
	if err != nil {
		return err
	}
	defer unlock()
	is, ok := r.issues[number]
	if !ok || is.pull == nil {
		return notFound("pull request %s#%d", repoName, number)
	}
	p := is.pull
	m := r.merge(number)
	baseHead := r.refs["refs/heads/"+p.BaseRef]
	switch {
	case expectedHead != "" && expectedHead != p.HeadSHA:
		return unprocessable("expected head sha didn't match current head ref.")
	case baseHead == m.base:
		return unprocessable("There are no new commits on the base branch.")
	}
	tree, conflict := merged(r.commits[m.base], r.commits[baseHead], r.commits[p.HeadSHA])
	if conflict {
		return unprocessable("merge conflict between base and head")
	}
	m.base = baseHead
	sha := c.g.commit(r, files{}, tree)
	r.refs["refs/heads/"+p.HeadRef] = sha
	c.g.sent = append(c.g.sent, c.g.synchronize(r, p.HeadRef, c.g.opts.Bot, sha)...)
	return nil
}

// UpToDateRequired implements workitem.GitHub.
func (c client) UpToDateRequired(_ context.Context, repoName, branch string) (bool, error) {
	r, unlock, err := c.call("UpToDateRequired", repoName)
	if err != nil {
		return false, err
	}
	defer unlock()
	if _, ok := r.refs["refs/heads/"+branch]; !ok {
		return false, notFound("branch %s", branch)
	}
	_, protected := r.protection[branch]
	return protected && r.strict[branch], nil
}
