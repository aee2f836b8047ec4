// Package render gives the world's records the JSON shapes GitHub gives its objects,
// for REST responses, webhook payloads and the runner's event file alike. Rendering
// builds every field GitHub's OpenAPI description marks required, so responses validate
// against it and real clients (go-github, octokit) decode them as they decode GitHub's.
//
// A Renderer reads the world, so it is made and used inside state.Store.Do.
package render

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/bumperdev/bumper/ghemu/state"
)

// Obj is a rendered GitHub object.
type Obj = map[string]any

// Renderer renders records of one world, with URLs under its base URL.
type Renderer struct {
	w       *state.World
	base    string
	commits *Commits
}

// New is a renderer of w for the current transaction. commits looks up the head
// commits workflow runs carry; nil renders them empty.
func New(w *state.World, commits *Commits) *Renderer {
	return &Renderer{w: w, base: w.BaseURL(), commits: commits}
}

// TS is a time as GitHub writes it (RFC 3339, UTC).
func TS(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// TSPtr is TS, or null for no time.
func TSPtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return TS(*t)
}

// NodeID is a GraphQL node ID of kind for the object with id.
func NodeID(kind string, id int64) string {
	return fmt.Sprintf("%s_kgDO%08d", kind, id)
}

// NilIfEmpty is s, or null for "".
func NilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// NilIfZero is v, or null for 0.
func NilIfZero(v int64) any {
	if v == 0 {
		return nil
	}
	return v
}

// User renders an account; a login the world does not know renders with ID 0.
func (r *Renderer) User(login string) Obj {
	u := r.w.User(login)
	if u == nil {
		u = &state.User{ID: 0, Login: login, Type: "User"}
	}
	base := r.base + "/users/" + u.Login
	return Obj{
		"login": u.Login, "id": u.ID, "node_id": NodeID("U", u.ID),
		"avatar_url":          r.base + "/avatars/" + u.Login,
		"gravatar_id":         "",
		"url":                 base,
		"html_url":            r.base + "/" + u.Login,
		"followers_url":       base + "/followers",
		"following_url":       base + "/following{/other_user}",
		"gists_url":           base + "/gists{/gist_id}",
		"starred_url":         base + "/starred{/owner}{/repo}",
		"subscriptions_url":   base + "/subscriptions",
		"organizations_url":   base + "/orgs",
		"repos_url":           base + "/repos",
		"events_url":          base + "/events{/privacy}",
		"received_events_url": base + "/received_events",
		"type":                u.Type,
		"user_view_type":      "public",
		"site_admin":          false,
	}
}

// UserOrNil is User, or null for no login.
func (r *Renderer) UserOrNil(login string) any {
	if login == "" {
		return nil
	}
	return r.User(login)
}

// Org renders an organization as webhook envelopes carry it.
func (r *Renderer) Org(u *state.User) Obj {
	base := r.base + "/orgs/" + u.Login
	return Obj{"login": u.Login, "id": u.ID, "node_id": NodeID("O", u.ID), "url": base,
		"repos_url": base + "/repos", "events_url": base + "/events", "hooks_url": base + "/hooks",
		"issues_url": base + "/issues", "members_url": base + "/members{/member}",
		"public_members_url": base + "/public_members{/member}",
		"avatar_url":         r.base + "/avatars/" + u.Login, "description": nil}
}

// OrgOf is the organization that owns rp, rendered, or nil when a person owns it.
func (r *Renderer) OrgOf(rp *state.Repo) Obj {
	if owner := r.w.User(rp.Owner); owner != nil && owner.Type == "Organization" {
		return r.Org(owner)
	}
	return nil
}

