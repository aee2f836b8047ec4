package ledger

import (
	"bytes"
	"testing"
)

// TestDispatchNonce: a dispatch's nonce is the same for every replica that holds the
// key (a re-drive adopts the run a dead replica dispatched), differs by dispatch, and
// cannot be computed with another key.
func TestDispatchNonce(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	a, err := NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewSealer(key)
	other, _ := NewSealer(bytes.Repeat([]byte{8}, 32))
	const d = "3-abc-1"
	switch {
	case a.DispatchNonce(d) != b.DispatchNonce(d):
		t.Error("two replicas with one key derive different nonces for one dispatch")
	case a.DispatchNonce(d) == a.DispatchNonce("3-abc-2"):
		t.Error("two attempts share a nonce")
	case a.DispatchNonce(d) == other.DispatchNonce(d):
		t.Error("another key derives the same nonce")
	case len(a.DispatchNonce(d)) != 64:
		t.Errorf("nonce %q: want 32 bytes in hex", a.DispatchNonce(d))
	}
}
