package workitem

import (
	"context"
	"fmt"
	"strings"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/attest"
	"github.com/bumperdev/bumper/internal/mdcode"
	"github.com/bumperdev/bumper/internal/revision"
)

// Attestable is what serve may sign of a run after its evidence report, from its own
// record: the head commit it checked and the predicate's parts it knows (the runner's
// claims left empty for the caller). Head is "" and Why says why when there is nothing
// serve can vouch for.
type Attestable struct {
	Head      string
	Predicate attest.Predicate
	Why       string
}

// ReportEvidence records the evidence as Evidence does and returns what serve can attest
// of the run. The head is the one serve knows, never the report's word alone: for a
// writing run the head it checked on GitHub to be its pull request's (takePull), for a
// review run the head it dispatched the review of.
func (s *Service) ReportEvidence(ctx context.Context, c wire.RunClaims, e wire.Evidence) (Attestable, error) {
	if err := s.Evidence(ctx, c, e); err != nil {
		return Attestable{}, err
	}
	defer s.lock(c.WorkItem.String())()
	_, it, err := s.current(ctx, c)
	if err != nil {
		return Attestable{}, err
	}
	return attestable(it.rec, c), nil
}

// attestable reads the attested facts of the record's current attempt.
func attestable(rec *ledger.Record, c wire.RunClaims) Attestable {
	att := rec.CurrentAttempt()
	head := att.HeadCommit
	if c.Stage == StageReview {
		head = rec.PullHead
	}
	if head == "" {
		return Attestable{Why: fmt.Sprintf("the %s run published no head commit serve checked, so there is no commit to attest", c.Stage)}
	}
	p := attest.Predicate{WorkItem: rec.ID(), Stage: string(att.Stage), Attempt: att.Number,
		Approval: attest.Approval{Revision: att.Revision}, PolicyVersion: rec.PolicyVersion, BaseCommit: rec.BaseCommit}
	// The approvals of the revision the run was dispatched for, given before it started
	// (one voided since still authorized the run).
	for _, a := range rec.Approvals {
		if a.Revision == att.Revision && !a.At.After(att.StartedAt) {
			p.Approval.Approvers = append(p.Approval.Approvers, attest.Approver{Login: a.By, At: a.At, CommentID: a.CommentID})
		}
	}
	if len(p.Approval.Approvers) == 0 {
		return Attestable{Why: "no approval of the run's revision in serve's record"}
	}
	return Attestable{Head: head, Predicate: p}
}

// PublishAttestation posts serve's signed statement of the current run on the head it
// attests, as the bumper/attestation check run: its digest and how to check it in the
// summary, the envelope itself in the text. The pull request's evidence then holds the
// statement, which its bumper/evidence check run cannot: the runner wrote that before
// serve signed, and the run's token is revoked by the time it reports. A review run's
// statement stays in its artifact: the head's provenance is its writing run's.
func (s *Service) PublishAttestation(ctx context.Context, c wire.RunClaims, head string, statement []byte) error {
	if !wire.WritingStage(c.Stage) {
		return nil
	}
	defer s.lock(c.WorkItem.String())()
	gh, it, err := s.current(ctx, c)
	if err != nil {
		return err
	}
	if att := it.rec.CurrentAttempt(); att.HeadCommit != head {
		return fmt.Errorf("failed to publish the statement: it names %.12s, the attempt's head is %.12s", head, att.HeadCommit)
	}
	line := strings.TrimSpace(string(statement))
	summary := fmt.Sprintf("Serve signed an in-toto statement (DSSE, Ed25519) of this commit and the `%s` of %s's run (%s, attempt %d), "+
		"with the approval and policy from its own record. Statement digest `%s`; the run's artifact holds it as `%s`, and it is below.\n\n"+
		"Check it offline: save the text below as `%s`, then `bumper evidence verify --url SERVE %s` (docs/attestation.md).",
		attest.EvidenceName, it.rec.ID(), c.Stage, c.Attempt, revision.Of([]byte(line)), attest.BundleFile, attest.BundleFile, attest.BundleFile)
	fence := mdcode.Fence(line)
	_, err = gh.CreateCheckRun(ctx, it.rec.Repository, CheckRun{Name: CheckAttestation, HeadSHA: head, Status: "completed", Conclusion: "success",
		Title: "Signed by serve: this commit and its evidence", Summary: summary, Text: fence + "json\n" + line + "\n" + fence})
	if err != nil {
		return fmt.Errorf("failed to post the %s check run: %w", CheckAttestation, err)
	}
	return nil
}
