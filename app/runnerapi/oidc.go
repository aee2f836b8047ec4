package runnerapi

import (
	"context"
	"errors"
	"fmt"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/app/workitem"
)

// claims are the Actions OIDC token's claims the App reads.
type claims struct {
	Repository  string `json:"repository"`
	WorkflowRef string `json:"workflow_ref"` // owner/repo/.github/workflows/file.yml@refs/heads/main
	Ref         string `json:"ref"`
	SHA         string `json:"sha"`
	RunID       string `json:"run_id"`
	EventName   string `json:"event_name"`
	Actor       string `json:"actor"`
}

// Verifier checks Actions OIDC tokens against the issuer's published keys.
type Verifier struct{ v *oidc.IDTokenVerifier }

// NewVerifier discovers the issuer (its /.well-known/openid-configuration) and returns
// a verifier for tokens with the audience "bumper". Discovery and key fetches use
// http.DefaultClient.
func NewVerifier(ctx context.Context, issuer string) (*Verifier, error) {
	p, err := oidc.NewProvider(ctx, issuer)
	if err != nil {
		return nil, fmt.Errorf("failed to discover OIDC issuer %s: %w", issuer, err)
	}
	return &Verifier{v: p.Verifier(&oidc.Config{ClientID: wire.OIDCAudience})}, nil
}

// Verify checks the token's signature, issuer, audience and expiry, and returns the
// claims Bumper checks next.
func (v *Verifier) Verify(ctx context.Context, raw string) (workitem.Identity, error) {
	if raw == "" {
		return workitem.Identity{}, errors.New("no OIDC token was presented")
	}
	tok, err := v.v.Verify(ctx, raw)
	if err != nil {
		return workitem.Identity{}, fmt.Errorf("failed to verify the OIDC token: %w", err)
	}
	var id claims
	if err := tok.Claims(&id); err != nil {
		return workitem.Identity{}, fmt.Errorf("failed to read the OIDC token's claims: %w", err)
	}
	if id.Repository == "" || id.WorkflowRef == "" || id.RunID == "" {
		return workitem.Identity{}, errors.New("the OIDC token lacks repository, workflow_ref or run_id claims")
	}
	return workitem.Identity(id), nil
}
