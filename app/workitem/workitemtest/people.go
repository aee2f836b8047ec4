package workitemtest

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/bumperdev/bumper/app/workitem"
)

// What people, CI and runners do on GitHub. Each action changes the fake as GitHub would
// and returns the webhook event GitHub delivers for it, as app/handler translates it,
// with a fresh delivery id.

// view is the repository as a webhook names it; the caller holds mu.
func (r *repo) view() workitem.Repo {
	return workitem.Repo{FullName: r.name, DefaultBranch: r.defaultBranch}
}

// OpenIssue opens an issue and returns its number.
func (g *GitHub) OpenIssue(repoName, author, title, body string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.must(repoName)
	r.number++
	r.issues[r.number] = &issue{number: r.number, title: title, body: body, author: author, state: "open"}
	return r.number
}

// issueEvent changes an issue and describes the change as the issues webhook does.
func (g *GitHub) issueEvent(repoName string, number int, sender, action string, change func(*repo, *issue)) workitem.IssueEvent {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.must(repoName)
	is, ok := r.issues[number]
	if !ok {
		panic("workitemtest: no issue " + repoName + "#" + strconv.Itoa(number))
	}
	ev := workitem.IssueEvent{Delivery: g.nextDelivery(), Action: action, Repo: r.view(), Sender: sender, SenderType: userType(sender)}
	if change != nil {
		change(r, is)
	}
	ev.Issue = is.view(r.commentCount(number))
	return ev
}

// Label puts a label on an issue.
func (g *GitHub) Label(repoName string, number int, label, sender string) workitem.IssueEvent {
	ev := g.issueEvent(repoName, number, sender, "labeled", func(r *repo, _ *issue) { _ = addLabel(r, number, label) })
	ev.Label = label
	return ev
}

// Unlabel takes a label off an issue.
func (g *GitHub) Unlabel(repoName string, number int, label, sender string) workitem.IssueEvent {
	ev := g.issueEvent(repoName, number, sender, "unlabeled", func(_ *repo, is *issue) {
		is.labels = slices.DeleteFunc(is.labels, func(l string) bool { return strings.EqualFold(l, label) })
	})
	ev.Label = label
	return ev
}

// EditIssue changes an issue's title and body; Changed names what differs, as the
// payload's "changes" does.
func (g *GitHub) EditIssue(repoName string, number int, sender, title, body string) workitem.IssueEvent {
	var changed []string
	ev := g.issueEvent(repoName, number, sender, "edited", func(_ *repo, is *issue) {
		if is.title != title {
			changed = append(changed, "title")
		}
		if is.body != body {
			changed = append(changed, "body")
		}
		is.title, is.body = title, body
	})
	ev.Changed = changed
	return ev
}

// SetIssueText changes an issue's text with no webhook: one Bumper never heard of
// (serve was down, the delivery was lost).
func (g *GitHub) SetIssueText(repoName string, number int, title, body string) {
	g.EditIssue(repoName, number, "someone", title, body)
}

// CloseIssue closes an issue.
func (g *GitHub) CloseIssue(repoName string, number int, sender string) workitem.IssueEvent {
	return g.issueEvent(repoName, number, sender, "closed", func(_ *repo, is *issue) { is.state = "closed" })
}

// ReopenIssue reopens an issue.
func (g *GitHub) ReopenIssue(repoName string, number int, sender string) workitem.IssueEvent {
	return g.issueEvent(repoName, number, sender, "reopened", func(_ *repo, is *issue) { is.state = "open" })
}

// SetLabels replaces an issue's labels with no webhook.
func (g *GitHub) SetLabels(repoName string, number int, labels ...string) {
	g.issueEvent(repoName, number, "someone", "", func(_ *repo, is *issue) { is.labels = slices.Clone(labels) })
}

// Comment has author comment on an issue or a pull request.
func (g *GitHub) Comment(repoName string, number int, author, body string) (workitem.CommentEvent, int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.must(repoName)
	id, err := g.addComment(r, number, author, body)
	if err != nil {
		panic(err)
	}
	is := r.issues[number]
	return workitem.CommentEvent{Delivery: g.nextDelivery(), Repo: r.view(), Issue: is.view(r.commentCount(number)),
		CommentID: id, Author: author, AuthorType: userType(author), Body: body, IsPull: is.pull != nil}, id
}

// EditComment changes a comment's body, as its author (or anyone holding the App's
// token, for the App's comments) can. GitHub sends issue_comment "edited", which never
// reaches the service.
func (g *GitHub) EditComment(repoName string, id int64, body string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.editComment(g.must(repoName), id, body); err != nil {
		panic(err)
	}
}

// DeleteComment deletes a comment.
func (g *GitHub) DeleteComment(repoName string, id int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if cm, ok := g.must(repoName).comments[id]; ok {
		cm.deleted = true
	}
}

// CommentAs adds a comment written by author at the current time, with no webhook.
func (g *GitHub) CommentAs(repoName string, number int, author, body string) int64 {
	_, id := g.Comment(repoName, number, author, body)
	return id
}

