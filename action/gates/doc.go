// Package gates checks what a run would publish before the runner pushes it: the added
// lines and file names of the diff (git diff base...head), the commit messages, and the
// texts Bumper would post for the agent (its decision ledger, its replies). The agent is
// untrusted and so is what it writes; these checks are deterministic and run on the
// host, after verification and before the push.
//
// There are four gates, each finding with its gate, file, line and action:
//
//   - secrets: credentials of well-known formats (GitHub, AWS, GCP, Azure, Slack, npm,
//     Stripe, model APIs, private keys, JWTs) and generic high-entropy assignments,
//     also split across added lines, base64-encoded or split by hidden characters;
//     default block. A finding never quotes the secret: it is masked.
//   - protected_paths: changes to files the repository protects (.github/**, CODEOWNERS,
//     agent configuration, install-time hooks), by name, case, rename or symlink, and
//     lifecycle scripts added to any package.json; default review.
//   - dependencies: added or changed dependencies of go.mod, package.json,
//     package-lock.json, requirements*.txt, pyproject.toml and Cargo.toml, each looked up
//     in OSV's batch API from the host; a known advisory is review, and an OSV that
//     cannot be reached is a review finding too, never a silent pass.
//   - links: images and links in added Markdown and HTML (and in the texts Bumper posts)
//     to hosts not on the repository's allowlist; default review (an image on GitHub is
//     fetched by its proxy: a channel out).
//
// block means nothing is pushed; review means the work is pushed and the bumper/gates
// check run fails until a person approves the head. The package is pure but for the OSV
// request: the runner gives it the diff and texts and publishes its Result.
package gates
