package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/verdict"
)

// readVerdict reads the reviewer's verdict.json from what the guest left in /out (dir):
// a regular file, never through a link, within verdict.MaxBytes. It is kept as written
// (serve parses it itself and decides) and returned, also with the error of one that does
// not parse; the runner parses it too, for the job log and the evidence. One that does
// not parse still goes to serve, and fails the run.
func (r *run) readVerdict(ctx context.Context, dir string) ([]byte, string, error) {
	data, err := readSmall(filepath.Join(dir, VerdictFile), verdict.MaxBytes)
	if errors.Is(err, os.ErrNotExist) {
		return nil, "", failWith(evidence.OutcomeFailure, "the reviewer wrote no %s", guestVerdict)
	}
	if err != nil {
		return nil, "", failWith(evidence.OutcomeFailure, "the reviewer's %s is refused: %w", guestVerdict, err)
	}
	r.rec.keep(VerdictFile, data)
	rv := reviewEvidence(r.rec.ev, r.grant.HeadCommit)
	rv.VerdictDigest = verdict.Digest(data)
	v, err := verdict.Parse(data)
	if err != nil {
		rv.Problem = cut(err.Error(), maxLine)
		return data, "", failWith(evidence.OutcomeFailure, "the reviewer's verdict does not parse (serve is sent it as written, and fails the check saying why): %w", err)
	}
	conf := v.Confidence
	rv.Verdict, rv.Confidence, rv.Findings = v.Verdict, &conf, len(v.Findings)
	zerolog.Ctx(ctx).Info().Str(logKeyVerdict, v.Verdict).Float64(logKeyConfidence, v.Confidence).Int(logKeyFindings, len(v.Findings)).Msg("the reviewer's verdict")
	return data, fmt.Sprintf("verdict %s (confidence %.2f), %d finding(s); %s", v.Verdict, v.Confidence, len(v.Findings), rv.VerdictDigest), nil
}

// reviewEvidence is the evidence's review section of the review of head, made on first
// use.
func reviewEvidence(ev *evidence.Evidence, head string) *evidence.Review {
	if ev.Review == nil {
		ev.Review = &evidence.Review{HeadCommit: head}
	}
	return ev.Review
}

// sendVerdict gives serve the review run's verdict on head: the document as the
// reviewer wrote it, or the problem (the run's reason) when there is none. Every review
// run that got its credentials sends one, so that serve's bumper/verdict check says why
// it failed.
func sendVerdict(ctx context.Context, l *link, head string, rv reviewed, reason string) error {
	v := wire.Verdict{HeadCommit: head, Verification: rv.verification}
	if rv.doc != nil {
		v.Document = string(rv.doc)
	} else {
		v.Problem = wireReason(orDefault(reason, "the reviewer wrote no "+guestVerdict))
	}
	if err := l.client().Verdict(ctx, v); err != nil {
		return fmt.Errorf("failed to send the verdict: %w", err)
	}
	return nil
}

// noteReviewProblem records in the evidence why a review run of head has no valid
// verdict, once the run is over.
func noteReviewProblem(ev *evidence.Evidence, head string, rv reviewed, reason string) {
	review := reviewEvidence(ev, head)
	if rv.doc == nil && review.Problem == "" {
		review.Problem = cut(orDefault(reason, "the reviewer wrote no "+guestVerdict), maxLine)
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
