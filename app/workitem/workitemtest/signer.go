package workitemtest

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/bumperdev/bumper/app/wire"
)

// Signer is a workitem.RunTokenSigner that keeps the claims of every run token it
// signs, so a test can check what a run was allowed, and use them as the run would.
type Signer struct {
	Now func() time.Time // nil: time.Now

	mu     sync.Mutex
	claims []wire.RunClaims
}

// RunTokenTTL is how long the run tokens live, as app/runnerapi's do.
const RunTokenTTL = 30 * time.Minute

// Sign implements workitem.RunTokenSigner.
func (s *Signer) Sign(c wire.RunClaims) (string, time.Time, error) {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c.Scope = slices.Clone(c.Scope)
	s.claims = append(s.claims, c)
	return fmt.Sprintf("run-token-%d", len(s.claims)), now().Add(RunTokenTTL), nil
}

// Claims lists the claims signed so far, oldest first.
func (s *Signer) Claims() []wire.RunClaims {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.claims)
}
