// Package oidc is the emulator's GitHub Actions OIDC issuer: it mints Actions-style ID
// tokens and serves discovery and JWKS under /.well-known/, as
// token.actions.githubusercontent.com does. The issuer URL is the emulator's base URL,
// which callers pass in. An Issuer holds only its key and never changes: it needs no
// lock.
package oidc

import (
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/bumperdev/bumper/ghemu/apierr"
	"github.com/bumperdev/bumper/ghemu/state"
)

// TokenTTL is how long a minted Actions ID token is valid.
const TokenTTL = 5 * time.Minute

// Issuer signs ID tokens with one RSA key.
type Issuer struct {
	key *rsa.PrivateKey
	kid string
	now func() time.Time
}

// New is an issuer signing with k; now is its clock.
func New(k *rsa.PrivateKey, now func() time.Time) *Issuer {
	sum := sha256.Sum256(k.PublicKey.N.Bytes())
	return &Issuer{key: k, kid: base64.RawURLEncoding.EncodeToString(sum[:12]), now: now}
}

// Claims are the claims of an Actions ID token that Bumper checks. Zero fields are
// derived: Subject from Repository and Ref, IssuedAt from the clock.
type Claims struct {
	Audience          string
	Repository        string // "owner/repo"
	RepositoryOwner   string
	RepositoryID      string
	WorkflowRef       string // "owner/repo/.github/workflows/bumper-run.yml@refs/heads/main"
	JobWorkflowRef    string
	Ref               string // "refs/heads/main"
	SHA               string
	RunID             string
	RunAttempt        string
	Actor             string
	EventName         string
	RunnerEnvironment string
	Subject           string
	IssuedAt          time.Time
	TTL               time.Duration
}

// Mint signs an Actions-style ID token issued by iss (the emulator's base URL).
func (is *Issuer) Mint(iss string, c Claims) (string, error) {
	if c.Audience == "" || c.Repository == "" {
		return "", fmt.Errorf("failed to mint an OIDC token: audience and repository are required")
	}
	iat := c.IssuedAt
	if iat.IsZero() {
		iat = is.now()
	}
	ttl := c.TTL
	if ttl == 0 {
		ttl = TokenTTL
	}
	owner, _, _ := strings.Cut(c.Repository, "/")
	if c.RepositoryOwner == "" {
		c.RepositoryOwner = owner
	}
	if c.Subject == "" {
		c.Subject = "repo:" + c.Repository + ":ref:" + c.Ref
	}
	if c.JobWorkflowRef == "" {
		c.JobWorkflowRef = c.WorkflowRef
	}
	if c.EventName == "" {
		c.EventName = "workflow_dispatch"
	}
	if c.RunnerEnvironment == "" {
		c.RunnerEnvironment = "self-hosted"
	}
	if c.RunAttempt == "" {
		c.RunAttempt = "1"
	}
	claims := jwt.MapClaims{
		"iss": iss, "aud": c.Audience, "sub": c.Subject,
		"iat": iat.Unix(), "nbf": iat.Unix() - 5, "exp": iat.Add(ttl).Unix(),
		"jti":        state.NewGUID(),
		"repository": c.Repository, "repository_owner": c.RepositoryOwner,
		"repository_id": c.RepositoryID, "workflow_ref": c.WorkflowRef,
		"job_workflow_ref": c.JobWorkflowRef, "ref": c.Ref, "sha": c.SHA,
		"run_id": c.RunID, "run_attempt": c.RunAttempt, "actor": c.Actor,
		"event_name": c.EventName, "runner_environment": c.RunnerEnvironment,
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	tok.Header["kid"] = is.kid
	s, err := tok.SignedString(is.key)
	if err != nil {
		return "", fmt.Errorf("failed to sign the OIDC token: %w", err)
	}
	return s, nil
}

// Serve answers the discovery document and the JWKS (r's path under /.well-known/) for
// the issuer iss.
func (is *Issuer) Serve(w http.ResponseWriter, r *http.Request, iss string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		apierr.Write(w, apierr.NotFound())
		return
	}
	switch r.URL.Path {
	case "/.well-known/openid-configuration":
		apierr.WriteJSON(w, http.StatusOK, map[string]any{
			"issuer": iss, "jwks_uri": iss + "/.well-known/jwks",
			"subject_types_supported":               []string{"public", "pairwise"},
			"response_types_supported":              []string{"id_token"},
			"id_token_signing_alg_values_supported": []string{"RS256"},
			"scopes_supported":                      []string{"openid"},
			"claims_supported": []string{"sub", "aud", "exp", "iat", "iss", "jti", "nbf", "ref", "sha",
				"repository", "repository_id", "repository_owner", "run_id", "run_attempt", "actor",
				"workflow_ref", "job_workflow_ref", "event_name", "runner_environment"},
		})
	case "/.well-known/jwks":
		pub := is.key.PublicKey
		apierr.WriteJSON(w, http.StatusOK, map[string]any{"keys": []map[string]any{{
			"kty": "RSA", "alg": "RS256", "use": "sig", "kid": is.kid,
			"n": base64.RawURLEncoding.EncodeToString(pub.N.Bytes()),
			"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(pub.E)).Bytes()),
		}}})
	default:
		apierr.Write(w, apierr.NotFound())
	}
}
