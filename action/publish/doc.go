// Package publish turns a run's verified result into what a maintainer reviews: the
// work branch pushed through the firewall's git gateway, the pull request, the
// bumper/evidence check run, and, when the run ends, the revocation of its token.
//
// Rewrite, before Push, makes the agent's verified commits the App's on the host: the
// same trees, the App as author and committer, messages that close, mention and
// reference nothing (internal/ghref), and moves refs/bumper/result to the rewrite.
// Push runs git on the host with the workspace's locked-down environment
// (workspace.Workspace.Git) and sends refs/bumper/result, which workspace.Result left
// in the host's repository, to refs/heads/bumper/<issue>-<attempt> through the gateway
// (plain HTTP, no credential: the gateway adds the token and enforces the push policy).
// Publish, which the runner uses instead of Push, creates the rewritten commits on
// GitHub through its Git Data API with the runner's client, so GitHub signs them as the
// App's, checking each tree against the host's; PublishOrPush falls back to Push for a
// change past the API's bounds unless a branch requires signed commits.
// OpenPullRequest and EvidenceCheckRun use the runner's own GitHub client with the
// run's installation token, straight to the GitHub API, never through the VM's gateway.
// Revoke deletes the token. Nothing here logs a token or puts one in an error.
package publish
