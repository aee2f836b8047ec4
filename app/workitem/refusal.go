package workitem

import "fmt"

// Identity is what a runner's verified Actions OIDC token says about the run presenting
// it; the HTTP layer (app/runnerapi) verifies the token and fills it in.
type Identity struct {
	Repository  string
	WorkflowRef string // owner/repo/.github/workflows/file.yml@refs/heads/main
	Ref         string
	SHA         string
	RunID       string
	EventName   string
	Actor       string
}

// Refusal refuses a runner's request for a reason the runner is told; the HTTP layer
// answers it 403 and audits it. Any other error is the App's own failure.
type Refusal struct{ Reason string }

func (r *Refusal) Error() string { return "refused: " + r.Reason }

// refuse builds a Refusal.
func refuse(format string, args ...any) error {
	return &Refusal{Reason: fmt.Sprintf(format, args...)}
}
