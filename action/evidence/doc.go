// Package evidence is the evidence bundle of one run: what the run did, in a form a
// reviewer can check before merging its pull request. It is the bundle's model: its
// types, its canonical JSON, its schema, its digest and its redaction. Its Markdown is
// evidencemd's, its risk note risk's.
//
// # What it holds
//
// The runner (bumper run) fills an Evidence as the run goes: the work item and the
// Actions run that executed it, the approvals and revision it was authorized for, base
// and head commits, the sandbox (VMM, accelerator and why, image digest, vCPUs,
// memory), each phase with its times and outcome, the commands run with their exit
// codes, the tests of each verification round (counts, failures with output excerpts),
// the diff stat, the firewall's egress summary (SummarizeEgress, from its audit
// entries), the cost (metered by the firewall, and what the harness says it spent),
// wall time, the agent's decision ledger (NewLedger, from /out/decisions.json, least
// confident first), a risk note (risk.Note: changed files that govern the checks, such
// as tests, workflows, CODEOWNERS and .github/bumper.yml), the audit chain head and
// whether the run's token was revoked.
//
// It is written as evidence.json (Marshal: canonical JSON, validated against the
// versioned JSON Schema in schema/evidence-v1.json, uploaded as an artifact, its Digest
// reported to the App) and, by evidencemd, as Markdown for the pull request comment
// and the check run summary.
//
// # Untrusted in, safe out
//
// Much of a bundle comes from inside the VM, which is hostile: test names and output,
// the decision ledger, command lines, the names the VM asked the firewall for. The
// package takes them as plain data and assumes nothing of them:
//
//   - NewLedger reads the agent's file strictly: bounded size, valid UTF-8, one JSON
//     object, no duplicate or unknown keys, every field of its type and range
//     (schema/decisions-v1.json); an invalid file's error names the field.
//   - Validate checks a bundle against its schema (every hash a full SHA-256 written
//     "sha256:" and 64 hex digits, every list and string bounded) and refuses a bundle
//     in which any string looks like a secret (GitHub tokens, Anthropic and OpenAI
//     keys, bearer tokens, PEM private keys), naming its JSON path but never the value.
//     Redact replaces such strings, object keys included, with "[redacted <kind>]";
//     the runner redacts every bundle before it validates, publishes or writes it.
//
// The package imports nothing of the App (but its wire types), the firewall or the
// sandbox: plain data in, plain data out.
package evidence