// OpenPull opens a pull request and returns its number. p names its author, head
// branch and (when a fork's) head repository; its head commit is the branch's, and its
// base the default branch unless named. files are what it changes, with patches.
func (g *GitHub) OpenPull(repoName string, p workitem.Pull, files ...workitem.PullFile) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.must(repoName)
	if p.HeadRepo == "" {
		p.HeadRepo = r.name
	}
	if p.HeadSHA == "" {
		p.HeadSHA = g.must(p.HeadRepo).refs["refs/heads/"+p.HeadRef]
	}
	if p.BaseRef == "" {
		p.BaseRef = r.defaultBranch
	}
	r.number++
	p.Number, p.State, p.Merged = r.number, "open", false
	r.issues[r.number] = &issue{number: r.number, title: "pull request " + p.HeadRef, author: p.Author, state: "open", pull: &p}
	r.files[r.number] = slices.Clone(files)
	return r.number
}

// Push moves a branch to a new commit of content, pushed by sender, and returns the
// commit and the synchronize event of each open pull request from that branch.
func (g *GitHub) Push(repoName, branch, sender string, content map[string]string) (string, []workitem.PullEvent) {
	sha := g.Commit(repoName, branch, content)
	g.mu.Lock()
	defer g.mu.Unlock()
	return sha, g.synchronize(g.must(repoName), branch, sender, sha)
}

func (g *GitHub) pullEvent(r *repo, p *workitem.Pull, action, sender string) workitem.PullEvent {
	return workitem.PullEvent{Delivery: g.nextDelivery(), Action: action, Repo: r.view(), Number: p.Number, HeadRef: p.HeadRef,
		HeadRepo: p.HeadRepo, Author: p.Author, Merged: p.Merged, Sender: sender, After: p.HeadSHA}
}

// closePull closes a pull request, merged or not.
func (g *GitHub) closePull(repoName string, number int, sender string, merged bool) workitem.PullEvent {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.must(repoName)
	is, ok := r.issues[number]
	if !ok || is.pull == nil {
		panic("workitemtest: no pull request " + repoName + "#" + strconv.Itoa(number))
	}
	is.state, is.pull.State, is.pull.Merged = "closed", "closed", merged
	ev := g.pullEvent(r, is.pull, "closed", sender)
	ev.After = ""
	return ev
}

// MergePull merges a pull request.
func (g *GitHub) MergePull(repoName string, number int, sender string) workitem.PullEvent {
	return g.closePull(repoName, number, sender, true)
}

// ClosePull closes a pull request without merging it.
func (g *GitHub) ClosePull(repoName string, number int, sender string) workitem.PullEvent {
	return g.closePull(repoName, number, sender, false)
}

// ReviewPull has a person review a pull request (APPROVED, or CHANGES_REQUESTED and
// COMMENTED with a body), with no webhook: see Review for the event.
func (g *GitHub) ReviewPull(repoName string, number int, user, state string) {
	body := ""
	if state != "APPROVED" {
		body = "A review."
	}
	g.Review(repoName, number, user, state, body)
}

// runEvent updates a run and describes it as workflow_run does.
func (g *GitHub) runEvent(repoName string, id int64, change func(*Run)) workitem.RunEvent {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.must(repoName)
	i := slices.IndexFunc(r.runs, func(run *Run) bool { return run.ID == id })
	if i < 0 {
		panic("workitemtest: no run " + strconv.FormatInt(id, 10) + " in " + repoName)
	}
	run := r.runs[i]
	change(run)
	return workitem.RunEvent{Delivery: g.nextDelivery(), Repo: r.view(), RunID: run.ID, WorkflowPath: ".github/workflows/" + run.Workflow,
		Status: run.Status, Conclusion: run.Conclusion, Runner: run.Runner}
}

// StartRun has a runner pick a run up.
func (g *GitHub) StartRun(repoName string, id int64, runner string) workitem.RunEvent {
	return g.runEvent(repoName, id, func(r *Run) { r.Status, r.Runner = "in_progress", runner })
}

// CompleteRun ends a run with a conclusion (success, failure, cancelled, …).
func (g *GitHub) CompleteRun(repoName string, id int64, conclusion string) workitem.RunEvent {
	return g.runEvent(repoName, id, func(r *Run) { r.Status, r.Conclusion = "completed", conclusion })
}

// CheckResult has another App (CI) post a completed check run on a commit, and returns
// the check_run "completed" event, which names the open pull requests whose head it is.
func (g *GitHub) CheckResult(repoName string, cr workitem.CheckRun, app int64) workitem.CheckEvent {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.must(repoName)
	if _, err := g.addCheckRun(r, cr, app); err != nil {
		panic(err)
	}
	var pulls []int
	for _, n := range slices.Sorted(maps.Keys(r.issues)) {
		if is := r.issues[n]; is.pull != nil && is.state == "open" && is.pull.HeadSHA == cr.HeadSHA {
			pulls = append(pulls, n)
		}
	}
	return workitem.CheckEvent{Delivery: g.nextDelivery(), Repo: r.view(), Name: cr.Name, HeadSHA: cr.HeadSHA,
		Conclusion: cr.Conclusion, PullRequests: pulls}
}

// Rerequest has sender press Re-run on a check of a pull request.
func (g *GitHub) Rerequest(repoName string, number int, sender string) workitem.CheckRerequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.must(repoName)
	return workitem.CheckRerequest{Delivery: g.nextDelivery(), Repo: r.view(), PullRequests: []int{number},
		Sender: sender, SenderType: userType(sender)}
}
