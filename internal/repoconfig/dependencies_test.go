package repoconfig

import (
	"slices"
	"strings"
	"testing"
)

// TestDependencies: the list is read exactly as written, and every way of naming more
// than the repositories meant (a pattern, a path trick, a duplicate in other case, too
// many) is refused with a reason naming the entry.
func TestDependencies(t *testing.T) {
	many := make([]string, MaxDependencies+1)
	for i := range many {
		many[i] = "acme/lib" + strings.Repeat("x", i)
	}
	tests := []struct {
		name, list, wantErr string
	}{
		{"two repositories", "[acme/lib, acme/.github]", ""},
		{"none", "[]", ""},
		{"the most", "[" + strings.Join(many[:MaxDependencies], ", ") + "]", ""},
		{"too many", "[" + strings.Join(many, ", ") + "]", "at most 20"},
		{"owner wildcard", "[\"acme/*\"]", "is a pattern"},
		{"class", "[\"acme/lib[12]\"]", "is a pattern"},
		{"question mark", "[\"acme/li?\"]", "is a pattern"},
		{"no owner", "[lib]", "not owner/name"},
		{"three segments", "[acme/lib/sub]", "not owner/name"},
		{"dot dot", "[acme/..]", "not a repository's name"},
		{"dot", "[acme/.]", "not a repository's name"},
		{"owner dot dot", "[../lib]", "not owner/name"},
		{"percent", "[acme/lib%2fx]", "not owner/name"},
		{"url", "[\"https://github.com/acme/lib\"]", "not owner/name"},
		{"dot git", "[acme/lib.GIT]", "ends in .git"},
		{"leading hyphen owner", "[-acme/lib]", "not owner/name"},
		{"blank", "[\" acme/lib\"]", "not owner/name"},
		{"duplicate in other case", "[acme/lib, ACME/Lib]", "listed twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse([]byte("version: 1\ndependencies: {repositories: " + tt.list + "}\n"))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("parsed %v, err %v; want an error saying %q", p.Dependencies, err, tt.wantErr)
			}
		})
	}
}

// TestDependenciesOf: a run's own repository and another owner's are refused for the
// run (the parser cannot know whose file it reads); the rest come back as written.
func TestDependenciesOf(t *testing.T) {
	tests := []struct {
		name    string
		list    []string
		wantErr string
	}{
		{"same owner", []string{"acme/lib", "acme/conf"}, ""},
		{"owner in other case", []string{"ACME/lib"}, ""},
		{"own repository", []string{"acme/lib", "acme/app"}, "the run's own repository"},
		{"own repository in other case", []string{"Acme/APP"}, "the run's own repository"},
		{"another owner", []string{"evil/lib"}, "not acme's"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Default()
			p.Dependencies.Repositories = tt.list
			got, err := p.DependenciesOf("acme/app")
			switch {
			case tt.wantErr == "" && (err != nil || !slices.Equal(got, tt.list)):
				t.Fatalf("got %v, %v; want %v", got, err, tt.list)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("got %v, %v; want an error saying %q", got, err, tt.wantErr)
			}
		})
	}
}
