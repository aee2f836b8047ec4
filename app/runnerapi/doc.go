// Package runnerapi is the App's HTTP API for runners, every endpoint a run calls: the
// token exchange (wire.PathTokenExchange) and the run call-backs (task, progress,
// evidence, verdict, should-stop, refresh). It verifies a runner's GitHub Actions OIDC
// token, signs and checks run tokens, and hands each request to the domain
// (app/workitem), answering its refusals 403. With serve's attestation key it answers
// the evidence report with the run's signed statement and publishes the public keys at
// attest.KeyPath.
package runnerapi