// Repo renders a full repository, as REST responses and webhook envelopes carry it.
func (r *Renderer) Repo(rp *state.Repo) Obj {
	api := r.base + "/repos/" + rp.FullName()
	html := r.base + "/" + rp.FullName()
	open := 0
	for _, is := range rp.Issues() {
		if is.State == "open" && !is.IsPull {
			open++
		}
	}
	vis := "public"
	if rp.Private {
		vis = "private"
	}
	return Obj{
		"id": rp.ID, "node_id": NodeID("R", rp.ID), "name": rp.Name, "full_name": rp.FullName(),
		"owner": r.User(rp.Owner), "private": rp.Private, "html_url": html,
		"description": NilIfEmpty(rp.Description), "fork": false, "url": api,
		"archive_url":       api + "/{archive_format}{/ref}",
		"assignees_url":     api + "/assignees{/user}",
		"blobs_url":         api + "/git/blobs{/sha}",
		"branches_url":      api + "/branches{/branch}",
		"collaborators_url": api + "/collaborators{/collaborator}",
		"comments_url":      api + "/comments{/number}",
		"commits_url":       api + "/commits{/sha}",
		"compare_url":       api + "/compare/{base}...{head}",
		"contents_url":      api + "/contents/{+path}",
		"contributors_url":  api + "/contributors",
		"deployments_url":   api + "/deployments",
		"downloads_url":     api + "/downloads",
		"events_url":        api + "/events",
		"forks_url":         api + "/forks",
		"git_commits_url":   api + "/git/commits{/sha}",
		"git_refs_url":      api + "/git/refs{/sha}",
		"git_tags_url":      api + "/git/tags{/sha}",
		"git_url":           r.base + "/" + rp.FullName() + ".git",
		"issue_comment_url": api + "/issues/comments{/number}",
		"issue_events_url":  api + "/issues/events{/number}",
		"issues_url":        api + "/issues{/number}",
		"keys_url":          api + "/keys{/key_id}",
		"labels_url":        api + "/labels{/name}",
		"languages_url":     api + "/languages",
		"merges_url":        api + "/merges",
		"milestones_url":    api + "/milestones{/number}",
		"notifications_url": api + "/notifications{?since,all,participating}",
		"pulls_url":         api + "/pulls{/number}",
		"releases_url":      api + "/releases{/id}",
		"ssh_url":           "git@localhost:" + rp.FullName() + ".git",
		"stargazers_url":    api + "/stargazers",
		"statuses_url":      api + "/statuses/{sha}",
		"subscribers_url":   api + "/subscribers",
		"subscription_url":  api + "/subscription",
		"tags_url":          api + "/tags",
		"teams_url":         api + "/teams",
		"trees_url":         api + "/git/trees{/sha}",
		"clone_url":         r.base + "/" + rp.FullName() + ".git",
		"mirror_url":        nil,
		"hooks_url":         api + "/hooks",
		"svn_url":           html,
		"homepage":          nil,
		"language":          nil,
		"forks_count":       0, "forks": 0,
		"stargazers_count": 0, "watchers_count": 0, "watchers": 0,
		"size":              1,
		"default_branch":    rp.DefaultBranch,
		"open_issues_count": open, "open_issues": open,
		"is_template": false, "topics": []string{},
		"has_issues": true, "has_projects": false, "has_wiki": false, "has_pages": false,
		"has_downloads": true, "has_discussions": false,
		"archived": false, "disabled": false, "visibility": vis,
		"pushed_at": TS(rp.PushedAt), "created_at": TS(rp.CreatedAt), "updated_at": TS(rp.UpdatedAt),
		"allow_forking": true, "web_commit_signoff_required": false,
		"license":           nil,
		"network_count":     0,
		"subscribers_count": 0,
		"custom_properties": Obj{},
	}
}

// Label renders a repository label.
func (r *Renderer) Label(rp *state.Repo, l *state.Label) Obj {
	return Obj{
		"id": l.ID, "node_id": NodeID("LA", l.ID),
		"url":  r.base + "/repos/" + rp.FullName() + "/labels/" + url.PathEscape(l.Name),
		"name": l.Name, "color": l.Color, "description": NilIfEmpty(l.Description), "default": l.Default,
	}
}

// Labels renders the labels with the keys given, in that order.
func (r *Renderer) Labels(rp *state.Repo, keys []string) []Obj {
	out := make([]Obj, 0, len(keys))
	for _, k := range keys {
		if l := rp.Label(k); l != nil {
			out = append(out, r.Label(rp, l))
		}
	}
	return out
}

// Reactions is the empty reactions summary of the object at url.
func (r *Renderer) Reactions(url string) Obj {
	return Obj{"url": url + "/reactions", "total_count": 0, "+1": 0, "-1": 0, "laugh": 0,
		"confused": 0, "heart": 0, "hooray": 0, "eyes": 0, "rocket": 0}
}

// AuthorAssociation is how GitHub describes the author's relation to the repository.
func AuthorAssociation(rp *state.Repo, login string) string {
	switch {
	case state.Key(login) == state.Key(rp.Owner):
		return "OWNER"
	case rp.Collaborator(login) != "":
		return "COLLABORATOR"
	default:
		return "NONE"
	}
}

