package state

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"

	"github.com/bumperdev/bumper/internal/fsutil"
)

// KeyPEM is an RSA private key in the PKCS #1 PEM form GitHub hands out App keys in.
func KeyPEM(k *rsa.PrivateKey) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
}

// LoadOrCreateKey reads the RSA key in path, or creates one there (2048 bits, mode
// 0600) when there is none.
func LoadOrCreateKey(path string, newKey func() (*rsa.PrivateKey, error)) (*rsa.PrivateKey, error) {
	raw, err := os.ReadFile(path)
	if err == nil {
		block, _ := pem.Decode(raw)
		if block == nil {
			return nil, fmt.Errorf("failed to read %s: no PEM block; delete it to generate a new key", path)
		}
		k, err := x509.ParsePKCS1PrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("failed to parse the RSA key in %s: %w", path, err)
		}
		return k, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("failed to read %s: %w", path, err)
	}
	if newKey == nil {
		newKey = func() (*rsa.PrivateKey, error) { return rsa.GenerateKey(rand.Reader, 2048) }
	}
	k, err := newKey()
	if err != nil {
		return nil, fmt.Errorf("failed to generate an RSA key: %w", err)
	}
	if err := fsutil.WriteFileAtomic(path, KeyPEM(k), 0o600); err != nil {
		return nil, err
	}
	return k, nil
}
