package runnerapi

import (
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/bumperdev/bumper/app/wire"
)

// RunTokenTTL is how long a run token is valid (DESIGN: 30 minutes); a run that lasts
// longer refreshes it (wire.PathRefresh) while its attempt is current.
const RunTokenTTL = 30 * time.Minute

// runTokenIssuer is the "iss" of run tokens; they are only ever checked by the App.
const runTokenIssuer = "bumper-app"

// RunTokens signs and checks run tokens (HS256 with the App's secret key).
type RunTokens struct {
	key      []byte
	previous [][]byte // verify only, during a key rotation
	now      func() time.Time
	ttl      time.Duration
}

// NewRunTokens returns a signer for the key, which must be at least 32 bytes; tokens
// signed with a previous key still verify until they expire.
func NewRunTokens(key []byte, now func() time.Time, previous ...[]byte) (*RunTokens, error) {
	for _, k := range append([][]byte{key}, previous...) {
		if len(k) < 32 {
			return nil, fmt.Errorf("a run token key is %d bytes; use at least 32 random bytes", len(k))
		}
	}
	if now == nil {
		now = time.Now
	}
	return &RunTokens{key: append([]byte(nil), key...), previous: previous, now: now, ttl: RunTokenTTL}, nil
}

// WithTTL makes tokens valid for d instead of RunTokenTTL (tests of refreshing).
func (t *RunTokens) WithTTL(d time.Duration) *RunTokens {
	if d > 0 {
		t.ttl = d
	}
	return t
}

// Sign mints a run token for the claims, valid for RunTokenTTL.
func (t *RunTokens) Sign(c wire.RunClaims) (string, time.Time, error) {
	now := t.now()
	exp := now.Add(t.ttl)
	c.RegisteredClaims = jwt.RegisteredClaims{Issuer: runTokenIssuer, Subject: c.WorkItem.String(),
		Audience: jwt.ClaimStrings{runTokenIssuer}, IssuedAt: jwt.NewNumericDate(now),
		NotBefore: jwt.NewNumericDate(now.Add(-5 * time.Second)), ExpiresAt: jwt.NewNumericDate(exp)}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(t.key)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("failed to sign the run token: %w", err)
	}
	return s, exp, nil
}

// Verify checks a run token's signature, algorithm, issuer and expiry.
func (t *RunTokens) Verify(raw string) (wire.RunClaims, error) {
	var c wire.RunClaims
	var err error
	for _, key := range append([][]byte{t.key}, t.previous...) {
		c = wire.RunClaims{}
		_, err = jwt.ParseWithClaims(raw, &c, func(*jwt.Token) (any, error) { return key, nil },
			jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}), jwt.WithIssuer(runTokenIssuer),
			jwt.WithAudience(runTokenIssuer), jwt.WithExpirationRequired(), jwt.WithTimeFunc(t.now))
		if !errors.Is(err, jwt.ErrTokenSignatureInvalid) {
			break
		}
	}
	if err != nil {
		return wire.RunClaims{}, fmt.Errorf("invalid run token: %w", err)
	}
	if c.WorkItem == (wire.WorkItem{}) || c.Attempt < 1 || c.Revision == "" {
		return wire.RunClaims{}, errors.New("invalid run token: it names no work item, attempt or revision")
	}
	return c, nil
}
