package ghemu

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
)

// oidcTokenTTL is how long a minted Actions ID token is valid.
const oidcTokenTTL = 5 * time.Minute

// oidcIssuer mints GitHub Actions-style OIDC ID tokens. The issuer URL is the emulator's
// base URL; discovery and JWKS are served under /.well-known/ like
// token.actions.githubusercontent.com serves them.
type oidcIssuer struct {
	key *rsa.PrivateKey
	kid string
}

func newOIDCIssuer(k *rsa.PrivateKey) *oidcIssuer {
	sum := sha256.Sum256(k.PublicKey.N.Bytes())
	return &oidcIssuer{key: k, kid: base64.RawURLEncoding.EncodeToString(sum[:12])}
}

// OIDCClaims are the claims of an Actions ID token that Bumper checks. Zero fields are
// derived: Subject from Repository and Ref, IssuedAt from the clock.
type OIDCClaims struct {
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

// OIDCIssuerURL is the issuer ("iss") of the tokens the emulator mints.
func (e *Emulator) OIDCIssuerURL() string { return e.BaseURL() }

// MintOIDCToken signs an Actions-style ID token with the emulator's issuer key.
func (e *Emulator) MintOIDCToken(c OIDCClaims) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.mintOIDCLocked(c)
}

func (e *Emulator) mintOIDCLocked(c OIDCClaims) (string, error) {
	if c.Audience == "" || c.Repository == "" {
		return "", fmt.Errorf("failed to mint an OIDC token: audience and repository are required")
	}
	iat := c.IssuedAt
	if iat.IsZero() {
		iat = e.now()
	}
	ttl := c.TTL
	if ttl == 0 {
		ttl = oidcTokenTTL
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
		"iss": e.baseURL, "aud": c.Audience, "sub": c.Subject,
		"iat": iat.Unix(), "nbf": iat.Unix() - 5, "exp": iat.Add(ttl).Unix(),
		"jti":        newGUID(),
		"repository": c.Repository, "repository_owner": c.RepositoryOwner,
		"repository_id": c.RepositoryID, "workflow_ref": c.WorkflowRef,
		"job_workflow_ref": c.JobWorkflowRef, "ref": c.Ref, "sha": c.SHA,
		"run_id": c.RunID, "run_attempt": c.RunAttempt, "actor": c.Actor,
		"event_name": c.EventName, "runner_environment": c.RunnerEnvironment,
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	tok.Header["kid"] = e.oidc.kid
	s, err := tok.SignedString(e.oidc.key)
	if err != nil {
		return "", fmt.Errorf("failed to sign the OIDC token: %w", err)
	}
	return s, nil
}

func (e *Emulator) serveOIDC(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeError(w, errNotFound())
		return
	}
	base := e.BaseURL()
	switch r.URL.Path {
	case "/.well-known/openid-configuration":
		writeJSON(w, http.StatusOK, obj{
			"issuer": base, "jwks_uri": base + "/.well-known/jwks",
			"subject_types_supported":               []string{"public", "pairwise"},
			"response_types_supported":              []string{"id_token"},
			"id_token_signing_alg_values_supported": []string{"RS256"},
			"scopes_supported":                      []string{"openid"},
			"claims_supported": []string{"sub", "aud", "exp", "iat", "iss", "jti", "nbf", "ref", "sha",
				"repository", "repository_id", "repository_owner", "run_id", "run_attempt", "actor",
				"workflow_ref", "job_workflow_ref", "event_name", "runner_environment"},
		})
	case "/.well-known/jwks":
		pub := e.oidc.key.PublicKey
		writeJSON(w, http.StatusOK, obj{"keys": []obj{{
			"kty": "RSA", "alg": "RS256", "use": "sig", "kid": e.oidc.kid,
			"n": base64.RawURLEncoding.EncodeToString(pub.N.Bytes()),
			"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(pub.E)).Bytes()),
		}}})
	default:
		writeError(w, errNotFound())
	}
}
