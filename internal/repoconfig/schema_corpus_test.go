package repoconfig_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/internal/repoconfig"
	"github.com/bumperdev/bumper/internal/repoconfig/repoconfigtest"
)

// Why the schema cannot say some of what the parser refuses.
const (
	cannotBytes     = "maxLength counts characters; the parser bounds bytes, and a character of UTF-8 takes up to 4"
	cannotDuration  = "a pattern reads a duration's syntax, not its size: Go's durations end at about 292 years"
	cannotGlob      = "a glob's syntax (its [...] classes, as Go's path.Match reads them) is beyond a pattern the schema can keep readable"
	cannotCase      = "uniqueItems compares the entries as written; GitHub's names, and the parser, ignore case"
	cannotNormalise = "uniqueItems compares the entries as written; the parser compares them cleaned (./go.mod is go.mod, ~ is /home/agent)"
)

// TestSchemaRefuses: every document the parser refuses, the schema refuses too, or the
// row says why a JSON Schema cannot (and then the schema must indeed let it through, so
// the reason stays true).
func TestSchemaRefuses(t *testing.T) {
	const v1 = "version: 1\n"
	long := func(s string, n int) string { return strings.Repeat(s, n) }
	tests := []struct {
		name, doc, parserErr, cannot string
	}{
		// The file's shape.
		{"unknown key", v1 + "aprovers: {}\n", "field aprovers not found", ""},
		{"unknown nested key", v1 + "approvers: {min_perm: write}\n", "field min_perm not found", ""},
		{"unknown bounds key", v1 + "bounds: {retries: 2}\n", "field retries not found", ""},
		{"a list for the file", "- version: 1\n", "cannot unmarshal", ""},
		{"duplicate key", v1 + "plan: true\nplan: false\n", "already defined", ""},
		{"future version", "version: 2\n", "version 2 is not supported", ""},
		{"version zero", "version: 0\n", "version 0 is not supported", ""},
		{"version as text", "version: \"1\"\n", "cannot unmarshal", ""},
		{"plan as a word", v1 + "plan: maybe\n", "cannot unmarshal", ""},
		{"plan as a number", v1 + "plan: 1\n", "cannot unmarshal", ""},
		// Approvers.
		{"unknown level", v1 + "approvers: {min_permission: owner}\n", "is not one of write, maintain, admin", ""},
		{"triage", v1 + "approvers: {min_permission: triage}\n", "can only raise the floor", ""},
		{"read", v1 + "approvers: {min_permission: Read}\n", "can only raise the floor", ""},
		{"no level", v1 + "approvers: {min_permission: \"\"}\n", "is not one of write, maintain, admin", ""},
		{"distinct as a word", v1 + "approvers: {distinct_from_requester: sometimes}\n", "cannot unmarshal", ""},
		{"one bot", v1 + "allowed_bots: renovate[bot]\n", "cannot unmarshal", ""},
		// Bounds.
		{"no attempts", v1 + "bounds: {attempts: 0}\n", "bounds.attempts is 0", ""},
		{"too many attempts", v1 + "bounds: {attempts: 21}\n", "bounds.attempts is 21", ""},
		{"negative rounds", v1 + "bounds: {verification_rounds: -1}\n", "must not be negative", ""},
		{"too many rounds", v1 + "bounds: {verification_rounds: 6}\n", "at most 5 rounds", ""},
		{"negative fix rounds", v1 + "bounds: {fix_rounds: -1}\n", "must not be negative", ""},
		{"too many fix rounds", v1 + "bounds: {fix_rounds: 11}\n", "bounds.fix_rounds is 11", ""},
		{"rounds as a word", v1 + "bounds: {fix_rounds: two}\n", "cannot unmarshal", ""},
		{"wall time in seconds", v1 + "bounds: {wall_time: 600}\n", "cannot unmarshal", ""},
		{"wall time in words", v1 + "bounds: {wall_time: 10 minutes}\n", "cannot unmarshal", ""},
		{"wall time without a unit", v1 + "bounds: {wall_time: \"1.5\"}\n", "cannot unmarshal", ""},
		{"negative wall time", v1 + "bounds: {wall_time: -5m}\n", "must not be negative", ""},
		{"wall time past Go's durations", v1 + "bounds: {wall_time: 3000000h}\n", "cannot unmarshal", cannotDuration},
		{"negative cost", v1 + "bounds: {cost_per_run_usd: -1}\n", "must not be negative", ""},
		{"cost past the cap", v1 + "bounds: {cost_per_item_usd: 1000000.5}\n", "from 0 (no cap) to 1000000", ""},
		{"infinite cost", v1 + "bounds: {cost_per_run_usd: .inf}\n", "is +Inf", ""},
		{"cost not a number", v1 + "bounds: {cost_per_run_usd: .nan}\n", "is NaN", ""},
		{"cost as text", v1 + "bounds: {cost_per_run_usd: \"5\"}\n", "cannot unmarshal", ""},
		// The harness.
		{"unknown harness", v1 + "harness: {name: aider, version: 1.0.0}\n", "not one of command, claude-code, codex", ""},
		{"harness without a name", v1 + "harness: {version: 1.0.0}\n", "harness.name is missing", ""},
		{"a model without a harness", v1 + "harness: {model: gpt-5.5}\n", "harness.name is missing", ""},
		{"harness typo", v1 + "harness: {name: command, comand: x}\n", "field comand not found", ""},
		{"harness as a word", v1 + "harness: claude-code\n", "cannot unmarshal", ""},
		{"command without a program", v1 + "harness: {name: command}\n", "harness.command is empty", ""},
		{"command of blanks", v1 + "harness: {name: command, command: \"\\u3000 \\t\"}\n", "harness.command is empty", ""},
		{"command with a version", v1 + "harness: {name: command, command: make agent, version: 1.0.0}\n", "has none", ""},
		{"command with a model", v1 + "harness: {name: command, command: make agent, model: gpt-5.5}\n", "asks for no model", ""},
		{"command too long", v1 + "harness: {name: command, command: " + long("x", repoconfig.MaxCommandBytes+1) + "}\n", "at most 4096", ""},
		{"command too long in bytes", v1 + "harness: {name: command, command: " + long("é", repoconfig.MaxCommandBytes/2+1) + "}\n", "at most 4096", cannotBytes},
		{"command with NUL", v1 + "harness: {name: command, command: \"make\\0 agent\"}\n", "NUL", ""},
		{"claude-code unpinned", v1 + "harness: {name: claude-code}\n", "harness.version is missing", ""},
		{"claude-code latest", v1 + "harness: {name: claude-code, version: Latest}\n", "pin an exact release", ""},
		{"codex range", v1 + "harness: {name: codex, version: ^0.46.0}\n", "not an exact release", ""},
		{"codex partial", v1 + "harness: {name: codex, version: \"0.46\"}\n", "not an exact release", ""},
		{"codex leading v", v1 + "harness: {name: codex, version: v0.46.0}\n", "not an exact release", ""},
		{"claude-code with a command", v1 + "harness: {name: claude-code, version: 2.1.3, command: x}\n", "only for `name: command`", ""},
		{"a model that reads as a flag", v1 + "harness: {name: codex, version: 0.171.0, model: --dangerously-bypass}\n", "not a model name", ""},
		{"a model with a space", v1 + "harness: {name: claude-code, version: 2.1.328, model: \"opus -p x\"}\n", "not a model name", ""},
		{"a model too long", v1 + "harness: {name: claude-code, version: 2.1.328, model: " + long("m", 101) + "}\n", "not a model name", ""},
		// The allowlist: the firewall's syntax (internal/hostpattern).
		{"a URL", v1 + "allowlist: [\"https://proxy.golang.org/x\"]\n", "allowlist[0]", ""},
		{"a path", v1 + "allowlist: [proxy.golang.org/]\n", "allowlist[0]", ""},
		{"port 0", v1 + "allowlist: [\"proxy.golang.org:0\"]\n", "not a number from 1 to 65535", ""},
		{"port too high", v1 + "allowlist: [\"proxy.golang.org:65536\"]\n", "not a number from 1 to 65535", ""},
		{"a port list ending in a comma", v1 + "allowlist: [\"proxy.golang.org:443,\"]\n", "not a number from 1 to 65535", ""},
		{"an IP in hex", v1 + "allowlist: [0x7f.1]\n", "canonical form", ""},
		{"an IP with a leading zero", v1 + "allowlist: [01.2.3.4]\n", "canonical form", ""},
		{"a wildcard IP", v1 + "allowlist: [\"*.10.0.0.1\"]\n", "canonical form", ""},
		{"an empty label", v1 + "allowlist: [a..b]\n", "empty label", ""},
		{"a label too long", v1 + "allowlist: [" + long("a", 64) + ".org]\n", "longer than 63", ""},
		{"a name too long", v1 + "allowlist: [" + long("abcdefgh.", 28) + "org]\n", "DNS limit", ""},
		{"a zone", v1 + "allowlist: [\"[fe80::1%eth0]\"]\n", "zone", ""},
		{"an open bracket", v1 + "allowlist: [\"[::1\"]\n", "missing ']'", ""},
		{"a bare IPv6 with a port", v1 + "allowlist: [\"2001:db8::1:443:x\"]\n", "allowlist[0]", ""},
		{"a wildcard in the middle", v1 + "allowlist: [\"a.*.org\"]\n", "allowlist[0]", ""},
		{"an empty entry", v1 + "allowlist: [\"\"]\n", "empty entry", ""},
		{"one host", v1 + "allowlist: proxy.golang.org\n", "cannot unmarshal", ""},
		// The agent's GitHub API: reads only.
		{"api write", v1 + "github_api: [\"POST /repos/*/*/git/refs\"]\n", "read-only", ""},
		{"api any method", v1 + "github_api: [\"* /**\"]\n", "read-only", ""},
		{"api lower-case get", v1 + "github_api: [\"get /repos/*/*\"]\n", "read-only", ""},
		{"api no path", v1 + "github_api: [GET]\n", "want \"GET /path\"", ""},
		{"api relative path", v1 + "github_api: [GET repos]\n", "want \"GET /path\"", ""},
		{"api tab", v1 + "github_api: [\"GET\\t/repos\"]\n", "want \"GET /path\"", ""},
		// The runner host's credentials, by name.
		{"credential upper case", v1 + "credentials: [NPM]\n", "credentials[0]", ""},
		{"credential with a dot", v1 + "credentials: [npm.corp]\n", "credentials[0]", ""},
		{"credential twice", v1 + "credentials: [npm, npm]\n", "twice", ""},
		{"credential not a list", v1 + "credentials: npm\n", "cannot unmarshal", ""},
		{"too many credentials", v1 + "credentials: [" + "a" + manyNames(20) + "]\n", "at most 20", ""},
		// Verification.
		{"empty command", v1 + "verification: [\"go test ./...\", \"\"]\n", "verification[1] is empty", ""},
		{"blank command", v1 + "verification: [\" \\u00a0\"]\n", "verification[0] is empty", ""},
		{"command with a NUL", v1 + "verification: [\"go test\\0\"]\n", "NUL", ""},
		{"too many commands", v1 + "verification: [" + long("\"true\", ", repoconfig.MaxVerificationCommands) + "\"true\"]\n", "at most 20", ""},
		{"a command too long", v1 + "verification: [" + long("y", repoconfig.MaxCommandBytes+1) + "]\n", "at most 4096", ""},
		{"a command as a mapping", v1 + "verification: [{run: make}]\n", "cannot unmarshal", ""},
		// The reviewer.
		{"reviewer as a word", v1 + "reviewer: sometimes\n", "want true, false or a mapping", ""},
		{"reviewer as a list", v1 + "reviewer: [a]\n", "want true, false or a mapping", ""},
		{"reviewer typo", v1 + "reviewer: {min_konfidence: 0.9}\n", "reviewer.min_konfidence is not a reviewer setting", ""},
		{"reviewer harness typo", v1 + "reviewer: {harness: {name: command, comand: x}}\n", "reviewer.harness.comand", ""},
		{"reviewer harness as a word", v1 + "reviewer: {harness: codex}\n", "must be a mapping", ""},
		{"reviewer harness empty", v1 + "reviewer: {harness: ~}\n", "must be a mapping", ""},
		{"threshold above 1", v1 + "reviewer: {min_confidence: 1.5}\n", "reviewer.min_confidence is 1.5", ""},
		{"negative threshold", v1 + "reviewer: {min_confidence: -0.1}\n", "reviewer.min_confidence", ""},
		{"threshold not a number", v1 + "reviewer: {min_confidence: .nan}\n", "reviewer.min_confidence", ""},
		{"reviewer floating version", v1 + "reviewer: {harness: {name: codex, version: latest}}\n", "pin an exact release", ""},
		{"reviewer harness without a name", v1 + "reviewer: {harness: {version: 1.2.3}}\n", "reviewer.harness.name is missing", ""},
		// The environment.
		{"empty environment", v1 + "environment: {}\n", "neither packages nor a setup script", ""},
		{"no packages and no setup", v1 + "environment: {packages: []}\n", "neither packages nor a setup script", ""},
		{"environment typo", v1 + "environment: {package: [git]}\n", "field package not found", ""},
		{"upper-case package", v1 + "environment: {packages: [Golang-Go]}\n", "not a Debian package name", ""},
		{"one-letter package", v1 + "environment: {packages: [g]}\n", "at least two characters", ""},
		{"package option", v1 + "environment: {packages: [\"-oAPT::Get::AllowUnauthenticated=true\"]}\n", "not a Debian package name", ""},
		{"pinned package", v1 + "environment: {packages: [\"golang-go=2:1.19~1\"]}\n", "pins a version", ""},
		{"release package", v1 + "environment: {packages: [golang-go/bookworm-backports]}\n", "pins a version", ""},
		{"duplicate package", v1 + "environment: {packages: [git, git]}\n", "\"git\" twice", ""},
		{"too many packages", v1 + "environment: {packages: [" + numbered("pkg%d", repoconfig.MaxEnvironmentPackages+1) + "]}\n", "at most 100", ""},
		{"absolute setup", v1 + "environment: {setup: /etc/passwd}\n", "not relative", ""},
		{"setup in home", v1 + "environment: {setup: ~/setup.sh}\n", "not relative", ""},
		{"setup up the tree", v1 + "environment: {setup: scripts/../../x.sh}\n", "leaves the repository's tree", ""},
		{"setup in .git", v1 + "environment: {setup: .git/hooks/x}\n", "git's own directory", ""},
		{"setup in .GIT", v1 + "environment: {setup: sub/.GIT/x}\n", "git's own directory", ""},
		{"setup pattern", v1 + "environment: {setup: \"scripts/*.sh\"}\n", "name it exactly", ""},
		{"setup directory", v1 + "environment: {setup: scripts/}\n", "ends in /", ""},
		{"setup root", v1 + "environment: {setup: ./.}\n", "repository's root", ""},
		{"setup newline", v1 + "environment: {setup: \"a\\nb\"}\n", "control character", ""},
		{"setup C1 control", v1 + "environment: {setup: \"a\\x85b\"}\n", "control character", ""},
		{"setup backslash", v1 + "environment: {setup: 'scripts\\setup.sh'}\n", "backslash", ""},
		{"setup blank end", v1 + "environment: {setup: \"setup.sh\\u00a0\"}\n", "leading or trailing blanks", ""},
		{"setup too long", v1 + "environment: {setup: " + long("a", repoconfig.MaxEnvironmentPathBytes+1) + "}\n", "at most 1024", ""},
		{"setup too long in bytes", v1 + "environment: {setup: " + long("é", repoconfig.MaxEnvironmentPathBytes/2+1) + "}\n", "at most 1024", cannotBytes},
		{"inputs without setup", v1 + "environment: {packages: [git], inputs: [go.mod]}\n", "no setup script", ""},
		{"allow without setup", v1 + "environment: {packages: [git], allow: [example.org]}\n", "no setup script", ""},
		{"cache without setup", v1 + "environment: {packages: [git], cache_paths: [~/.npm]}\n", "no setup script", ""},
		{"input up the tree", v1 + "environment: {setup: s.sh, inputs: [../secrets]}\n", "leaves the repository's tree", ""},
		{"absolute input", v1 + "environment: {setup: s.sh, inputs: [/etc/shadow]}\n", "not relative", ""},
		{"input doublestar", v1 + "environment: {setup: s.sh, inputs: [\"**/go.sum\"]}\n", "uses **", ""},
		{"input in .git", v1 + "environment: {setup: s.sh, inputs: [.git/config]}\n", "git's own directory", ""},
		{"input unclosed class", v1 + "environment: {setup: s.sh, inputs: [\"go.[sum\"]}\n", "not a valid pattern", cannotGlob},
		{"input bad range", v1 + "environment: {setup: s.sh, inputs: [\"go.[a-]\"]}\n", "not a valid pattern", cannotGlob},
		{"duplicate input", v1 + "environment: {setup: s.sh, inputs: [go.mod, go.mod]}\n", "twice", ""},
		{"duplicate input, cleaned", v1 + "environment: {setup: s.sh, inputs: [go.mod, ./go.mod]}\n", "twice", cannotNormalise},
		{"too many inputs", v1 + "environment: {setup: s.sh, inputs: [" + numbered("f%d", repoconfig.MaxEnvironmentInputs+1) + "]}\n", "at most 50", ""},
		{"allow a URL", v1 + "environment: {setup: s.sh, allow: [\"https://proxy.golang.org/x\"]}\n", "without a scheme or path", ""},
		{"allow a bad port", v1 + "environment: {setup: s.sh, allow: [\"proxy.golang.org:0\"]}\n", "port \"0\"", ""},
		{"too many hosts", v1 + "environment: {setup: s.sh, allow: [" + numbered("h%d.example", repoconfig.MaxEnvironmentAllow+1) + "]}\n", "at most 50", ""},
		{"relative cache", v1 + "environment: {setup: s.sh, cache_paths: [go/pkg/mod]}\n", "is relative", ""},
		{"cache outside home", v1 + "environment: {setup: s.sh, cache_paths: [/var/cache/apt]}\n", "outside /home/agent", ""},
		{"cache escaping home", v1 + "environment: {setup: s.sh, cache_paths: [~/../root]}\n", ". or .. component", ""},
		{"cache with a dot", v1 + "environment: {setup: s.sh, cache_paths: [~/./.npm]}\n", ". or .. component", ""},
		{"cache look-alike", v1 + "environment: {setup: s.sh, cache_paths: [/home/agentx/cache]}\n", "outside /home/agent", ""},
		{"cache of another user", v1 + "environment: {setup: s.sh, cache_paths: [~root/.cache]}\n", "another user's home", ""},
		{"whole home", v1 + "environment: {setup: s.sh, cache_paths: [\"~/\"]}\n", "whole home", ""},
		{"duplicate cache", v1 + "environment: {setup: s.sh, cache_paths: [~/.npm, ~/.npm]}\n", "twice", ""},
		{"duplicate cache, expanded", v1 + "environment: {setup: s.sh, cache_paths: [~/.npm, /home/agent/.npm]}\n", "twice", cannotNormalise},
		{"too many caches", v1 + "environment: {setup: s.sh, cache_paths: [" + numbered("~/c%d", repoconfig.MaxEnvironmentCachePaths+1) + "]}\n", "at most 20", ""},
		// Dependencies.
		{"dependency pattern", v1 + "dependencies: {repositories: [\"acme/*\"]}\n", "is a pattern", ""},
		{"dependency without owner", v1 + "dependencies: {repositories: [lib]}\n", "not owner/name", ""},
		{"dependency up the tree", v1 + "dependencies: {repositories: [acme/..]}\n", "not a repository's name", ""},
		{"dependency .git", v1 + "dependencies: {repositories: [acme/lib.git]}\n", "ends in .git", ""},
		{"dependency twice", v1 + "dependencies: {repositories: [acme/lib, acme/lib]}\n", "listed twice", ""},
		{"dependency twice, in other case", v1 + "dependencies: {repositories: [acme/lib, Acme/Lib]}\n", "listed twice", cannotCase},
		{"dependency typo", v1 + "dependencies: {repos: [acme/lib]}\n", "field repos not found", ""},
		{"dependencies as a list", v1 + "dependencies: [acme/lib]\n", "cannot unmarshal", ""},
		{"too many dependencies", v1 + "dependencies: {repositories: [" + numbered("acme/l%d", repoconfig.MaxDependencies+1) + "]}\n", "at most 20", ""},
		// The gates' actions.
		{"gate action unknown", v1 + "gates: {secrets: allow}\n", "gates.secrets \"allow\" is not block or review", ""},
		{"gate unknown", v1 + "gates: {licenses: block}\n", "field licenses not found", ""},
		{"gates not a map", v1 + "gates: [secrets]\n", "cannot unmarshal", ""},
		{"gate action empty", v1 + "gates: {links: \"\"}\n", "gates.links \"\" is not block or review", ""},
		// Protected paths.
		{"protected without an action", v1 + "protected_paths: [{paths: [deploy/**]}]\n", "action is missing", ""},
		{"protected with another action", v1 + "protected_paths: [{paths: [deploy/**], action: allow}]\n", "is not block or review", ""},
		{"protected without paths", v1 + "protected_paths: [{action: block}]\n", "paths is empty", ""},
		{"protected with no paths", v1 + "protected_paths: [{paths: [], action: block}]\n", "paths is empty", ""},
		{"protected typo", v1 + "protected_paths: [{path: [x], action: block}]\n", "field path not found", ""},
		{"protected as a list of paths", v1 + "protected_paths: [deploy/**]\n", "cannot unmarshal", ""},
		{"protected absolute", v1 + "protected_paths: [{paths: [/etc/x], action: block}]\n", "is not relative", ""},
		{"protected home", v1 + "protected_paths: [{paths: [~/x], action: block}]\n", "is not relative", ""},
		{"protected parent", v1 + "protected_paths: [{paths: [a/../../x], action: block}]\n", "leaves the repository", ""},
		{"protected directory", v1 + "protected_paths: [{paths: [deploy/], action: block}]\n", "ends in /", ""},
		{"protected ** inside a level", v1 + "protected_paths: [{paths: [\"deploy/**.tf\"], action: block}]\n", "** inside a level", ""},
		{"protected root", v1 + "protected_paths: [{paths: [.], action: block}]\n", "names the repository's root", ""},
		{"protected blank", v1 + "protected_paths: [{paths: [\" \"], action: block}]\n", "is empty", ""},
		{"protected backslash", v1 + "protected_paths: [{paths: [\"a\\\\b\"], action: block}]\n", "backslash", ""},
		{"protected bad class", v1 + "protected_paths: [{paths: [\"a/[x\"], action: block}]\n", "not a valid pattern", cannotGlob},
		{"protected too long", v1 + "protected_paths: [{paths: [" + long("é", 600) + "], action: block}]\n", "at most 1024", cannotBytes},
		{"too many protected rules", v1 + "protected_paths: [" + numbered("{paths: [d%d/**], action: review}", repoconfig.MaxProtectedRules+1) + "]\n", "at most 50 are allowed", ""},
		{"too many protected paths", v1 + "protected_paths: [{paths: [" + numbered("d%d/**", repoconfig.MaxProtectedPaths+1) + "], action: review}]\n", "at most 100 are allowed", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, perr := repoconfig.Parse([]byte(tt.doc))
			if perr == nil || !strings.Contains(perr.Error(), tt.parserErr) {
				t.Fatalf("parser: %v, want an error saying %q", perr, tt.parserErr)
			}
			serr := repoconfigtest.Validate([]byte(tt.doc))
			switch {
			case tt.cannot == "" && serr == nil:
				t.Errorf("the parser refuses it (%v), the schema accepts it: say it in schema/bumper-v1.json, or name why it cannot", perr)
			case tt.cannot != "" && serr != nil:
				t.Errorf("the schema refuses it now (%v): drop the reason %q", serr, tt.cannot)
			}
		})
	}
}

