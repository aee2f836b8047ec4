package ghemu

import (
	"fmt"
	"sort"
	"strconv"
	"time"
)

// obj is a rendered GitHub object. Rendering builds every field GitHub's OpenAPI
// description marks required, so responses validate against it and real clients
// (go-github, octokit) decode them as they decode GitHub's.
type obj = map[string]any

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func tsPtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return ts(*t)
}

func nodeID(kind string, id int64) string {
	return fmt.Sprintf("%s_kgDO%08d", kind, id)
}

func (e *Emulator) renderUser(login string) obj {
	u := e.st.Users[key(login)]
	if u == nil {
		u = &user{ID: 0, Login: login, Type: "User"}
	}
	base := e.baseURL + "/users/" + u.Login
	return obj{
		"login": u.Login, "id": u.ID, "node_id": nodeID("U", u.ID),
		"avatar_url":          e.baseURL + "/avatars/" + u.Login,
		"gravatar_id":         "",
		"url":                 base,
		"html_url":            e.baseURL + "/" + u.Login,
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

func (e *Emulator) renderUserOrNil(login string) any {
	if login == "" {
		return nil
	}
	return e.renderUser(login)
}

// renderRepo renders a full repository, as REST responses and webhook envelopes carry it.
func (e *Emulator) renderRepo(rp *repo) obj {
	api := e.baseURL + "/repos/" + rp.fullName()
	html := e.baseURL + "/" + rp.fullName()
	open := 0
	for _, is := range rp.Issues {
		if is.State == "open" && !is.IsPull {
			open++
		}
	}
	vis := "public"
	if rp.Private {
		vis = "private"
	}
	return obj{
		"id": rp.ID, "node_id": nodeID("R", rp.ID), "name": rp.Name, "full_name": rp.fullName(),
		"owner": e.renderUser(rp.Owner), "private": rp.Private, "html_url": html,
		"description": nilIfEmpty(rp.Description), "fork": false, "url": api,
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
		"git_url":           e.baseURL + "/" + rp.fullName() + ".git",
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
		"ssh_url":           "git@localhost:" + rp.fullName() + ".git",
		"stargazers_url":    api + "/stargazers",
		"statuses_url":      api + "/statuses/{sha}",
		"subscribers_url":   api + "/subscribers",
		"subscription_url":  api + "/subscription",
		"tags_url":          api + "/tags",
		"teams_url":         api + "/teams",
		"trees_url":         api + "/git/trees{/sha}",
		"clone_url":         e.baseURL + "/" + rp.fullName() + ".git",
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
		"pushed_at": ts(rp.PushedAt), "created_at": ts(rp.CreatedAt), "updated_at": ts(rp.UpdatedAt),
		"allow_forking": true, "web_commit_signoff_required": false,
		"license":           nil,
		"network_count":     0,
		"subscribers_count": 0,
		"custom_properties": obj{},
	}
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (e *Emulator) renderLabel(rp *repo, l *label) obj {
	return obj{
		"id": l.ID, "node_id": nodeID("LA", l.ID),
		"url":  e.baseURL + "/repos/" + rp.fullName() + "/labels/" + pathEscape(l.Name),
		"name": l.Name, "color": l.Color, "description": nilIfEmpty(l.Description), "default": l.Default,
	}
}

func (e *Emulator) renderLabels(rp *repo, keys []string) []obj {
	out := make([]obj, 0, len(keys))
	for _, k := range keys {
		if l := rp.Labels[k]; l != nil {
			out = append(out, e.renderLabel(rp, l))
		}
	}
	return out
}

func (e *Emulator) reactions(url string) obj {
	return obj{"url": url + "/reactions", "total_count": 0, "+1": 0, "-1": 0, "laugh": 0,
		"confused": 0, "heart": 0, "hooray": 0, "eyes": 0, "rocket": 0}
}

// authorAssociation is how GitHub describes the author's relation to the repository.
func (e *Emulator) authorAssociation(rp *repo, login string) string {
	switch {
	case key(login) == key(rp.Owner):
		return "OWNER"
	case rp.Collaborators[key(login)] != "":
		return "COLLABORATOR"
	default:
		return "NONE"
	}
}

func (e *Emulator) renderIssue(rp *repo, is *issue) obj {
	api := e.baseURL + "/repos/" + rp.fullName() + "/issues/" + strconv.Itoa(is.Number)
	kind := "issues"
	if is.IsPull {
		kind = "pull"
	}
	assignees := make([]obj, 0, len(is.Assignees))
	for _, a := range is.Assignees {
		assignees = append(assignees, e.renderUser(a))
	}
	var assignee any
	if len(assignees) > 0 {
		assignee = assignees[0]
	}
	o := obj{
		"id": is.ID, "node_id": nodeID("I", is.ID), "url": api,
		"repository_url": e.baseURL + "/repos/" + rp.fullName(),
		"labels_url":     api + "/labels{/name}",
		"comments_url":   api + "/comments",
		"events_url":     api + "/events",
		"html_url":       e.baseURL + "/" + rp.fullName() + "/" + kind + "/" + strconv.Itoa(is.Number),
		"number":         is.Number, "title": is.Title, "user": e.renderUser(is.User),
		"labels": e.renderLabels(rp, is.Labels), "state": is.State,
		"locked": is.Locked, "assignee": assignee, "assignees": assignees, "milestone": nil,
		"comments": is.Comments, "created_at": ts(is.CreatedAt), "updated_at": ts(is.UpdatedAt),
		"closed_at": tsPtr(is.ClosedAt), "author_association": e.authorAssociation(rp, is.User),
		"active_lock_reason": nil, "body": nilIfEmpty(is.Body),
		"reactions":                e.reactions(api),
		"timeline_url":             api + "/timeline",
		"performed_via_github_app": nil,
		"state_reason":             nilIfEmpty(is.StateReason),
	}
	if is.ClosedBy != "" {
		o["closed_by"] = e.renderUser(is.ClosedBy)
	}
	if is.IsPull {
		pulls := e.baseURL + "/repos/" + rp.fullName() + "/pulls/" + strconv.Itoa(is.Number)
		html := e.baseURL + "/" + rp.fullName() + "/pull/" + strconv.Itoa(is.Number)
		var mergedAt any
		if p := rp.Pulls[is.Number]; p != nil {
			mergedAt = tsPtr(p.MergedAt)
		}
		o["pull_request"] = obj{"url": pulls, "html_url": html, "diff_url": html + ".diff",
			"patch_url": html + ".patch", "merged_at": mergedAt}
	}
	return o
}

func (e *Emulator) renderApp() obj {
	a := e.st.App
	return obj{
		"id": a.ID, "slug": a.Slug, "node_id": nodeID("A", a.ID), "client_id": a.ClientID,
		"owner": e.renderUser(a.Owner), "name": a.Name, "description": "Runs coding agents safely",
		"external_url": e.baseURL, "html_url": e.baseURL + "/apps/" + a.Slug,
		"created_at": ts(a.CreatedAt), "updated_at": ts(a.CreatedAt),
		"permissions": a.Permissions, "events": a.Events, "installations_count": len(e.st.Installations),
	}
}

func (e *Emulator) renderComment(rp *repo, c *comment) obj {
	api := e.baseURL + "/repos/" + rp.fullName() + "/issues/comments/" + strconv.FormatInt(c.ID, 10)
	var via any
	if c.ViaApp {
		via = e.renderApp()
	}
	return obj{
		"id": c.ID, "node_id": nodeID("IC", c.ID), "url": api,
		"html_url":  fmt.Sprintf("%s/%s/issues/%d#issuecomment-%d", e.baseURL, rp.fullName(), c.IssueNumber, c.ID),
		"issue_url": fmt.Sprintf("%s/repos/%s/issues/%d", e.baseURL, rp.fullName(), c.IssueNumber),
		"body":      c.Body, "user": e.renderUser(c.User),
		"created_at": ts(c.CreatedAt), "updated_at": ts(c.UpdatedAt),
		"author_association":       e.authorAssociation(rp, c.User),
		"performed_via_github_app": via,
		"reactions":                e.reactions(api),
	}
}

func (e *Emulator) renderInstallation(in *installation) obj {
	sel := "selected"
	if in.AllRepos {
		sel = "all"
	}
	acct := e.st.Users[key(in.Account)]
	return obj{
		"id": in.ID, "app_id": e.st.App.ID, "app_slug": e.st.App.Slug, "client_id": e.st.App.ClientID,
		"target_id": acct.ID, "target_type": acct.Type,
		"account": e.renderUser(in.Account), "repository_selection": sel,
		"access_tokens_url": fmt.Sprintf("%s/app/installations/%d/access_tokens", e.baseURL, in.ID),
		"repositories_url":  e.baseURL + "/installation/repositories",
		"html_url":          fmt.Sprintf("%s/organizations/%s/settings/installations/%d", e.baseURL, in.Account, in.ID),
		"permissions":       in.Permissions, "events": in.Events,
		"created_at": ts(in.CreatedAt), "updated_at": ts(in.CreatedAt),
		"single_file_name": nil, "has_multiple_single_files": false, "single_file_paths": []string{},
		"suspended_by": nil, "suspended_at": nil,
	}
}

// sortedRepos returns the repositories in ID order, so listings are stable.
func (e *Emulator) sortedRepos(keep func(*repo) bool) []*repo {
	var out []*repo
	for _, r := range e.st.Repos {
		if keep(r) {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
