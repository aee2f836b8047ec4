// Package setup is the App's identity: the repository permissions and webhook events
// Bumper needs (each with its reason), the GitHub App manifest built from them, and
// `bumper setup`'s manifest flow, which registers the App on GitHub and writes its
// credentials and a commented `serve` configuration.
package setup

import (
	"slices"
	"sort"
)

// Permission is one repository permission the App asks for.
type Permission struct {
	// Name is GitHub's name of it (default_permissions key, GET /app's permissions).
	Name string `json:"name"`
	// Access is read or write.
	Access string `json:"access"`
	// Why says what Bumper does with it.
	Why string `json:"why"`
}

// Event is one webhook event the App subscribes to.
type Event struct {
	Name string `json:"name"`
	Why  string `json:"why"`
}

// Permissions are exactly the repository permissions Bumper needs, in the order the
// docs list them. Administration is read only: serve reads the base branch's
// protection when a work item starts and says when a merge needs no review.
func Permissions() []Permission {
	return []Permission{
		{Name: "issues", Access: "write", Why: "the work item's status comment and state label, replies to commands"},
		{Name: "contents", Access: "write", Why: "reads .github/bumper.yml at the approved commit; creates the refs/bumper/… guard refs that make a dispatch happen once; a run's token pushes its work branch"},
		{Name: "pull_requests", Access: "write", Why: "a run opens its pull request and answers review threads; the reviewer's verdict is a review on it; reviews are read for revise rounds; GitHub's update of a behind branch"},
		{Name: "checks", Access: "write", Why: "the evidence and bumper/verdict check runs; the failing checks a fix round is asked to fix"},
		{Name: "actions", Access: "write", Why: "dispatches the runner workflow (workflow_dispatch) and follows its runs"},
		{Name: "administration", Access: "read", Why: "reads the default branch's protection, to warn when a merge needs no person's review"},
		{Name: "metadata", Access: "read", Why: "required by GitHub for every App: the repository itself, collaborators' permission for commands"},
	}
}

// Events are exactly the webhook events Bumper's handlers take (app/handler.All), less
// the installation events, which GitHub sends every App without a subscription.
func Events() []Event {
	return []Event{
		{Name: "issues", Why: "the agent:implement label requests work; an edit voids an approval; closing stops the work item"},
		{Name: "issue_comment", Why: "/approve, /stop, /retry, /status, /revise and /steer"},
		{Name: "pull_request", Why: "a run's pull request opened, pushed to by a person, merged or closed"},
		{Name: "pull_request_review", Why: "a writer's review asking for changes starts a revise round (GitHub sends it for single comments and thread replies too)"},
		{Name: "push", Why: "the base branch moved: a pull request that conflicts gets an update round, one only behind is updated where the base requires it"},
		{Name: "workflow_run", Why: "a dispatched run started and how it ended"},
		{Name: "workflow_job", Why: "which runner picked a run up, for the record"},
		{Name: "check_run", Why: "a failing required check starts a fix round; Re-run on a Bumper check asks for a retry"},
	}
}

// AlwaysSentEvents are the events GitHub delivers to every App whatever it subscribes
// to; a manifest may not name them.
var AlwaysSentEvents = []string{"installation", "installation_repositories"}

// PermissionMap is Permissions as GitHub's {name: access} map.
func PermissionMap() map[string]string {
	out := map[string]string{}
	for _, p := range Permissions() {
		out[p.Name] = p.Access
	}
	return out
}

// EventNames are the names of Events, sorted.
func EventNames() []string {
	var out []string
	for _, e := range Events() {
		out = append(out, e.Name)
	}
	sort.Strings(out)
	return out
}

// accessRank orders GitHub's access levels.
var accessRank = map[string]int{"": 0, "none": 0, "read": 1, "write": 2, "admin": 3}

// Gaps compares what an App (or an installation) was granted with what Bumper needs:
// missing are the permissions absent or below the level needed ("checks: read, needs
// write"), extra those granted beyond it, both sorted; events the same way.
type Gaps struct {
	MissingPermissions []Permission `json:"missing_permissions,omitempty"`
	// Granted holds, for each missing permission, what was granted ("" for nothing).
	Granted          map[string]string `json:"granted,omitempty"`
	ExtraPermissions map[string]string `json:"extra_permissions,omitempty"`
	MissingEvents    []Event           `json:"missing_events,omitempty"`
	ExtraEvents      []string          `json:"extra_events,omitempty"`
}

// Compare finds the Gaps between granted permissions and events and Bumper's needs.
// events nil skips the events (an installation's are the App's).
func Compare(perms map[string]string, events []string) Gaps {
	var g Gaps
	need := PermissionMap()
	for _, p := range Permissions() {
		if accessRank[perms[p.Name]] < accessRank[p.Access] {
			g.MissingPermissions = append(g.MissingPermissions, p)
			if g.Granted == nil {
				g.Granted = map[string]string{}
			}
			g.Granted[p.Name] = perms[p.Name]
		}
	}
	for name, access := range perms {
		if accessRank[access] > accessRank[need[name]] {
			if g.ExtraPermissions == nil {
				g.ExtraPermissions = map[string]string{}
			}
			g.ExtraPermissions[name] = access
		}
	}
	if events == nil {
		return g
	}
	for _, e := range Events() {
		if !slices.Contains(events, e.Name) {
			g.MissingEvents = append(g.MissingEvents, e)
		}
	}
	needEvents := EventNames()
	for _, e := range events {
		if !slices.Contains(needEvents, e) && !slices.Contains(AlwaysSentEvents, e) {
			g.ExtraEvents = append(g.ExtraEvents, e)
		}
	}
	sort.Strings(g.ExtraEvents)
	return g
}
