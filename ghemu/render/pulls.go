package render

import (
	"strconv"
	"strings"

	"github.com/bumperdev/bumper/ghemu/state"
)

// pullRef renders a pull request's head or base. Both are branches of the same
// repository, so the caller renders that repository once (repoObj) for the two.
func pullRef(rp *state.Repo, repoObj Obj, branch, sha string) Obj {
	return Obj{"label": rp.Owner + ":" + branch, "ref": branch, "sha": sha,
		"user": repoObj["owner"], "repo": repoObj}
}

// Pull renders a pull request as the pulls API and pull_request events carry it, with
// the mergeability last computed.
func (r *Renderer) Pull(rp *state.Repo, is *state.Issue, p *state.Pull) Obj {
	return r.pull(rp, is, p, false)
}

// PullComputing is Pull while GitHub's background job computes the mergeability:
// mergeable and rebaseable null, mergeable_state unknown. GitHub answers a new pull
// request so, and sends the pull_request opened, reopened and synchronize webhooks so,
// since it starts that job when the head or the state changes.
func (r *Renderer) PullComputing(rp *state.Repo, is *state.Issue, p *state.Pull) Obj {
	return r.pull(rp, is, p, true)
}

func (r *Renderer) pull(rp *state.Repo, is *state.Issue, p *state.Pull, computing bool) Obj {
	num := strconv.Itoa(p.Number)
	api := r.base + "/repos/" + rp.FullName() + "/pulls/" + num
	issueAPI := r.base + "/repos/" + rp.FullName() + "/issues/" + num
	html := r.base + "/" + rp.FullName() + "/pull/" + num
	href := func(u string) Obj { return Obj{"href": u} }
	mstate := rp.MergeState(is, p)
	var mergeable any
	if m := rp.Mergeable(is, p); m != nil {
		mergeable = *m
	}
	if computing {
		mstate, mergeable = state.MergeUnknown, nil
	}
	repoObj := r.Repo(rp)
	reviewComments := len(rp.VisibleReviewComments(p.Number, 0, ""))
	o := r.Issue(rp, is)
	for _, k := range []string{"pull_request", "reactions", "timeline_url", "performed_via_github_app",
		"state_reason", "repository_url", "labels_url", "events_url", "closed_by"} {
		delete(o, k)
	}
	extra := Obj{
		"url": api, "html_url": html, "diff_url": html + ".diff", "patch_url": html + ".patch",
		"issue_url": issueAPI, "commits_url": api + "/commits",
		"review_comments_url": api + "/comments",
		"review_comment_url":  r.base + "/repos/" + rp.FullName() + "/pulls/comments{/number}",
		"comments_url":        issueAPI + "/comments",
		"statuses_url":        r.base + "/repos/" + rp.FullName() + "/statuses/" + p.HeadSHA,
		"head":                pullRef(rp, repoObj, p.Head, p.HeadSHA),
		"base":                pullRef(rp, repoObj, p.Base, p.BaseSHA),
		"_links": Obj{"self": href(api), "html": href(html), "issue": href(issueAPI),
			"comments": href(issueAPI + "/comments"), "review_comments": href(api + "/comments"),
			"review_comment": href(r.base + "/repos/" + rp.FullName() + "/pulls/comments{/number}"),
			"commits":        href(api + "/commits"),
			"statuses":       href(r.base + "/repos/" + rp.FullName() + "/statuses/" + p.HeadSHA)},
		"merged": p.Merged, "merged_at": TSPtr(p.MergedAt), "merged_by": r.UserOrNil(p.MergedBy),
		"merge_commit_sha": NilIfEmpty(p.MergeCommitSHA), "mergeable": mergeable,
		"mergeable_state": mstate, "rebaseable": mergeable, "draft": p.Draft,
		"maintainer_can_modify": p.MaintainerMod, "auto_merge": nil,
		"requested_reviewers": []Obj{}, "requested_teams": []Obj{},
		"comments": is.Comments, "review_comments": reviewComments,
		"commits": 1, "additions": 0, "deletions": 0, "changed_files": 0,
		"node_id": NodeID("PR", is.ID),
	}
	for k, v := range extra {
		o[k] = v
	}
	return o
}

