// Command releasenotes prints a release's section of CHANGELOG.md: the notes
// .github/workflows/release.yml gives GoReleaser (--release-notes) when a tag vX.Y.Z is
// pushed. A tag whose section is missing, undated or empty is an error, so a release
// cannot go out without saying what changed.
//
//	go run ./scripts/releasenotes v1.2.0 > notes.md
//	go run ./scripts/releasenotes -check   # CHANGELOG.md's headings only
package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// unreleased is the heading of the changes the next release will carry.
const unreleased = "## [Unreleased]"

var (
	// tag is a release tag, as release.yml's trigger and get-bumper.sh take them.
	tag = regexp.MustCompile(`^v([0-9]+\.[0-9]+\.[0-9]+(?:-[0-9A-Za-z.-]+)?)$`)
	// release is a released section's heading: `## [1.2.0] - 2026-12-01`.
	release = regexp.MustCompile(`^## \[([0-9]+\.[0-9]+\.[0-9]+(?:-[0-9A-Za-z.-]+)?)\] - [0-9]{4}-[0-9]{2}-[0-9]{2}$`)
	// linkDef is a Markdown link reference definition, which Keep a Changelog puts after
	// the last section (`[1.2.0]: https://…`): no section's text.
	linkDef = regexp.MustCompile(`^\[[^\]]+\]: \S+$`)
)

func main() {
	path := flag.String("changelog", "CHANGELOG.md", "the changelog to read")
	check := flag.Bool("check", false, "only check the changelog's headings")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: releasenotes [-changelog FILE] vX.Y.Z | -check")
		flag.PrintDefaults()
	}
	flag.Parse()
	if err := run(*path, *check, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "releasenotes:", err)
		os.Exit(1)
	}
}

func run(path string, check bool, args []string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("failed to read the changelog: %w", err)
	}
	if check {
		if len(args) != 0 {
			return fmt.Errorf("-check takes no tag")
		}
		return checkHeadings(string(raw))
	}
	if len(args) != 1 {
		return fmt.Errorf("give one release tag, vX.Y.Z")
	}
	out, err := notes(string(raw), args[0])
	if err != nil {
		return err
	}
	_, err = os.Stdout.WriteString(out)
	return err
}

// checkHeadings checks that every section heading (##) is Unreleased or a dated release,
// the forms notes finds, and that no version has two sections.
func checkHeadings(changelog string) error {
	seen := map[string]bool{}
	hasUnreleased := false
	for i, line := range strings.Split(changelog, "\n") {
		if !strings.HasPrefix(line, "## ") {
			continue
		}
		if line == unreleased {
			hasUnreleased = true
			continue
		}
		m := release.FindStringSubmatch(line)
		if m == nil {
			return fmt.Errorf("line %d: %q is neither %q nor a release, \"## [X.Y.Z] - YYYY-MM-DD\"", i+1, line, unreleased)
		}
		if seen[m[1]] {
			return fmt.Errorf("line %d: a second section for %s", i+1, m[1])
		}
		seen[m[1]] = true
	}
	if !hasUnreleased {
		return fmt.Errorf("no %q section: the next release's changes go there", unreleased)
	}
	return nil
}

// notes is the text of the section of the release tagged t, without its heading.
func notes(changelog, t string) (string, error) {
	m := tag.FindStringSubmatch(t)
	if m == nil {
		return "", fmt.Errorf("%q is not a release tag, vX.Y.Z", t)
	}
	if err := checkHeadings(changelog); err != nil {
		return "", err
	}
	version := m[1]
	var body []string
	in := false
	for _, line := range strings.Split(changelog, "\n") {
		if strings.HasPrefix(line, "## ") {
			if in {
				break
			}
			if rm := release.FindStringSubmatch(line); rm != nil && rm[1] == version {
				in = true
			}
			continue
		}
		if in && !linkDef.MatchString(line) {
			body = append(body, line)
		}
	}
	if !in {
		return "", fmt.Errorf("CHANGELOG.md has no section \"## [%s] - YYYY-MM-DD\": move the changes under %q into one, dated, before tagging %s", version, unreleased, t)
	}
	text := strings.TrimSpace(strings.Join(body, "\n"))
	if text == "" {
		return "", fmt.Errorf("CHANGELOG.md's section for %s is empty: say what changed", version)
	}
	return text + "\n", nil
}
