package evidencemd_test

import (
	"strings"
	"testing"

	"github.com/bumperdev/bumper/action/evidence/evidencemd"
	"github.com/bumperdev/bumper/internal/revision"
)

func TestAttestation(t *testing.T) {
	digest := revision.Of([]byte("envelope"))
	if got := evidencemd.Attestation(digest, ""); !strings.Contains(got, digest) || !strings.Contains(got, "evidence.intoto.jsonl") ||
		!strings.Contains(got, "bumper evidence verify") {
		t.Errorf("attested: %q", got)
	}
	// serve's reason quotes what the runner sent: it cannot make a link or end the span.
	got := evidencemd.Attestation("", "bad `harness` [x](https://outside.example/)")
	if !strings.HasPrefix(got, "**Not attested:** ``") || !strings.HasSuffix(got, "``\n") || strings.Count(got, "\n") != 1 {
		t.Errorf("unattested: %q", got)
	}
}
