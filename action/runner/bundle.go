package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/evidence/evidencemd"
)

// writeEvidence redacts and validates the evidence and writes evidence.json and
// evidence.md to the artifact; it returns the digest. Evidence that fails validation is
// still written (an operator needs it most then), redacted, and the error says why it
// failed.
func writeEvidence(ctx context.Context, rec *recorder) (string, error) {
	ev := rec.ev
	if err := redactEvidence(ctx, ev); err != nil {
		return "", err
	}
	verr := ev.Validate()
	data, err := ev.Marshal()
	if err != nil {
		return "", fmt.Errorf("failed to encode the evidence: %w", err)
	}
	if err := os.WriteFile(filepath.Join(rec.out, EvidenceFile), data, 0o640); err != nil {
		return "", fmt.Errorf("failed to write %s: %w", EvidenceFile, err)
	}
	md, _ := evidencemd.Render(ev, evidencemd.CommentLimit)
	if err := os.WriteFile(filepath.Join(rec.out, EvidenceMarkdownFile), []byte(md), 0o640); err != nil {
		return "", fmt.Errorf("failed to write %s: %w", EvidenceMarkdownFile, err)
	}
	digest, err := ev.Digest()
	if err != nil {
		return "", err
	}
	if verr != nil {
		return digest, fmt.Errorf("the evidence does not validate: %w", verr)
	}
	return digest, nil
}

// redactEvidence replaces what looks like a secret in the evidence (evidence.Redact),
// object keys included: the bundle quotes what the agent and the repository wrote (the
// decision ledger, commands, test output, tool names, paths, the hosts it asked for), and
// it is validated, published and written only redacted. The log says where, never what.
func redactEvidence(ctx context.Context, ev *evidence.Evidence) error {
	paths, err := ev.Redact()
	if err != nil {
		return fmt.Errorf("failed to redact the evidence: %w", err)
	}
	if len(paths) > 0 {
		zerolog.Ctx(ctx).Warn().Strs(logKeyPaths, paths).Msg("redacted secret-looking text in the evidence")
	}
	return nil
}

// checkEvidence redacts the evidence and validates it as it is about to be published at
// now (asPublished): a bundle that still does not validate fails the run before anything
// more is published, and nothing says what was not.
func checkEvidence(ctx context.Context, ev *evidence.Evidence, now time.Time, nothing string) error {
	if err := redactEvidence(ctx, ev); err != nil {
		return failWith(evidence.OutcomeError, "%w; %s", err, nothing)
	}
	c := *ev
	asPublished(&c, now)
	if err := c.Validate(); err != nil {
		return failWith(evidence.OutcomeError, "the evidence does not validate, so %s: %w", nothing, err)
	}
	return nil
}

// asPublished is the evidence as the pull request shows it: the run a success, its
// token revoked after it was posted.
func asPublished(e *evidence.Evidence, now time.Time) {
	e.Outcome = evidence.OutcomeSuccess
	e.Revocation = evidence.Revocation{Reason: "revoked when the run ends, after this was posted; the run's artifact holds the final evidence.json"}
	e.Finish(now)
}