// Issue renders an issue, or a pull request as the issues API shows it.
func (r *Renderer) Issue(rp *state.Repo, is *state.Issue) Obj {
	api := r.base + "/repos/" + rp.FullName() + "/issues/" + strconv.Itoa(is.Number)
	kind := "issues"
	if is.IsPull {
		kind = "pull"
	}
	assignees := make([]Obj, 0, len(is.Assignees))
	for _, a := range is.Assignees {
		assignees = append(assignees, r.User(a))
	}
	var assignee any
	if len(assignees) > 0 {
		assignee = assignees[0]
	}
	o := Obj{
		"id": is.ID, "node_id": NodeID("I", is.ID), "url": api,
		"repository_url": r.base + "/repos/" + rp.FullName(),
		"labels_url":     api + "/labels{/name}",
		"comments_url":   api + "/comments",
		"events_url":     api + "/events",
		"html_url":       r.base + "/" + rp.FullName() + "/" + kind + "/" + strconv.Itoa(is.Number),
		"number":         is.Number, "title": is.Title, "user": r.User(is.User),
		"labels": r.Labels(rp, is.Labels), "state": is.State,
		"locked": is.Locked, "assignee": assignee, "assignees": assignees, "milestone": nil,
		"comments": is.Comments, "created_at": TS(is.CreatedAt), "updated_at": TS(is.UpdatedAt),
		"closed_at": TSPtr(is.ClosedAt), "author_association": AuthorAssociation(rp, is.User),
		"active_lock_reason": nil, "body": NilIfEmpty(is.Body),
		"reactions":                r.Reactions(api),
		"timeline_url":             api + "/timeline",
		"performed_via_github_app": nil,
		"state_reason":             NilIfEmpty(is.StateReason),
	}
	if is.ClosedBy != "" {
		o["closed_by"] = r.User(is.ClosedBy)
	}
	if is.IsPull {
		pulls := r.base + "/repos/" + rp.FullName() + "/pulls/" + strconv.Itoa(is.Number)
		html := r.base + "/" + rp.FullName() + "/pull/" + strconv.Itoa(is.Number)
		var mergedAt any
		if p := rp.Pull(is.Number); p != nil {
			mergedAt = TSPtr(p.MergedAt)
		}
		o["pull_request"] = Obj{"url": pulls, "html_url": html, "diff_url": html + ".diff",
			"patch_url": html + ".patch", "merged_at": mergedAt}
	}
	return o
}

// App renders the hosted App.
func (r *Renderer) App() Obj {
	a := r.w.App()
	return Obj{
		"id": a.ID, "slug": a.Slug, "node_id": NodeID("A", a.ID), "client_id": a.ClientID,
		"owner": r.User(a.Owner), "name": a.Name, "description": "Runs coding agents safely",
		"external_url": r.base, "html_url": r.base + "/apps/" + a.Slug,
		"created_at": TS(a.CreatedAt), "updated_at": TS(a.CreatedAt),
		"permissions": a.Permissions, "events": a.Events, "installations_count": len(r.w.Installations()),
	}
}

// AppBySlug renders an App of the world: the hosted one, or another App known by its
// bot user (GitHub's integration object, with what the emulator knows).
func (r *Renderer) AppBySlug(slug string) Obj {
	app := r.w.App()
	if strings.EqualFold(slug, app.Slug) {
		return r.App()
	}
	bot := r.w.User(slug + "[bot]")
	var id int64
	if bot != nil {
		id = bot.ID
	}
	return Obj{
		"id": id, "slug": slug, "node_id": NodeID("A", id), "client_id": "Iv1." + slug,
		"owner": r.User(app.Owner), "name": slug, "description": nil,
		"external_url": r.base, "html_url": r.base + "/apps/" + slug,
		"created_at": TS(app.CreatedAt), "updated_at": TS(app.CreatedAt),
		"permissions": Obj{}, "events": []string{},
	}
}

// Comment renders an issue comment.
func (r *Renderer) Comment(rp *state.Repo, c *state.Comment) Obj {
	api := r.base + "/repos/" + rp.FullName() + "/issues/comments/" + strconv.FormatInt(c.ID, 10)
	var via any
	if c.ViaApp {
		via = r.App()
	}
	return Obj{
		"id": c.ID, "node_id": NodeID("IC", c.ID), "url": api,
		"html_url":  fmt.Sprintf("%s/%s/issues/%d#issuecomment-%d", r.base, rp.FullName(), c.IssueNumber, c.ID),
		"issue_url": fmt.Sprintf("%s/repos/%s/issues/%d", r.base, rp.FullName(), c.IssueNumber),
		"body":      c.Body, "user": r.User(c.User),
		"created_at": TS(c.CreatedAt), "updated_at": TS(c.UpdatedAt),
		"author_association":       AuthorAssociation(rp, c.User),
		"performed_via_github_app": via,
		"reactions":                r.Reactions(api),
	}
}

// Installation renders one of the App's installations.
func (r *Renderer) Installation(in *state.Installation) Obj {
	sel := "selected"
	if in.AllRepos {
		sel = "all"
	}
	app := r.w.App()
	acct := r.w.User(in.Account)
	return Obj{
		"id": in.ID, "app_id": app.ID, "app_slug": app.Slug, "client_id": app.ClientID,
		"target_id": acct.ID, "target_type": acct.Type,
		"account": r.User(in.Account), "repository_selection": sel,
		"access_tokens_url": fmt.Sprintf("%s/app/installations/%d/access_tokens", r.base, in.ID),
		"repositories_url":  r.base + "/installation/repositories",
		"html_url":          fmt.Sprintf("%s/organizations/%s/settings/installations/%d", r.base, in.Account, in.ID),
		"permissions":       in.Permissions, "events": in.Events,
		"created_at": TS(in.CreatedAt), "updated_at": TS(in.CreatedAt),
		"single_file_name": nil, "has_multiple_single_files": false, "single_file_paths": []string{},
		"suspended_by": nil, "suspended_at": nil,
	}
}
