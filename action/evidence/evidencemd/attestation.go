package evidencemd

import (
	"fmt"
	"strings"

	"github.com/bumperdev/bumper/internal/attest"
	"github.com/bumperdev/bumper/internal/mdcode"
	"github.com/bumperdev/bumper/internal/revision"
	"github.com/bumperdev/bumper/internal/textcut"
)

// Attestation is the evidence's line about serve's signed statement of the run: the
// bundle's name and the statement's digest (revision.Of the envelope line), and how to
// check it; or, when serve signed none, why. It follows the evidence it attests (the
// statement is about evidence.json, so evidence.json cannot hold it).
func Attestation(digest, unattested string) string {
	if revision.Valid(digest) {
		return fmt.Sprintf("**Attested:** serve signed an in-toto statement of this head and `%s`: `%s` in the run's artifact, `%s`. "+
			"Check it with `bumper evidence verify --url SERVE %s` (docs/attestation.md).\n",
			attest.EvidenceName, attest.BundleFile, digest, attest.BundleFile)
	}
	// serve's reason may quote what the runner reported: shown as code, bounded.
	return fmt.Sprintf("**Not attested:** %s\n", mdcode.Span(textcut.Clip(strings.Join(strings.Fields(unattested), " "), 300, "…")))
}
