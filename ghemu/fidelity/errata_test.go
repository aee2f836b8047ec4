package fidelity

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// TestErrataInstallationsAccount lists installations whose account is a real user
// (GitHub's shape, taken from a recorded issue's author): it passes despite the
// description's allOf, and an account missing a field both schemas require still fails.
func TestErrataInstallationsAccount(t *testing.T) {
	api := loadFullOpenAPI(t)
	var issue struct {
		User map[string]any `json:"user"`
	}
	data, err := os.ReadFile("testdata/issue.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &issue); err != nil {
		t.Fatal(err)
	}
	installation := func(account map[string]any) map[string]any {
		return map[string]any{
			"id": 1, "account": account, "app_id": 2, "app_slug": "bumper", "target_id": 3, "target_type": "Organization",
			"single_file_name": nil, "repository_selection": "selected", "permissions": map[string]any{"issues": "write"},
			"events": []any{"issues"}, "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
			"access_tokens_url": "https://api.github.com/app/installations/1/access_tokens",
			"repositories_url":  "https://api.github.com/installation/repositories",
			"html_url":          "https://github.com/organizations/o/settings/installations/1",
			"suspended_by":      nil, "suspended_at": nil,
		}
	}
	noLogin := map[string]any{}
	for k, v := range issue.User {
		if k != "id" {
			noLogin[k] = v
		}
	}
	tests := []struct {
		name    string
		account map[string]any
		want    string // "" for no mismatch
	}{
		{"user account", issue.User, ""},
		{"account missing id", noLogin, "/0/account"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []Mismatch
			h := api.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json; charset=utf-8")
				_ = json.NewEncoder(w).Encode([]any{installation(tt.account)})
			}), func(m Mismatch) { got = append(got, m) })
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/app/installations", nil))
			switch {
			case tt.want == "" && len(got) > 0:
				t.Errorf("a real installation list was refused:\n%s", mismatchList(got))
			case tt.want != "" && (len(got) != 1 || !strings.Contains(got[0].Message, tt.want)):
				t.Errorf("want one mismatch about %s, got:\n%s", tt.want, mismatchList(got))
			}
		})
	}
}

// TestErrataReplyWithoutPath posts review comments to a handler that answers 201: a
// reply of {body, in_reply_to} alone passes (GitHub takes it), a comment with commit_id
// and path passes, and one with neither an in_reply_to nor a path still fails.
func TestErrataReplyWithoutPath(t *testing.T) {
	api := loadFullOpenAPI(t)
	tests := []struct {
		name string
		body string
		bad  bool
	}{
		{"a reply names only its thread", `{"body":"Thanks","in_reply_to":42}`, false},
		{"a comment on a line", `{"body":"Why?","commit_id":"6dcb09b5b57875f334f61aebed695e2e4193db5e","path":"a.go","line":3}`, false},
		{"neither a reply nor a line", `{"body":"Why?"}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []Mismatch
			h := api.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusNoContent)
			}), func(m Mismatch) {
				if m.Phase == PhaseRequest {
					got = append(got, m)
				}
			})
			req := httptest.NewRequest("POST", "/repos/o/r/pulls/1/comments", strings.NewReader(tt.body))
			req.Header.Set("Content-Type", "application/json")
			h.ServeHTTP(httptest.NewRecorder(), req)
			if (len(got) > 0) != tt.bad {
				t.Errorf("request mismatches = %s; want some: %v", mismatchList(got), tt.bad)
			}
		})
	}
}
