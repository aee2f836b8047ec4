package envbuild

import (
	"fmt"
	"os"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/firewall/audit"
	"github.com/bumperdev/bumper/sandbox"
)

// Denials are the destinations the setup's firewall refused (its audit log at path,
// verified first), with the change to environment.allow in policyFile (the checkout's
// .github/bumper.yml) that would let them through; nil when there were none or the
// setup never ran. The firewall's own address, as the guest reaches it, is left out.
func Denials(path string, policyFile []byte) (*evidence.Denials, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("failed to open the setup's audit log: %w", err)
	}
	defer f.Close()
	if _, err := audit.Verify(f, ""); err != nil {
		return nil, fmt.Errorf("failed to verify the setup's audit log: %w", err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		return nil, fmt.Errorf("failed to read the setup's audit log: %w", err)
	}
	entries, err := evidence.ReadAuditLines(f)
	if err != nil {
		return nil, err
	}
	return evidence.SummarizeDenials(entries, []string{sandbox.GuestGateway}, evidence.PolicyKeyEnvironmentAllow, policyFile), nil
}
