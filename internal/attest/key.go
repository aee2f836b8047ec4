package attest

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"

	"github.com/bumperdev/bumper/internal/revision"
)

// The attestation key is Ed25519: one parameter set (no curve or hash to agree on),
// deterministic signatures (no per-signature randomness whose failure leaks the key, as
// ECDSA's nonce does), signatures that cannot be altered into other valid ones (Go's
// verification refuses a non-canonical S), and a key crypto/x509 reads and writes as
// PKCS#8 and PKIX PEM, as openssl does. Its type also keeps it apart from the App's
// private key, which GitHub makes RSA: one cannot be configured for the other.

// PEM block types of the key files.
const (
	privateKeyBlock = "PRIVATE KEY" // PKCS#8
	publicKeyBlock  = "PUBLIC KEY"  // PKIX SubjectPublicKeyInfo
)

// maxKeys bounds the public keys one PEM document may hold (the signing key and the
// ones rotated out).
const maxKeys = 32

// GenerateKey makes a new attestation key: an Ed25519 private key as PKCS#8 PEM, the form
// NewSigner reads and `bumper setup` writes.
func GenerateKey() ([]byte, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("failed to generate the attestation key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("failed to encode the attestation key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: privateKeyBlock, Bytes: der}), nil
}

// PublicKey is an attestation key that verifies: Ed25519, named by its key id.
type PublicKey struct {
	key ed25519.PublicKey
	id  string
	der []byte
}

func newPublicKey(key ed25519.PublicKey) (PublicKey, error) {
	der, err := x509.MarshalPKIXPublicKey(key)
	if err != nil {
		return PublicKey{}, fmt.Errorf("failed to encode the public key: %w", err)
	}
	return PublicKey{key: key, id: revision.Of(der), der: der}, nil
}

// ID is the key id: "sha256:" and the hex SHA-256 of the public key's DER (PKIX
// SubjectPublicKeyInfo), the keyid of the envelope's signature. `openssl pkey -pubin -in
// KEY.pem -outform DER | sha256sum` computes the same digits.
func (k PublicKey) ID() string { return k.id }

// PEM is the public key as a PKIX PEM block.
func (k PublicKey) PEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: publicKeyBlock, Bytes: k.der})
}

// EncodePublicKeys writes keys as one PEM document, each block after a comment line
// naming its key id (text outside the blocks, which PEM readers skip).
func EncodePublicKeys(keys []PublicKey) []byte {
	var b bytes.Buffer
	for _, k := range keys {
		fmt.Fprintf(&b, "# Bumper attestation key %s\n", k.id)
		b.Write(k.PEM())
	}
	return b.Bytes()
}

// ParsePublicKeys reads the PUBLIC KEY blocks of a PEM document (a file `bumper setup`
// wrote, or what serve publishes at KeysPath): every block must be an Ed25519 public key,
// and there must be at least one. The same key twice counts once.
func ParsePublicKeys(data []byte) ([]PublicKey, error) {
	var keys []PublicKey
	seen := map[string]bool{}
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		switch block.Type {
		case publicKeyBlock:
		case privateKeyBlock, "EC PRIVATE KEY", "RSA PRIVATE KEY", "OPENSSH PRIVATE KEY":
			return nil, errors.New("the key file holds a private key: give the public key only (attestation-public-key.pem, or openssl pkey -in KEY.pem -pubout)")
		default:
			return nil, fmt.Errorf("a %q PEM block: want PUBLIC KEY blocks (Ed25519, PKIX)", block.Type)
		}
		pub, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("failed to parse a public key: %w", err)
		}
		ed, ok := pub.(ed25519.PublicKey)
		if !ok {
			return nil, fmt.Errorf("a %s public key: Bumper's attestation keys are Ed25519", keyKind(pub))
		}
		k, err := newPublicKey(ed)
		if err != nil {
			return nil, err
		}
		if !seen[k.id] {
			seen[k.id] = true
			keys = append(keys, k)
		}
		if len(keys) > maxKeys {
			return nil, fmt.Errorf("more than %d public keys", maxKeys)
		}
	}
	if len(keys) == 0 {
		return nil, errors.New("no PEM PUBLIC KEY block: want serve's attestation public key (attestation-public-key.pem from bumper setup)")
	}
	return keys, nil
}

// Signer is serve's attestation key.
type Signer struct {
	priv ed25519.PrivateKey
	pub  PublicKey
}

// NewSigner reads the attestation key: exactly one PKCS#8 PEM block holding an Ed25519
// private key, as GenerateKey makes it (or `openssl genpkey -algorithm ed25519`).
func NewSigner(privatePEM []byte) (*Signer, error) {
	block, rest := pem.Decode(privatePEM)
	if block == nil {
		return nil, errors.New("no PEM block: want an Ed25519 private key in PKCS#8 PEM (-----BEGIN PRIVATE KEY-----), as bumper setup writes it")
	}
	if block.Type != privateKeyBlock {
		return nil, fmt.Errorf("a %q PEM block: want PRIVATE KEY (an Ed25519 key in PKCS#8, as bumper setup or openssl genpkey -algorithm ed25519 writes it)", block.Type)
	}
	if next, _ := pem.Decode(rest); next != nil {
		return nil, errors.New("more than one PEM block: the attestation key file holds one private key")
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("failed to parse the attestation key: %w", err)
	}
	priv, ok := key.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("a %s private key: the attestation key is Ed25519 (bumper setup makes one; openssl genpkey -algorithm ed25519)", keyKind(key))
	}
	pub, err := newPublicKey(priv.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, err
	}
	return &Signer{priv: priv, pub: pub}, nil
}

// PublicKey is the signer's public key.
func (s *Signer) PublicKey() PublicKey { return s.pub }

// keyKind names a key's algorithm for an error.
func keyKind(k any) string {
	switch k.(type) {
	case *rsa.PublicKey, *rsa.PrivateKey:
		return "RSA"
	case *ecdsa.PublicKey, *ecdsa.PrivateKey:
		return "ECDSA"
	case *ecdh.PublicKey, *ecdh.PrivateKey:
		return "X25519/ECDH"
	}
	return fmt.Sprintf("%T", k)
}

// dsseSigner is the signer as go-securesystemslib's dsse uses it: it signs the
// pre-authentication encoding the library builds.
type dsseSigner struct{ s *Signer }

func (d dsseSigner) Sign(_ context.Context, data []byte) ([]byte, error) {
	return ed25519.Sign(d.s.priv, data), nil
}

func (d dsseSigner) KeyID() (string, error) { return d.s.pub.id, nil }

// dsseVerifier is one trusted public key as the library's envelope verifier uses it.
type dsseVerifier struct{ k PublicKey }

var errBadSignature = errors.New("ed25519: the signature does not verify")

func (v dsseVerifier) Verify(_ context.Context, data, sig []byte) error {
	if !ed25519.Verify(v.k.key, data, sig) {
		return errBadSignature
	}
	return nil
}

func (v dsseVerifier) KeyID() (string, error)   { return v.k.id, nil }
func (v dsseVerifier) Public() crypto.PublicKey { return v.k.key }
