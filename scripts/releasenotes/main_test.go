package main

import (
	"os"
	"strings"
	"testing"
)

const sample = `# Changelog

Intro.

## [Unreleased]

### Added

- Something new.

## [1.2.0] - 2026-12-01

### Added

- The schema.

### Fixed

- A cap.

## [1.2.0-rc.1] - 2026-11-20

- A candidate.

## [1.1.0] - 2026-10-01

## [1.0.0] - 2026-09-01

- The first.

[1.2.0]: https://github.com/bumperdev/bumper/compare/v1.1.0...v1.2.0
[1.0.0]: https://github.com/bumperdev/bumper/releases/tag/v1.0.0
`

func TestNotes(t *testing.T) {
	tests := []struct{ name, changelog, tag, want, err string }{
		{name: "a release", changelog: sample, tag: "v1.2.0", want: "### Added\n\n- The schema.\n\n### Fixed\n\n- A cap.\n"},
		{name: "a pre-release", changelog: sample, tag: "v1.2.0-rc.1", want: "- A candidate.\n"},
		{name: "the last section, before the links", changelog: sample, tag: "v1.0.0", want: "- The first.\n"},
		{name: "no section for the tag", changelog: sample, tag: "v1.3.0", err: `no section "## [1.3.0] - YYYY-MM-DD"`},
		{name: "an empty section", changelog: sample, tag: "v1.1.0", err: "section for 1.1.0 is empty"},
		{name: "not a tag", changelog: sample, tag: "1.2.0", err: "not a release tag"},
		{name: "a branch", changelog: sample, tag: "main", err: "not a release tag"},
		{name: "Unreleased is no release", changelog: sample, tag: "vUnreleased", err: "not a release tag"},
		{name: "an undated section", changelog: strings.Replace(sample, "## [1.2.0] - 2026-12-01", "## [1.2.0]", 1), tag: "v1.2.0", err: "neither"},
		{name: "two sections for one version", changelog: sample + "\n## [1.0.0] - 2026-09-02\n\n- Again.\n", tag: "v1.0.0", err: "a second section for 1.0.0"},
		{name: "no Unreleased", changelog: strings.Replace(sample, "## [Unreleased]", "## Unreleased", 1), tag: "v1.2.0", err: "neither"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := notes(tt.changelog, tt.tag)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("notes %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// TestChangelog: the repository's CHANGELOG.md has the headings notes reads, and an
// Unreleased section with something in it until the release that moves it.
func TestChangelog(t *testing.T) {
	raw, err := os.ReadFile("../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	if err := checkHeadings(string(raw)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "\n"+unreleased+"\n") {
		t.Fatalf("CHANGELOG.md has no %q line", unreleased)
	}
}