// SimplePull is the pull request as review webhooks carry it: without the merge and
// size fields that only the pull request API and pull_request events have.
func (r *Renderer) SimplePull(rp *state.Repo, is *state.Issue, p *state.Pull) Obj {
	o := r.Pull(rp, is, p)
	for _, k := range []string{"mergeable", "mergeable_state", "rebaseable", "merged", "merged_by",
		"comments", "review_comments", "commits", "additions", "deletions", "changed_files",
		"maintainer_can_modify"} {
		delete(o, k)
	}
	return o
}

// Review renders a pull request review as the REST API carries it (webhooks write its
// state in lower case).
func (r *Renderer) Review(rp *state.Repo, rv *state.Review) Obj {
	pullAPI := r.base + "/repos/" + rp.FullName() + "/pulls/" + strconv.Itoa(rv.PullNumber)
	html := r.base + "/" + rp.FullName() + "/pull/" + strconv.Itoa(rv.PullNumber) +
		"#pullrequestreview-" + strconv.FormatInt(rv.ID, 10)
	o := Obj{
		"id": rv.ID, "node_id": NodeID("PRR", rv.ID), "user": r.User(rv.User), "body": rv.Body,
		"state": rv.State, "commit_id": rv.CommitID, "html_url": html, "pull_request_url": pullAPI,
		"_links":             Obj{"html": Obj{"href": html}, "pull_request": Obj{"href": pullAPI}},
		"author_association": AuthorAssociation(rp, rv.User),
	}
	if rv.State != "PENDING" {
		o["submitted_at"] = TS(rv.SubmittedAt)
	}
	return o
}

// HookReview is the review as pull_request_review webhooks carry it: the state in
// lower case, and a review without a body (one reply, say) with body null.
func (r *Renderer) HookReview(rp *state.Repo, rv *state.Review) Obj {
	o := r.Review(rp, rv)
	o["state"] = strings.ToLower(rv.State)
	if rv.Body == "" {
		o["body"] = nil
	}
	return o
}

// ReviewComment renders an inline comment as the REST API and the
// pull_request_review_comment webhook both carry it.
func (r *Renderer) ReviewComment(rp *state.Repo, rc *state.ReviewComment) Obj {
	num := strconv.Itoa(rc.PullNumber)
	id := strconv.FormatInt(rc.ID, 10)
	api := r.base + "/repos/" + rp.FullName() + "/pulls/comments/" + id
	html := r.base + "/" + rp.FullName() + "/pull/" + num + "#discussion_r" + id
	pullAPI := r.base + "/repos/" + rp.FullName() + "/pulls/" + num
	var startLine, startSide any
	if rc.StartLine != 0 {
		startLine, startSide = rc.StartLine, rc.StartSide
	}
	o := Obj{
		"url": api, "id": rc.ID, "node_id": NodeID("PRRC", rc.ID), "pull_request_review_id": rc.ReviewID,
		"diff_hunk": rc.DiffHunk, "path": rc.Path, "position": rc.Position, "original_position": rc.Position,
		"commit_id": rc.CommitID, "original_commit_id": rc.CommitID, "user": r.User(rc.User),
		"body": rc.Body, "created_at": TS(rc.CreatedAt), "updated_at": TS(rc.Updated()),
		"html_url": html, "pull_request_url": pullAPI, "author_association": AuthorAssociation(rp, rc.User),
		"_links":     Obj{"self": Obj{"href": api}, "html": Obj{"href": html}, "pull_request": Obj{"href": pullAPI}},
		"start_line": startLine, "original_start_line": startLine, "start_side": startSide,
		"line": rc.Line, "original_line": rc.Line, "side": rc.Side, "subject_type": "line",
		"reactions": r.Reactions(api),
	}
	if rc.InReplyTo != 0 {
		o["in_reply_to_id"] = rc.InReplyTo
	}
	return o
}

// Thread renders a review thread as pull_request_review_thread webhooks carry it: its
// node ID and its comments, oldest first.
func (r *Renderer) Thread(rp *state.Repo, comments []*state.ReviewComment) Obj {
	list := make([]Obj, 0, len(comments))
	for _, c := range comments {
		list = append(list, r.ReviewComment(rp, c))
	}
	var root int64
	if len(comments) > 0 {
		root = comments[0].ID
	}
	return Obj{"node_id": NodeID("PRRT", root), "comments": list}
}
