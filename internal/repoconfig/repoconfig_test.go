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
		{"conversation defaults", "version: 1\n", "", func(t *testing.T, p Config) {
			if p.Bounds.ReviewRounds != 3 || p.Bounds.UpdateRounds != 2 || p.Reviewer.ReviseOnFindings {
				t.Fatalf("review_rounds %d, update_rounds %d, revise_on_findings %v; want 3, 2, false", p.Bounds.ReviewRounds, p.Bounds.UpdateRounds, p.Reviewer.ReviseOnFindings)
			}
		}},
		{"conversation bounds", "version: 1\nbounds: {review_rounds: 0, update_rounds: 5}\nreviewer: {revise_on_findings: true}\n", "", func(t *testing.T, p Config) {
			if p.Bounds.ReviewRounds != 0 || p.Bounds.UpdateRounds != 5 || !p.Reviewer.ReviseOnFindings {
				t.Fatalf("parsed %+v, %+v", p.Bounds, p.Reviewer)
			}
		}},
		{"too many review rounds", "version: 1\nbounds: {review_rounds: 21}\n", "at most 20 review rounds", nil},
		{"too many update rounds", "version: 1\nbounds: {update_rounds: 11}\n", "at most 10 update rounds", nil},
		{"negative review rounds", "version: 1\nbounds: {review_rounds: -1}\n", "must not be negative", nil},
		{"revise on findings not a boolean", "version: 1\nreviewer: {revise_on_findings: often}\n", "reviewer", nil},
		{"typo", "version: 1\naprovers: {}\n", "field aprovers not found", nil},
		{"future version", "version: 2\n", "version 2 is not supported", nil},
		{"bad level", "version: 1\napprovers: {min_permission: owner}\n", "min_permission", nil},
		{"level below write", "version: 1\napprovers: {min_permission: triage}\n", "can only raise the floor", nil},
		{"read level", "version: 1\napprovers: {min_permission: read}\n", "can only raise the floor", nil},
		{"no attempts", "version: 1\nbounds: {attempts: 0}\n", "bounds.attempts is 0", nil},
		{"negative", "version: 1\nbounds: {fix_rounds: -1}\n", "must not be negative", nil},
		// Caps that are not negative and still no number of micro-dollars: each parsed,
		// and the run failed at its end, when its evidence could not record the cap.
		{"cost cap not a number", "version: 1\nbounds: {cost_per_run_usd: .nan}\n", "bounds.cost_per_run_usd is NaN", nil},
		{"infinite cost cap", "version: 1\nbounds: {cost_per_run_usd: .inf}\n", "bounds.cost_per_run_usd is +Inf", nil},
		{"cost cap past the evidence's count", "version: 1\nbounds: {cost_per_run_usd: 1e13}\n", "from 0 (no cap) to 1000000", nil},
		{"item cost cap not a number", "version: 1\nbounds: {cost_per_item_usd: .NaN}\n", "bounds.cost_per_item_usd is NaN", nil},
		{"largest cost cap", "version: 1\nbounds: {cost_per_run_usd: 1000000, cost_per_item_usd: 0.01}\n", "", nil},
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
		{"no harness section", "version: 1\n", "", func(t *testing.T, p Config) {
			if p.Harness != (Harness{}) {
				t.Fatalf("harness %+v, want none", p.Harness)
			}
		}},
		{"empty harness section", "version: 1\nharness: {}\n", "", func(t *testing.T, p Config) {
			if p.Harness != (Harness{}) {
				t.Fatalf("harness %+v, want none", p.Harness)
			}
		}},
		{"command harness", "version: 1\nharness: {name: command, command: ./scripts/agent.sh --fast}\n", "", func(t *testing.T, p Config) {
			if p.Harness != (Harness{Name: HarnessCommand, Command: "./scripts/agent.sh --fast"}) {
				t.Fatalf("harness %+v", p.Harness)
			}
		}},
		{"claude-code pinned", "version: 1\nharness: {name: claude-code, version: 2.1.328}\n", "", func(t *testing.T, p Config) {
			if p.Harness != (Harness{Name: HarnessClaudeCode, Version: "2.1.328"}) {
				t.Fatalf("harness %+v", p.Harness)
			}
		}},
		{"codex pre-release", "version: 1\nharness: {name: codex, version: 0.47.0-alpha.2}\n", "", nil},
		{"command without a program", "version: 1\nharness: {name: command}\n", "harness.command is empty", nil},
		{"command of blanks", "version: 1\nharness: {name: command, command: \"  \"}\n", "harness.command is empty", nil},
		{"command with a version", "version: 1\nharness: {name: command, command: make agent, version: 1.0.0}\n", "has none", nil},
		{"command too long", "version: 1\nharness: {name: command, command: " + strings.Repeat("x", MaxCommandBytes+1) + "}\n", "at most 4096", nil},
		{"command with NUL", "version: 1\nharness: {name: command, command: \"make\\0 agent\"}\n", "NUL", nil},
		{"claude-code unpinned", "version: 1\nharness: {name: claude-code}\n", "harness.version is missing", nil},
		{"claude-code latest", "version: 1\nharness: {name: claude-code, version: Latest}\n", "pin an exact release", nil},
		{"codex range", "version: 1\nharness: {name: codex, version: ^0.46.0}\n", "not an exact release", nil},
		{"codex partial", "version: 1\nharness: {name: codex, version: \"0.46\"}\n", "not an exact release", nil},
		{"codex leading v", "version: 1\nharness: {name: codex, version: v0.46.0}\n", "not an exact release", nil},
		{"claude-code with a command", "version: 1\nharness: {name: claude-code, version: 2.1.3, command: x}\n", "only for `name: command`", nil},
		{"codex with a model", "version: 1\nharness: {name: codex, version: 0.171.0, model: gpt-5.5}\n", "", func(t *testing.T, p Config) {
			if p.Harness.Model != "gpt-5.5" {
				t.Fatalf("harness %+v", p.Harness)
			}
		}},
		{"a model that reads as a flag", "version: 1\nharness: {name: codex, version: 0.171.0, model: --dangerously-bypass}\n", "not a model name", nil},
		{"a model with a space", "version: 1\nharness: {name: claude-code, version: 2.1.328, model: \"opus -p x\"}\n", "not a model name", nil},
		{"a model for the command harness", "version: 1\nharness: {name: command, command: make agent, model: gpt-5.5}\n", "asks for no model", nil},
		{"a model without a harness", "version: 1\nharness: {model: gpt-5.5}\n", "harness.name is missing", nil},
		{"unknown harness", "version: 1\nharness: {name: aider, version: 1.0.0}\n", "not one of command, claude-code, codex", nil},
		{"harness without a name", "version: 1\nharness: {version: 1.0.0}\n", "harness.name is missing", nil},
		{"harness typo", "version: 1\nharness: {name: command, comand: x}\n", "field comand not found", nil},
		{"verification", "version: 1\nverification: [\"go test -json ./...\", \"make lint\"]\n", "", func(t *testing.T, p Config) {
			if len(p.Verification) != 2 {
				t.Fatalf("verification %v", p.Verification)
			}
		}},
		{"empty verification command", "version: 1\nverification: [\"go test ./...\", \"\"]\n", "verification[1] is empty", nil},
		{"too many verification commands", "version: 1\nverification: [" + strings.Repeat("\"true\", ", MaxVerificationCommands) + "\"true\"]\n", "at most 20", nil},
		{"too many verification rounds", "version: 1\nbounds:\n  verification_rounds: 6\n", "at most 5 rounds", nil},
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
			if tt.check != nil {
				tt.check(t, p)
			}
		})
	}
}
