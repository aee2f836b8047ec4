package attest_test

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"testing"
)

// privateOf is the Ed25519 key of a PEM GenerateKey made, for tests that sign what serve
// never would.
func privateOf(t *testing.T, pemKey []byte) ed25519.PrivateKey {
	t.Helper()
	block, _ := pem.Decode(pemKey)
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return k.(ed25519.PrivateKey)
}
