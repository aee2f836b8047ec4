package fidelity

import (
	"maps"
	"testing"
)

func TestPathRouterMatch(t *testing.T) {
	// The router knows every template of the description, loaded or not.
	r := loadTestOpenAPI(t).router

	tests := []struct {
		path     string
		template string // "" when no route may match
		params   map[string]string
	}{
		{"/repos/o/r", "/repos/{owner}/{repo}", map[string]string{"owner": "o", "repo": "r"}},
		{"/repos/o/r/issues/7", "/repos/{owner}/{repo}/issues/{issue_number}", map[string]string{"owner": "o", "repo": "r", "issue_number": "7"}},
		{"/repos/o/r/issues/comments", "/repos/{owner}/{repo}/issues/comments", map[string]string{"owner": "o", "repo": "r"}},
		{"/repos/o/r/issues/comments/9", "/repos/{owner}/{repo}/issues/comments/{comment_id}", map[string]string{"owner": "o", "repo": "r", "comment_id": "9"}},
		{"/repos/o/r/git/refs", "/repos/{owner}/{repo}/git/refs", map[string]string{"owner": "o", "repo": "r"}},
		{"/repos/o/r/git/refs/heads/bumper/12-1", "/repos/{owner}/{repo}/git/refs/{ref}", map[string]string{"owner": "o", "repo": "r", "ref": "heads/bumper/12-1"}},
		{"/repos/o/r/git/ref/heads/main", "/repos/{owner}/{repo}/git/ref/{ref}", map[string]string{"owner": "o", "repo": "r", "ref": "heads/main"}},
		{"/repos/o/r/git/matching-refs/bumper/dispatch/", "", nil},
		{"/repos/o/r/git/refs/", "", nil},
		{"/repos/o/r/branches/bumper%2F12-1/protection", "/repos/{owner}/{repo}/branches/{branch}/protection", map[string]string{"owner": "o", "repo": "r", "branch": "bumper/12-1"}},
		{"/repos/o/r/contents/dir/sub/file.go", "/repos/{owner}/{repo}/contents/{path}", map[string]string{"owner": "o", "repo": "r", "path": "dir/sub/file.go"}},
		{"/repos/o/r/compare/main...feature/x", "/repos/{owner}/{repo}/compare/{basehead}", map[string]string{"owner": "o", "repo": "r", "basehead": "main...feature/x"}},
		{"/repos/o/r/commits/abc/check-runs", "/repos/{owner}/{repo}/commits/{ref}/check-runs", map[string]string{"owner": "o", "repo": "r", "ref": "abc"}},
		{"/repos/o/r/commits/heads/bumper/12-1/check-runs", "/repos/{owner}/{repo}/commits/{ref}/check-runs", map[string]string{"owner": "o", "repo": "r", "ref": "heads/bumper/12-1"}},
		{"/repos/o/r/commits/feature/x", "/repos/{owner}/{repo}/commits/{ref}", map[string]string{"owner": "o", "repo": "r", "ref": "feature/x"}},
		{"/repos/o/r/commits/abc/comments", "/repos/{owner}/{repo}/commits/{commit_sha}/comments", map[string]string{"owner": "o", "repo": "r", "commit_sha": "abc"}},
		{"/repos/o/r/commits/a//check-runs", "", nil},
		{"/app/installations/5/access_tokens", "/app/installations/{installation_id}/access_tokens", map[string]string{"installation_id": "5"}},
		{"/installation/token", "/installation/token", map[string]string{}},
		{"/repos/o/r/actions/workflows/ci.yml/dispatches", "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches", map[string]string{"owner": "o", "repo": "r", "workflow_id": "ci.yml"}},
		{"/repositories/1000/issues", "", nil},
		{"/repos//r/issues", "", nil},
		{"/", "/", map[string]string{}}, // GitHub's API root (meta/root)
		{"/o/r.git/info/refs", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			route, params, err := r.match(tt.path)
			if err != nil {
				t.Fatalf("match: %v", err)
			}
			if tt.template == "" {
				if route != nil {
					t.Fatalf("matched %s, want no route", route.template)
				}
				return
			}
			if route == nil {
				t.Fatalf("no route, want %s", tt.template)
			}
			if route.template != tt.template {
				t.Errorf("matched %s, want %s", route.template, tt.template)
			}
			if !maps.Equal(params, tt.params) {
				t.Errorf("params %v, want %v", params, tt.params)
			}
		})
	}

	if _, _, err := r.match("/repos/o/r/issues/%zz"); err == nil {
		t.Error("a path with broken percent-encoding matched without error")
	}
}
