package app

import (
	"fmt"
	"os"

	"github.com/bumperdev/bumper/app/runnerapi"
	"github.com/bumperdev/bumper/internal/attest"
)

// attester reads serve's attestation key, nil when none is configured. The key file
// must be the owner's alone (mode 0600 or stricter): a key another user could read
// could sign statements serve never made.
func (c *Config) attester() (*runnerapi.Attester, error) {
	path := c.Bumper.AttestationKeyFile
	if path == "" {
		return nil, nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("failed to read bumper.attestation_key_file: %w", err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("bumper.attestation_key_file %s is mode %04o: others may read the key that signs runs' statements; chmod 600 it", path, perm)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("failed to read bumper.attestation_key_file: %w", err)
	}
	signer, err := attest.NewSigner(raw)
	if err != nil {
		return nil, fmt.Errorf("bumper.attestation_key_file %s: %w", path, err)
	}
	var previous []attest.PublicKey
	if f := c.Bumper.PreviousAttestationKeysFile; f != "" {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("failed to read bumper.previous_attestation_keys_file: %w", err)
		}
		if previous, err = attest.ParsePublicKeys(raw); err != nil {
			return nil, fmt.Errorf("bumper.previous_attestation_keys_file %s: %w", f, err)
		}
	}
	return runnerapi.NewAttester(signer, previous), nil
}
