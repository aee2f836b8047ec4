package workitem

import (
	"context"
	"fmt"
	"strings"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/logkey"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/app/workitem/gatescheck"
	"github.com/bumperdev/bumper/app/workitem/verdictpost"
	"github.com/bumperdev/bumper/internal/mdcode"
	"github.com/bumperdev/bumper/internal/repoconfig"
)

// The check runs Bumper posts on a pull request's head: the runner posts the evidence,
// the App the verdict.
const (
	CheckEvidence = "bumper/evidence"
	CheckVerdict  = verdictpost.Name
	// CheckGates is the runner's output gates (docs/gates.md): it fails while a finding
	// needs a person, and a writer's approving review of its head clears it (gates.go).
	CheckGates = gatescheck.Name
	// CheckAttestation holds serve's signed statement of the run that published the
	// head (attest.go): the evidence check run was written before the statement existed.
	CheckAttestation = "bumper/attestation"
)

// reviewPermissions are a review run's: it reads the code, the pull request and its
// checks, and writes nothing. What it concludes, the App posts.
var reviewPermissions = map[string]string{"contents": "read", "pull_requests": "read", "checks": "read"}

// verdictOutcome is what the App made of a review run's result, and the review it
// posted of a valid verdict.
type verdictOutcome struct {
	verdictpost.Outcome
	posted Review
}

// postVerdict posts what a review run concluded on the pull request: the bumper/verdict
// check run always, and the review when there is a valid verdict. It records both.
func (s *Service) postVerdict(ctx context.Context, gh GitHub, it *item, pol repoconfig.Config, v wire.Verdict) (verdictOutcome, error) {
	rec := it.rec
	o := verdictOutcome{Outcome: verdictpost.Judge(rec.CurrentAttempt().Number, v, pol.Reviewer.MinConfidence, len(pol.Verification) > 0)}
	// The review first: a check that succeeded with no review beside it would be a pass
	// nobody can read.
	if o.Rec.Problem == "" {
		files, err := gh.PullFiles(ctx, rec.Repository, rec.PullRequest)
		if err != nil {
			return o, fmt.Errorf("failed to list the files of pull request #%d: %w", rec.PullRequest, err)
		}
		o.posted = o.Review(files)
		if o.Rec.ReviewID, err = gh.CreateReview(ctx, rec.Repository, rec.PullRequest, o.posted); err != nil {
			return o, fmt.Errorf("failed to post the review of pull request #%d: %w", rec.PullRequest, err)
		}
	}
	id, err := gh.CreateCheckRun(ctx, rec.Repository, checkRunOf(o.Check()))
	if err != nil {
		return o, fmt.Errorf("failed to post %s on %.12s: %w", CheckVerdict, o.Rec.Head, err)
	}
	o.Rec.CheckRunID = id
	rec.Verdict = &o.Rec
	zerolog.Ctx(ctx).Info().Str(logkey.WorkItem, rec.ID()).Int(logkey.Pull, rec.PullRequest).Str(logkey.Conclusion, o.Conclusion()).
		Str(logkey.Reason, o.Rec.Problem).Msg("posted the reviewer's verdict")
	return o, nil
}

// Verdict takes what a review run concluded, posts it and hands the pull request to
// humans.
func (s *Service) Verdict(ctx context.Context, c wire.RunClaims, v wire.Verdict) error {
	if c.Stage != StageReview {
		// Only a reviewer run, with its fresh context, judges a pull request: the run that
		// wrote the change may not grade it.
		return refuse(RefusalStage, "a %s run cannot post a verdict; only a review run can", c.Stage)
	}
	if len(v.Document) > wire.MaxVerdictDocument || len(v.Problem) > wire.MaxReason {
		return refuse(RefusalInvalidReport, "the verdict document is at most %d bytes and the problem at most %d", wire.MaxVerdictDocument, wire.MaxReason)
	}
	if strings.TrimSpace(v.Document) == "" && strings.TrimSpace(v.Problem) == "" {
		return refuse(RefusalInvalidReport, "a verdict call needs the document or the problem that left the run without one")
	}
	defer s.lock(c.WorkItem.String())()
	gh, it, err := s.current(ctx, c)
	if err != nil {
		return err
	}
	rec := it.rec
	if rec.State != ledger.Reviewing {
		return refuse(RefusalState, "%s is %s, not reviewing", c.WorkItem, rec.State)
	}
	if v.HeadCommit != rec.PullHead {
		return refuse(RefusalInvalidReport, "the review judged %.12s, but the pull request's head is %.12s", v.HeadCommit, rec.PullHead)
	}
	pol, err := s.policyAt(ctx, gh, rec.Repository, rec.BaseCommit)
	if isInvalidPolicy(err) {
		return refuse(RefusalPolicy, "%v", err)
	}
	if err != nil {
		return err // a failed read: serve's 5xx, which the runner repeats
	}
	o, err := s.postVerdict(ctx, gh, it, pol, v)
	if err != nil {
		return err
	}
	return s.reviewed(ctx, gh, it, pol, o)
}

// reviewed hands the pull request to humans after its review, then starts what waits:
// a revise round for the words collected meanwhile (and the findings, where the
// repository asks for that), else a fix round for a required check that already
// failed, else an update for a base that moved.
func (s *Service) reviewed(ctx context.Context, gh GitHub, it *item, pol repoconfig.Config, o verdictOutcome) error {
	reason := fmt.Sprintf("reviewer verdict: %s (confidence %.2f); %s %s", o.Rec.Verdict, o.Rec.Confidence, CheckVerdict, o.Conclusion())
	if o.Rec.Problem != "" {
		reason = fmt.Sprintf("the review run produced no valid verdict (%s); %s failure", (&mdcode.Quoter{}).Span(oneLine(o.Rec.Problem)), CheckVerdict)
	}
	if err := s.move(ctx, it, ledger.InReview, reason); err != nil {
		return err
	}
	findingsInput(it.rec, pol, o)
	if err := s.next(ctx, gh, it, pol); err != nil {
		return err
	}
	return s.save(ctx, gh, it, "")
}

// reviewMissing ends a review that brought no verdict (its run ended without one, or
// could not be dispatched): the bumper/verdict check fails with the reason, and the pull
// request goes to humans.
func (s *Service) reviewMissing(ctx context.Context, gh GitHub, it *item, why string) error {
	rec := it.rec
	pol, err := s.policyAt(ctx, gh, rec.Repository, rec.BaseCommit)
	switch {
	case isInvalidPolicy(err):
		pol = repoconfig.Default()
	case err != nil:
		return err
	}
	o, err := s.postVerdict(ctx, gh, it, pol, wire.Verdict{Problem: why, HeadCommit: rec.PullHead})
	if err != nil {
		return err
	}
	return s.reviewed(ctx, gh, it, pol, o)
}

// checkRunOf is verdictpost's check as the GitHub port posts it.
func checkRunOf(c verdictpost.Check) CheckRun {
	return CheckRun{Name: CheckVerdict, HeadSHA: c.Head, Conclusion: c.Conclusion, Title: c.Title, Summary: c.Summary}
}

// oneLine joins text onto one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
