package repoconfig

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestEnvironment: the environment section is strict; every refusal says what to write
// instead, and what parses comes back normalised.
func TestEnvironment(t *testing.T) {
	list := func(n int, f string) string {
		var s []string
		for i := range n {
			s = append(s, fmt.Sprintf(f, i))
		}
		return "[" + strings.Join(s, ", ") + "]"
	}
	tests := []struct {
		name, env string
		want      *Environment // nil: an error containing every wantErr
		wantErr   []string
	}{
		{"go", `{packages: [golang-go, ca-certificates], setup: ./scripts/env-setup.sh, inputs: [go.mod, go.sum, "cmd/*/go.sum"],
			allow: [proxy.golang.org, Sum.Golang.Org., "*.example.org:443,8443"], cache_paths: [~/go/pkg/mod, /home/agent/.cache//go-build/]}`,
			&Environment{Packages: []string{"golang-go", "ca-certificates"}, Setup: "scripts/env-setup.sh", Inputs: []string{"go.mod", "go.sum", "cmd/*/go.sum"},
				Allow: []string{"proxy.golang.org", "sum.golang.org", "*.example.org:443,8443"}, CachePaths: []string{"/home/agent/go/pkg/mod", "/home/agent/.cache/go-build"}}, nil},
		{"packages alone", `{packages: [nodejs, npm, g++, libstdc++6, python3.11]}`, &Environment{Packages: []string{"nodejs", "npm", "g++", "libstdc++6", "python3.11"}}, nil},
		{"setup without inputs", `{setup: setup.sh}`, &Environment{Setup: "setup.sh"}, nil},
		{"empty", `{}`, nil, []string{"neither packages nor a setup script"}},
		{"typo", `{package: [git]}`, nil, []string{"field package not found"}},
		{"upper-case package", `{packages: [Golang-Go]}`, nil, []string{`packages[0] "Golang-Go" is not a Debian package name`, "lower-case letters"}},
		{"one-letter package", `{packages: [g]}`, nil, []string{"at least two characters"}},
		{"package with a blank", `{packages: ["golang-go curl"]}`, nil, []string{"not a Debian package name"}},
		{"package option", `{packages: ["-oAPT::Get::AllowUnauthenticated=true"]}`, nil, []string{"not a Debian package name"}},
		{"pinned package", `{packages: ["golang-go=2:1.19~1"]}`, nil, []string{`write the package name alone ("golang-go")`}},
		{"release package", `{packages: ["golang-go/bookworm-backports"]}`, nil, []string{"pins a version, architecture or release"}},
		{"duplicate package", `{packages: [git, git]}`, nil, []string{`"git" twice`}},
		{"too many packages", `{packages: ` + list(MaxEnvironmentPackages+1, "pkg%d") + `}`, nil, []string{"at most 100"}},
		{"absolute setup", `{setup: /etc/passwd}`, nil, []string{"not relative", `"etc/passwd"`}},
		{"setup up the tree", `{setup: scripts/../../x.sh}`, nil, []string{"leaves the repository's tree"}},
		{"setup in .git", `{setup: .git/hooks/x}`, nil, []string{"git's own directory"}},
		{"setup in .GIT", `{setup: sub/.GIT/x}`, nil, []string{"git's own directory"}},
		{"setup pattern", `{setup: "scripts/*.sh"}`, nil, []string{"name it exactly"}},
		{"setup dir", `{setup: scripts/}`, nil, []string{"ends in /"}},
		{"setup root", `{setup: ./.}`, nil, []string{"repository's root"}},
		{"setup home", `{setup: ~/setup.sh}`, nil, []string{"not relative"}},
		{"setup newline", `{setup: "a\nb"}`, nil, []string{"control character"}},
		{"setup backslash", `{setup: 'scripts\setup.sh'}`, nil, []string{"backslash"}},
		{"setup too long", `{setup: ` + strings.Repeat("a", MaxEnvironmentPathBytes+1) + `}`, nil, []string{"at most 1024"}},
		{"inputs without setup", `{packages: [git], inputs: [go.mod]}`, nil, []string{"inputs is set but there is no setup script"}},
		{"allow without setup", `{packages: [git], allow: [example.org]}`, nil, []string{"allow is set but there is no setup script"}},
		{"cache without setup", `{packages: [git], cache_paths: [~/.npm]}`, nil, []string{"cache_paths is set but there is no setup script"}},
		{"input up the tree", `{setup: s.sh, inputs: [../secrets]}`, nil, []string{"inputs[0]", "leaves the repository's tree"}},
		{"absolute input", `{setup: s.sh, inputs: [/etc/shadow]}`, nil, []string{"not relative"}},
		{"input doublestar", `{setup: s.sh, inputs: ["**/go.sum"]}`, nil, []string{"uses **, which is not supported"}},
		{"input bad pattern", `{setup: s.sh, inputs: ["go.[sum"]}`, nil, []string{"not a valid pattern"}},
		{"duplicate input", `{setup: s.sh, inputs: [go.mod, ./go.mod]}`, nil, []string{`"go.mod" twice`}},
		{"too many inputs", `{setup: s.sh, inputs: ` + list(MaxEnvironmentInputs+1, "f%d") + `}`, nil, []string{"at most 50"}},
		{"scheme", `{setup: s.sh, allow: ["https://proxy.golang.org/x"]}`, nil, []string{"allow[0]", `without a scheme or path ("proxy.golang.org")`}},
		{"bad host", `{setup: s.sh, allow: ["proxy golang org"]}`, nil, []string{"allow[0]", "write a host name"}},
		{"bad port", `{setup: s.sh, allow: ["proxy.golang.org:0"]}`, nil, []string{"port \"0\""}},
		{"too many hosts", `{setup: s.sh, allow: ` + list(MaxEnvironmentAllow+1, "h%d.example") + `}`, nil, []string{"at most 50"}},
		{"relative cache", `{setup: s.sh, cache_paths: [go/pkg/mod]}`, nil, []string{"is relative; write ~/go/pkg/mod"}},
		{"cache outside home", `{setup: s.sh, cache_paths: [/var/cache/apt]}`, nil, []string{"outside /home/agent"}},
		{"cache escaping home", `{setup: s.sh, cache_paths: [~/../root]}`, nil, []string{". or .. component"}},
		{"cache look-alike", `{setup: s.sh, cache_paths: [/home/agentx/cache]}`, nil, []string{"outside /home/agent"}},
		{"cache other user", `{setup: s.sh, cache_paths: [~root/.cache]}`, nil, []string{"another user's home"}},
		{"whole home", `{setup: s.sh, cache_paths: ["~"]}`, nil, []string{"whole home"}},
		{"duplicate cache", `{setup: s.sh, cache_paths: [~/.npm, /home/agent/.npm]}`, nil, []string{"twice"}},
		{"too many caches", `{setup: s.sh, cache_paths: ` + list(MaxEnvironmentCachePaths+1, "~/c%d") + `}`, nil, []string{"at most 20"}},
		{"every problem at once", `{packages: [X], setup: /s.sh, cache_paths: [/tmp]}`, nil, []string{"packages[0]", "setup \"/s.sh\"", "cache_paths[0]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse([]byte("version: 1\nenvironment: " + tt.env + "\n"))
			if tt.want == nil {
				for _, w := range tt.wantErr {
					if err == nil || !strings.Contains(err.Error(), w) {
						t.Errorf("error %v, want %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := p.Environment
			if got == nil || !slices.Equal(got.Packages, tt.want.Packages) || got.Setup != tt.want.Setup || !slices.Equal(got.Inputs, tt.want.Inputs) ||
				!slices.Equal(got.Allow, tt.want.Allow) || !slices.Equal(got.CachePaths, tt.want.CachePaths) {
				t.Fatalf("environment %+v, want %+v", got, tt.want)
			}
		})
	}
	if p, err := Parse([]byte("version: 1\nenvironment:\n")); err != nil || p.Environment != nil {
		t.Errorf("a null environment: %+v, %v; want none", p.Environment, err)
	}
}

// TestAllowlistEntries: the run's allowlist is held to the firewall's syntax when the
// file is read, not only when the firewall starts.
func TestAllowlistEntries(t *testing.T) {
	if _, err := Parse([]byte("version: 1\nallowlist: [proxy.golang.org, \"*.npmjs.org\", \"203.0.113.7:8443\"]\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := Parse([]byte("version: 1\nallowlist: [\"proxy.golang.org/\"]\n")); err == nil || !strings.Contains(err.Error(), "allowlist[0]") {
		t.Fatalf("error %v", err)
	}
}
