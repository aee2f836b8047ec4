package faults

import (
	"net/http/httptest"
	"strings"
	"testing"
)

var routes = []string{"GET /repos/{owner}/{repo}", "POST /repos/{owner}/{repo}/git/refs",
	"PATCH /repos/{owner}/{repo}/git/refs/{ref...}", "POST /repos/{owner}/{repo}/issues/{issue_number}/comments"}

// TestParse: a plan is read strictly, and every error names its line.
func TestParse(t *testing.T) {
	tests := []struct {
		name, yaml, wantErr string
	}{
		{"valid", `
seed: 42
rest:
  - route: /repos/{owner}/{repo}/git/refs
    methods: [POST]
    race: 0.1
    bad_gateway: 0.05
    latency: 10ms-50ms
  - {route: "/repos/acme/**", secondary_rate_limit: 0.01, retry_after: 30, latency: 5ms}
webhooks:
  - {events: [issue_comment.created], drop: 0.1, duplicate: 0.1}
`, ""},
		{"empty", "", ""},
		{"unknown key", "rest:\n  - route: /repos/{owner}/{repo}\n    bad_gateways: 0.1\n", "line 3: field bad_gateways not found"},
		{"rate above 1", "rest:\n  - route: /repos/{owner}/{repo}\n    unavailable: 1.5\n", "line 2: unavailable is a rate"},
		{"rates add up to more than 1", "rest:\n  - {route: /x}\n  - {route: \"/repos/{owner}/{repo}\", bad_gateway: 0.6, unavailable: 0.6}\n", "line 3: the rates add up"},
		{"bad latency", "rest:\n  - route: /x\n    latency: 2s-1s\n", "line 3: latency"},
		{"bad method", "rest:\n  - {route: /x, methods: [FETCH]}\n", "line 2: method \"FETCH\""},
		{"webhook rate", "webhooks:\n  - {drop: -1}\n", "line 2: drop is a rate"},
		{"unknown route", "rest:\n  - {route: \"/repos/{owner}/{repo}/nope\", bad_gateway: 1}\n", "line 2: route /repos/{owner}/{repo}/nope is not one the emulator serves"},
		{"race where GitHub has none", "rest:\n  - {route: \"/repos/{owner}/{repo}\", race: 1}\n", "line 2: race: GitHub answers none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.yaml))
			if err == nil {
				_, err = New(c, Options{Routes: routes})
			}
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestMatch: templates match their route whatever the values, globs the request's path.
func TestMatch(t *testing.T) {
	seed := uint64(1)
	tests := []struct {
		route, method, template, path string
		want                          bool
	}{
		{"/repos/{owner}/{repo}/git/refs/{ref}", "PATCH", "/repos/{owner}/{repo}/git/refs/{ref...}", "/repos/a/b/git/refs/heads/x", true},
		{"/repos/{owner}/{repo}", "GET", "/repos/{owner}/{repo}/git/refs", "/repos/a/b/git/refs", false},
		{"/repos/*/*", "GET", "", "/repos/a/b", true},
		{"/repos/*/*", "GET", "", "/repos/a/b/issues", false},
		{"/repos/acme/**", "GET", "", "/repos/acme/b/issues/1", true},
		{"/repos/acme/**", "GET", "", "/repos/other/b", false},
		{"/repos/**/comments", "GET", "", "/repos/a/b/issues/1/comments", true},
		{"/repos/*/*/issue*", "GET", "", "/repos/a/b/issues", true},
	}
	for _, tt := range tests {
		f, err := New(&Config{Seed: &seed, REST: []RESTRule{{Route: tt.route, BadGateway: 1}}}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		r := httptest.NewRequest(tt.method, tt.path, nil)
		if got := f.Decide(r, tt.method, tt.template).Fault != nil; got != tt.want {
			t.Errorf("%s on %s %s = %v, want %v", tt.route, tt.method, tt.path, got, tt.want)
		}
	}
}

// TestCredential: the Retry-After memory tells credentials apart, and the App by its
// issuer whatever JWT it signed.
func TestCredential(t *testing.T) {
	req := func(auth string) string {
		r := httptest.NewRequest("GET", "/", nil)
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		return Credential(r)
	}
	jwt := func(payload string) string { return "Bearer eyJhbGciOiJSUzI1NiJ9." + payload + ".sig" }
	if a, b := req(jwt("eyJpc3MiOjQyLCJpYXQiOjF9")), req(jwt("eyJpc3MiOjQyLCJpYXQiOjJ9")); a != "app:42" || a != b {
		t.Errorf("JWTs of one App = %q, %q", a, b)
	}
	if a, b := req("token ghp_a"), req("token ghp_b"); a == b || strings.Contains(a, "ghp_") {
		t.Errorf("tokens = %q, %q", a, b)
	}
	if got := req(""); !strings.HasPrefix(got, "ip:") {
		t.Errorf("anonymous = %q", got)
	}
}
