package runnerapi

import (
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/bumperdev/bumper/app/wire"
)

func TestRunTokens(t *testing.T) {
	key := []byte(strings.Repeat("k", 32))
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	clock := now
	rt, err := NewRunTokens(key, func() time.Time { return clock })
	if err != nil {
		t.Fatal(err)
	}
	claims := wire.RunClaims{WorkItem: wire.WorkItem{Repository: "acme/widgets", Issue: 1}, Revision: "sha256:ab", Attempt: 1, Stage: "implement"}
	tok, exp, err := rt.Sign(claims)
	if err != nil {
		t.Fatal(err)
	}
	if exp.Sub(now) != RunTokenTTL {
		t.Fatalf("expires after %v", exp.Sub(now))
	}
	other, _ := NewRunTokens([]byte(strings.Repeat("x", 32)), func() time.Time { return clock })
	// After a rotation the old key still verifies, and a token of the new key does not
	// verify under the old one alone.
	rotated, _ := NewRunTokens([]byte(strings.Repeat("n", 32)), func() time.Time { return clock }, key)
	newTok, _, _ := rotated.Sign(claims)
	none, _ := jwt.NewWithClaims(jwt.SigningMethodNone, claims).SignedString(jwt.UnsafeAllowNoneSignatureType)
	empty, _, _ := rt.Sign(wire.RunClaims{})
	tests := []struct {
		name  string
		tok   string
		at    time.Time
		check *RunTokens
		ok    bool
	}{
		{"valid", tok, now.Add(29 * time.Minute), rt, true},
		{"expired", tok, now.Add(31 * time.Minute), rt, false},
		{"other key", tok, now, other, false},
		{"previous key during a rotation", tok, now, rotated, true},
		{"new key under the old one", newTok, now, rt, false},
		{"new key under the new one", newTok, now, rotated, true},
		{"expired under a previous key", tok, now.Add(31 * time.Minute), rotated, false},
		{"alg none", none, now, rt, false},
		{"names nothing", empty, now, rt, false},
		{"garbage", "abc.def.ghi", now, rt, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock = tt.at
			c, err := tt.check.Verify(tt.tok)
			if tt.ok != (err == nil) {
				t.Fatalf("Verify error %v, want ok=%v", err, tt.ok)
			}
			if tt.ok && (c.WorkItem != claims.WorkItem || c.Attempt != 1 || c.Revision != claims.Revision) {
				t.Fatalf("claims %+v", c)
			}
		})
	}
	if _, err := NewRunTokens([]byte("short"), nil); err == nil {
		t.Fatal("a short key was accepted")
	}
}
