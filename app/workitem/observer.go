package workitem

import (
	"errors"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
)

// Observer learns what the service did, for serve's metrics; the domain stays
// metrics-agnostic. Its methods are called on the handling path and must not block.
type Observer interface {
	// Dispatch reports one dispatch attempted for a stage, with one of the Dispatch*
	// results.
	Dispatch(stage, result string)
	// Outcome reports a work item reaching a final state (done, failed, stopped or
	// error), once per move into it.
	Outcome(state string)
	// Spend reports model spend a run reported with its evidence, in micro-USD: the
	// difference from what the attempt held before, so a report sent again adds nothing.
	Spend(microUSD int64)
	// CapLeft reports what one of serve's daily caps (limit, the config key) leaves of
	// scope's day (a repository, or an installation's account) after a run's hold or
	// its settling, in micro-USD.
	CapLeft(limit, scope string, microUSD int64)
}

// The results a dispatch reports to the Observer.
const (
	// DispatchMade: the workflow was dispatched.
	DispatchMade = "dispatched"
	// DispatchElsewhere: another replica (or an earlier life of this one) held the
	// dispatch ref; this one stood down.
	DispatchElsewhere = "elsewhere"
	// DispatchFailed: GitHub refused the workflow_dispatch; the work item failed.
	DispatchFailed = "failed"
	// DispatchError: the dispatch ref could not be claimed or the dispatch not recorded.
	DispatchError = "error"
)

type nopObserver struct{}

func (nopObserver) Dispatch(string, string)       {}
func (nopObserver) Outcome(string)                {}
func (nopObserver) Spend(int64)                   {}
func (nopObserver) CapLeft(string, string, int64) {}

func (s *Service) observer() Observer {
	if s.opts.Observer == nil {
		return nopObserver{}
	}
	return s.opts.Observer
}

// observeDispatch reports how dispatch ended, from what it left behind: the attempts
// the record had before (before), the one it may have appended, and its error. Read
// after the fact so dispatch's own code paths stay as they are.
func (s *Service) observeDispatch(stage wire.Stage, it *item, before int, err *error) {
	atts := it.rec.Attempts
	appended := len(atts) > before
	var result string
	switch {
	case *err != nil && errors.Is(*err, ErrDispatchedElsewhere):
		result = DispatchElsewhere
	case appended && atts[len(atts)-1].Outcome == outcomeDispatchFailed:
		result = DispatchFailed
	case *err != nil:
		result = DispatchError
	default:
		result = DispatchMade
	}
	s.observer().Dispatch(string(stage), result)
}

// outcomeDispatchFailed is the outcome dispatch gives an attempt whose
// workflow_dispatch GitHub refused.
const outcomeDispatchFailed = ledger.OutcomeDispatchFailed