// TestSchemaStricter: what the schema flags although the parser reads it, and why: the
// schema asks for the plain form the docs use, where the parser is lenient.
func TestSchemaStricter(t *testing.T) {
	const v1 = "version: 1\n"
	tests := []struct{ name, doc, why string }{
		{"a YAML 1.1 boolean", v1 + "plan: yes\n", "the parser still reads YAML 1.1's yes/no/on/off as booleans; editors read YAML 1.2, where they are strings"},
		{"a number where text is wanted", v1 + "harness: {name: codex, version: 0.171.0, model: 5}\n", "the parser takes a scalar's text where it wants a string; the schema wants a string, as YAML types it"},
		{"a fraction where a count is wanted", v1 + "bounds: {attempts: 3.5}\n", "the parser truncates a number into a whole one (3); the schema wants an integer"},
		{"a key without a value", v1 + "bounds: {attempts: ~}\n", "the parser keeps the default; the schema wants a value, as an editor flags a key left unfinished"},
		{"a harness name left empty", v1 + "harness: {name: \"\"}\n", "the parser reads an empty string as absent; the schema wants the key left out"},
		{"an empty setup", v1 + "environment: {packages: [git], setup: \"\"}\n", "the parser reads an empty string as absent; the schema wants the key left out"},
		{"an empty list without a setup", v1 + "environment: {packages: [git], inputs: []}\n", "inputs, allow and cache_paths need setup in the schema even when empty"},
		{"blanks around a level", v1 + "approvers: {min_permission: \" write \"}\n", "the parser trims the level; the schema wants the word"},
		{"blanks around a host", v1 + "allowlist: [\" proxy.golang.org\"]\n", "the parser trims an entry; the schema wants it plain"},
		{"a stray bracket after an address", v1 + "allowlist: [\"203.0.113.7]\"]\n", "internal/hostpattern trims brackets at both ends of an address; the schema wants them paired, around an IPv6 address"},
		{"a negative zero", v1 + "bounds: {wall_time: -0s}\n", "the parser reads -0s as 0; the schema's durations have no sign but for 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := repoconfig.Parse([]byte(tt.doc)); err != nil {
				t.Fatalf("the parser refuses it now: %v; move the row to TestSchemaRefuses", err)
			}
			if err := repoconfigtest.Validate([]byte(tt.doc)); err == nil {
				t.Fatalf("the schema accepts it now; drop the row (%s)", tt.why)
			}
		})
	}
}

// numbered is n distinct flow-list items made from format.
func numbered(format string, n int) string {
	items := make([]string, n)
	for i := range items {
		items[i] = strings.ReplaceAll(format, "%d", strconv.Itoa(i))
	}
	return strings.Join(items, ", ")
}

// manyNames is ", c1, c2, …" for n distinct credential names.
func manyNames(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, ", c%d", i)
	}
	return b.String()
}
