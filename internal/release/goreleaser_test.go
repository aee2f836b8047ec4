package release

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/bumperdev/bumper/internal/jsondoc"
)

// The GoReleaser whose JSON Schema testdata holds (`goreleaser jsonschema` of that
// release); the Makefile's GORELEASER_VERSION and release.yml's must name it too.
const goreleaserVersion = "v2.17.0"

// goreleaserSchema compiles the schema of goreleaserVersion's configuration.
func goreleaserSchema(t *testing.T) (*jsondoc.Schemas, string) {
	t.Helper()
	name := "goreleaser-" + goreleaserVersion + ".schema.json"
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("%v: regenerate it with `make release-tools && bin/tools/goreleaser jsonschema > internal/release/testdata/%s`", err, name)
	}
	const base = "https://bumper.invalid/"
	s, err := jsondoc.Compile(base, map[string][]byte{name: raw})
	if err != nil {
		t.Fatal(err)
	}
	return s, base + name
}

// checkGoreleaser reads a .goreleaser.yaml and validates it against the schema: every
// key one GoReleaser knows, every value of its type. YAML becomes JSON first, so what
// the schema sees is what GoReleaser decodes.
func checkGoreleaser(s *jsondoc.Schemas, url string, config []byte) error {
	var doc any
	if err := yaml.Unmarshal(config, &doc); err != nil {
		return fmt.Errorf("not YAML: %w", err)
	}
	js, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("not JSON-shaped (a key that is not a string?): %w", err)
	}
	return s.Validate(url, js)
}

// TestGoreleaserConfig holds .goreleaser.yaml to the configuration GoReleaser
// goreleaserVersion reads, so that a misspelt or moved key fails here and not at the next
// tag. It takes seconds; `goreleaser check` (make release-check) took CI four minutes to
// build, and release.yml runs it before it releases.
func TestGoreleaserConfig(t *testing.T) {
	t.Parallel()
	s, url := goreleaserSchema(t)
	config, err := os.ReadFile(filepath.Join("..", "..", ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := checkGoreleaser(s, url, config); err != nil {
		t.Fatalf(".goreleaser.yaml is not GoReleaser %s's configuration: %v", goreleaserVersion, err)
	}
	// What the check must refuse, as a careless edit would write it.
	for _, tc := range []struct{ name, from, to string }{
		{"a misspelt top-level key", "\nbuilds:\n", "\nbuidls:\n"},
		{"a misspelt nested key", "    binary: bumper\n", "    binray: bumper\n"},
		{"a list where a string goes", "  algorithm: sha256\n", "  algorithm: [sha256]\n"},
		{"a string where a list goes", "    goos:\n      - linux\n", "    goos: linux\n"},
		{"a version other than 2", "\nversion: 2\n", "\nversion: 1\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(string(config), tc.from) {
				t.Fatalf(".goreleaser.yaml no longer has %q; change the case", tc.from)
			}
			if err := checkGoreleaser(s, url, []byte(strings.Replace(string(config), tc.from, tc.to, 1))); err == nil {
				t.Fatalf("the check took .goreleaser.yaml with %q for %q", tc.to, tc.from)
			}
		})
	}
}

// TestGoreleaserVersionsAgree: the schema's release is the one the Makefile installs and
// the release workflow releases with.
func TestGoreleaserVersionsAgree(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ file, pattern string }{
		{"Makefile", `(?m)^GORELEASER_VERSION \?= (\S+)$`},
		{filepath.Join(".github", "workflows", "release.yml"), `(?m)^\s+version: (v\S+)$`},
	} {
		raw, err := os.ReadFile(filepath.Join("..", "..", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(tc.pattern).FindAllSubmatch(raw, -1)
		if len(m) == 0 {
			t.Fatalf("%s names no GoReleaser version (%s)", tc.file, tc.pattern)
		}
		for _, v := range m {
			if string(v[1]) != goreleaserVersion {
				t.Errorf("%s names GoReleaser %s; the schema in testdata is %s's", tc.file, v[1], goreleaserVersion)
			}
		}
	}
}
