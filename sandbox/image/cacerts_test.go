package image

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testCA writes a self-signed CA certificate as PEM to a file and returns its path.
func testCA(t *testing.T, name string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), name+".pem")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadCACerts(t *testing.T) {
	one, two := testCA(t, "one"), testCA(t, "two")
	write := func(content string) string {
		p := filepath.Join(t.TempDir(), "f.pem")
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	oneRaw, _ := os.ReadFile(one)
	keyPEM := "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIJ+DYvh6SEqVTm50DFtMDoQikTmiCqirVv9mWG9qfSnF\n-----END PRIVATE KEY-----\n"
	tests := []struct {
		name  string
		files []string
		want  string // an error's words; "" for success
	}{
		{name: "none"},
		{name: "one", files: []string{one}},
		{name: "two files", files: []string{one, two}},
		{name: "missing", files: []string{filepath.Join(t.TempDir(), "nope.pem")}, want: "failed to read"},
		{name: "empty", files: []string{write("")}, want: "no certificate"},
		{name: "not PEM", files: []string{write("hello\n")}, want: "not a PEM block"},
		{name: "a private key slipped in", files: []string{write(string(oneRaw) + keyPEM)}, want: "PRIVATE KEY block"},
		{name: "a certificate that does not parse", files: []string{write("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")}, want: "does not parse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, digest, err := readCACerts(tt.files)
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("readCACerts = %v, want %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(tt.files) == 0 {
				if text != nil || digest != "" {
					t.Fatalf("no files gave %q, %q", text, digest)
				}
				return
			}
			if n := bytes.Count(text, []byte("BEGIN CERTIFICATE")); n != len(tt.files) || !strings.HasPrefix(digest, "sha256:") {
				t.Fatalf("%d certificates, digest %q", n, digest)
			}
		})
	}
	a, da, _ := readCACerts([]string{one})
	b, db, _ := readCACerts([]string{one, two})
	if da == db || bytes.Equal(a, b) {
		t.Fatal("another set of certificates has the same digest")
	}
}

// TestInstallCACerts: the bundle gains the certificates, and the cached tree it was
// hard-linked from does not.
func TestInstallCACerts(t *testing.T) {
	cached, root := t.TempDir(), t.TempDir()
	orig := []byte("-----BEGIN CERTIFICATE-----\nDEBIAN\n-----END CERTIFICATE-----\n")
	for _, dir := range []string{cached, root} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(caBundle)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(cached, caBundle), orig, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(cached, caBundle), filepath.Join(root, caBundle)); err != nil {
		t.Fatal(err)
	}
	extra, _, err := readCACerts([]string{testCA(t, "egress")})
	if err != nil {
		t.Fatal(err)
	}
	if err := installCACerts(root, extra); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(root, caBundle))
	if !bytes.HasPrefix(got, orig) || !bytes.HasSuffix(got, extra) {
		t.Fatalf("the bundle is now:\n%s", got)
	}
	if kept, _ := os.ReadFile(filepath.Join(cached, caBundle)); !bytes.Equal(kept, orig) {
		t.Fatalf("the cached tree's bundle changed:\n%s", kept)
	}
	if local, _ := os.ReadFile(filepath.Join(root, caLocalFile)); !bytes.Equal(local, extra) {
		t.Fatal("the certificates are not in /usr/local/share/ca-certificates")
	}
}
