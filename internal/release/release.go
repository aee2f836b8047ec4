// Package release is the one rule of what pins a release: the agent CLIs'
// `harness.version` in .github/bumper.yml, the harness the runner runs and the one the
// image builder installs are all held to it, so a range, a tag or `latest` cannot slip
// past one of them and let a CLI's stream format change under an approved policy.
package release

import "regexp"

// exact is one release as npm names it: MAJOR.MINOR.PATCH with an optional
// pre-release and build suffix (semver 2.0's shape, without a leading v).
var exact = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$`)

// IsExact says v names exactly one release.
func IsExact(v string) bool { return exact.MatchString(v) }
