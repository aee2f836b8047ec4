package workitem

import (
	"context"
	"fmt"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/attest"
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
