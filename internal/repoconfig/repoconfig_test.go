package repoconfig

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, yaml, wantErr string
		check               func(t *testing.T, p Config)
	}{
		{"empty file gets defaults", "", "", func(t *testing.T, p Config) {
			if p.Bounds.Attempts != 3 || p.Approvers.MinPermission != "write" || p.Plan {
				t.Fatalf("defaults not applied: %+v", p)
			}
		}},
		{"full", "version: 1\nplan: true\napprovers: {min_permission: Maintain, distinct_from_requester: true}\nallowed_bots: [\"renovate[bot]\"]\nbounds: {attempts: 5, wall_time: 30m}\n", "", func(t *testing.T, p Config) {
			if !p.Plan || p.Approvers.MinPermission != "maintain" || !p.Approvers.DistinctFromRequester ||
				p.Bounds.Attempts != 5 || p.Bounds.WallTime.Minutes() != 30 || p.Revision == "default" {
				t.Fatalf("parsed %+v", p)
			}
		}},
		{"typo", "version: 1\naprovers: {}\n", "field aprovers not found", nil},
		{"future version", "version: 2\n", "version 2 is not supported", nil},
		{"bad level", "version: 1\napprovers: {min_permission: owner}\n", "min_permission", nil},
		{"level below write", "version: 1\napprovers: {min_permission: triage}\n", "can only raise the floor", nil},
		{"read level", "version: 1\napprovers: {min_permission: read}\n", "can only raise the floor", nil},
		{"no attempts", "version: 1\nbounds: {attempts: 0}\n", "bounds.attempts is 0", nil},
		{"negative", "version: 1\nbounds: {fix_rounds: -1}\n", "must not be negative", nil},
		{"read-only github api", "version: 1\ngithub_api: [\"GET /repos/*/*/pulls\", \"HEAD /rate_limit\"]\n", "", func(t *testing.T, p Config) {
			if len(p.GitHubAPI) != 2 {
				t.Fatalf("github_api %v", p.GitHubAPI)
			}
		}},
		// What an issue author who also controls a pull request to the policy would try.
		{"github api write", "version: 1\ngithub_api: [\"POST /repos/*/*/git/refs\"]\n", "read-only", nil},
		{"github api any method", "version: 1\ngithub_api: [\"* /**\"]\n", "read-only", nil},
		{"github api lower-case get", "version: 1\ngithub_api: [\"get /repos/*/*\"]\n", "read-only", nil},
		{"github api no path", "version: 1\ngithub_api: [\"GET\"]\n", "want \"GET /path\"", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse([]byte(tt.yaml))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, p)
		})
	}
}
