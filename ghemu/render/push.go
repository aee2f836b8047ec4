package render

import (
	"strconv"
	"strings"

	"github.com/bumperdev/bumper/ghemu/gitserver"
	"github.com/bumperdev/bumper/ghemu/state"
)

// zeroSHA is what a push webhook's before and after say for a ref that did not exist
// or no longer does.
const zeroSHA = "0000000000000000000000000000000000000000"

// Push is the body of a push webhook (without GitHub's envelope): ref moved from
// before to after ("" for a ref created or deleted), the commits it brought, the after
// commit as head_commit, and who pushed, as git identities name them.
func (r *Renderer) Push(rp *state.Repo, ref, before, after string, commits []gitserver.PushedCommit,
	head *gitserver.PushedCommit, pusher gitserver.Signature, forced bool) Obj {
	html := r.base + "/" + rp.FullName()
	b, a := before, after
	if b == "" {
		b = zeroSHA
	}
	if a == "" {
		a = zeroSHA
	}
	compare := html + "/compare/" + b[:12] + "..." + a[:12]
	if before == "" && after != "" {
		compare = html + "/commit/" + after
	}
	list := make([]Obj, 0, len(commits))
	for i := range commits {
		list = append(list, r.pushedCommit(rp, &commits[i]))
	}
	var headCommit any
	if head != nil {
		headCommit = r.pushedCommit(rp, head)
	}
	return Obj{
		"ref": ref, "before": b, "after": a, "created": before == "", "deleted": after == "",
		"forced": forced, "base_ref": nil, "compare": compare, "commits": list, "head_commit": headCommit,
		"pusher": Obj{"name": pusher.Name, "email": pusher.Email},
	}
}

// pushedCommit is one commit of a push webhook.
func (r *Renderer) pushedCommit(rp *state.Repo, c *gitserver.PushedCommit) Obj {
	ident := func(s gitserver.Signature) Obj {
		o := Obj{"name": s.Name, "email": s.Email}
		if u := r.userByEmail(s.Email); u != "" {
			o["username"] = u
		}
		return o
	}
	return Obj{
		"id": c.SHA, "tree_id": c.Tree, "distinct": c.Distinct, "message": strings.TrimRight(c.Message, "\n"),
		"timestamp": c.Author.When.Format("2006-01-02T15:04:05-07:00"),
		"url":       r.base + "/" + rp.FullName() + "/commit/" + c.SHA,
		"author":    ident(c.Author), "committer": ident(c.Committer),
		"added": c.Added, "removed": c.Removed, "modified": c.Modified,
	}
}

// userByEmail is the login of the account a commit email belongs to, as GitHub links
// commits to accounts: a seeded user's email, or a noreply address "<id>+<login>@…".
func (r *Renderer) userByEmail(email string) string {
	for _, u := range r.w.Users() {
		if u.Email != "" && u.Email == email {
			return u.Login
		}
		if strings.HasPrefix(email, strconv.FormatInt(u.ID, 10)+"+"+u.Login+"@") {
			return u.Login
		}
	}
	return ""
}
