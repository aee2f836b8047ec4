package image

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
)

// Where the guest's trust store lives (Debian's ca-certificates).
const (
	caBundle    = "etc/ssl/certs/ca-certificates.crt"
	caLocalFile = "usr/local/share/ca-certificates/bumper-extra.crt"
	maxCABytes  = 4 << 20
)

// readCACerts reads PEM files of CA certificates, checking that each holds
// certificates and nothing else, and returns them as one PEM text and its digest
// ("" when there are none).
func readCACerts(files []string) (pemText []byte, digest string, err error) {
	var all bytes.Buffer
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, "", fmt.Errorf("failed to read the CA certificates %s: %w", f, err)
		}
		if len(raw) > maxCABytes {
			return nil, "", fmt.Errorf("the CA certificates %s are %d bytes: at most %d", f, len(raw), maxCABytes)
		}
		n := 0
		for rest := raw; ; {
			var b *pem.Block
			b, rest = pem.Decode(rest)
			if b == nil {
				if len(bytes.TrimSpace(rest)) > 0 {
					return nil, "", fmt.Errorf("the CA certificates %s hold something that is not a PEM block after certificate %d", f, n)
				}
				break
			}
			if b.Type != "CERTIFICATE" {
				return nil, "", fmt.Errorf("the CA certificates %s hold a %s block: only CERTIFICATE blocks belong in a trust store", f, b.Type)
			}
			if _, err := x509.ParseCertificate(b.Bytes); err != nil {
				return nil, "", fmt.Errorf("the CA certificates %s: certificate %d does not parse: %w", f, n+1, err)
			}
			if err := pem.Encode(&all, &pem.Block{Type: "CERTIFICATE", Bytes: b.Bytes}); err != nil {
				return nil, "", fmt.Errorf("failed to encode a certificate: %w", err)
			}
			n++
		}
		if n == 0 {
			return nil, "", fmt.Errorf("the CA certificates %s hold no certificate", f)
		}
	}
	if all.Len() == 0 {
		return nil, "", nil
	}
	sum := sha256.Sum256(all.Bytes())
	return all.Bytes(), "sha256:" + hex.EncodeToString(sum[:]), nil
}

// installCACerts adds pemText to the trust store of the tree at root. The tree's
// files are hard links to the cached debootstrap tree, so the bundle is replaced (a new
// file renamed over the link), never appended to in place.
func installCACerts(root string, pemText []byte) error {
	if len(pemText) == 0 {
		return nil
	}
	bundle := filepath.Join(root, caBundle)
	old, err := os.ReadFile(bundle)
	if err != nil {
		return fmt.Errorf("failed to read the image's CA bundle (is ca-certificates installed?): %w", err)
	}
	joined := append(append(bytes.TrimRight(old, "\n"), '\n'), pemText...)
	tmp := bundle + ".bumper"
	if err := os.WriteFile(tmp, joined, 0o644); err != nil {
		return fmt.Errorf("failed to write the image's CA bundle: %w", err)
	}
	if err := os.Rename(tmp, bundle); err != nil {
		return fmt.Errorf("failed to replace the image's CA bundle: %w", err)
	}
	local := filepath.Join(root, caLocalFile)
	if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
		return fmt.Errorf("failed to create %s: %w", filepath.Dir(caLocalFile), err)
	}
	if err := os.WriteFile(local, pemText, 0o644); err != nil {
		return fmt.Errorf("failed to install the extra CA certificates: %w", err)
	}
	return nil
}
