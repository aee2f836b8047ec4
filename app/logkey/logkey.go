// Package logkey names the fields of the App's log lines, once for every package of the
// App, so that one field means one thing in every line (and a log query finds them all).
package logkey

// Fields of the App's log lines.
const (
	// Audit marks an audit line of the runner endpoints: "refused" or
	// "token-exchange-granted".
	Audit        = "audit"
	Endpoint     = "endpoint"
	WorkItem     = "work_item"
	State        = "state"
	From         = "from_state"
	Attempt      = "attempt"
	RunID        = "run_id"
	User         = "user"
	Reason       = "reason"
	Stage        = "stage"
	Dispatch     = "dispatch"
	Conclusion   = "conclusion"
	Command      = "command"
	Action       = "action"
	Pull         = "pull_request"
	HeadRepo     = "head_repo"
	Repository   = "repository"
	Repositories = "repositories"
	Items        = "items"
	Untrusted    = "untrusted"
	Address      = "address"
	Grace        = "grace"
	// Tries counts the start-up rebuilds GitHub failed so far; Wait is how long serve
	// waits before the next.
	Tries = "tries"
	Wait  = "wait"
	// HookDelivery is the ID of one webhook delivery attempt (the GUID, which all
	// attempts share, is go-githubapp's github_delivery_id).
	HookDelivery     = "hook_delivery"
	Deliveries       = "deliveries"
	FailedDeliveries = "failed_deliveries"
	Redelivered      = "redelivered"
	// Paused, PauseFinish and Resumed are the kill switch's state and what turning it
	// off dispatched.
	Paused      = "paused"
	PauseFinish = "pause_finish"
	Resumed     = "resumed"
)
