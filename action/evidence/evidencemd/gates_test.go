package evidencemd_test

import (
	"strings"
	"testing"

	"github.com/bumperdev/bumper/action/evidence/evidencemd"
	"github.com/bumperdev/bumper/action/evidence/evidencetest"
)

// TestGatesSummary: the bumper/gates check run's summary is the gates' section alone,
// open, within its limit, with every finding quoted and no secret.
func TestGatesSummary(t *testing.T) {
	e := evidencetest.Failed()
	e.Gates.Findings[1].File = "docs/<img src=x onerror=alert(1)>.md"
	md := evidencemd.Gates(e, 65_535)
	for _, want := range []string{"<details open>", "**block** secrets at `internal/retry/client.go` line 31", "ghp_********", "`docs/<img src=x onerror=alert(1)>.md`", "**not checked**"} {
		if !strings.Contains(md, want) {
			t.Errorf("the summary lacks %q:\n%s", want, md)
		}
	}
	if short := evidencemd.Gates(e, 400); len(short) > 400 {
		t.Errorf("%d bytes over a limit of 400", len(short))
	}
	e.Gates = nil
	if got := evidencemd.Gates(e, 65_535); got != "" {
		t.Errorf("no gates, summary %q", got)
	}
}
