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

func (nopObserver) Dispatch(string, string) {}

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
