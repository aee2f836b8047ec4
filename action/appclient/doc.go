// Package appclient is the runner's client of `bumper serve` (docs/runner-api.md, "The
// runner's client of serve"): step 1 of `bumper run` and the run's call-backs.
//
// OIDCToken fetches the job's Actions OIDC token (audience wire.OIDCAudience) from
// ACTIONS_ID_TOKEN_REQUEST_URL, as actions/toolkit's core.getIDToken does. Client.Exchange
// trades it, with the dispatch's single-use nonce, for the run's credentials: an
// installation token for the host-side proxy and a run token, which Client.WithRunToken
// gives the call-backs (Progress, Evidence, Verdict, ShouldStop, Task).
//
// Errors say what happened in terms the run can report: *Refused is serve's 403 with its
// reason (for the exchange, "exchange refused: <reason>"); *StatusError any other
// answer, a 400 naming a wire-format disagreement; *Unreachable a request that failed
// every attempt. What is repeated depends on what a repeat could do:
//
//   - reads (ShouldStop, Task) on any transport failure and any 5xx;
//   - reports (Progress, Evidence, Verdict) when the connection could not be made or
//     serve answered 5xx, not when the answer was lost after the request was sent;
//   - the exchange only when the connection could not be made: the nonce is single-use.
//
// Attempts are bounded (4 by default, about 3.5 s) and stop with the context. Answers
// are bounded in size, decoded accepting unknown fields (serve and runners are upgraded
// separately) and checked for the fields the runner needs. Plain http is accepted only
// to the loopback unless allowed explicitly, redirects are never followed, nothing is
// logged, and no token appears in an error.
//
// The package imports nothing of the App but app/wire.
package appclient
