// Package fidelity checks that Bumper's GitHub emulator behaves like GitHub, against
// GitHub's own published descriptions (embedded in the package, see spec/SOURCES.md):
//
//   - OpenAPI wraps an http.Handler and validates every request it serves and every
//     response it returns against GitHub's REST API description (OpenAPI 3.0.3), with
//     kin-openapi: the route must exist, parameters and bodies must match their schemas,
//     the status must be one GitHub declares for the operation, formats (date-time, uri,
//     uri-template, email) are checked. Each difference is reported as a Mismatch.
//   - Webhooks validates a webhook delivery body against the octokit webhook schema
//     (JSON Schema draft-07), for the delivery's event and action.
//
// Both values are safe for concurrent use; load each once and share it.
package fidelity
