// Package unwritten is what Bumper says on an issue when a write of its work item did
// not reach GitHub (or a status comment could not be made to fit): a reply of Bumper's
// own words and fixed length, which quotes nothing from the issue or GitHub's answer, so
// that nothing the issue holds can make it too long, or make it say anything else.
package unwritten

import (
	"errors"
	"fmt"

	"github.com/bumperdev/bumper/app/ledger"
)

// Part names what of a work item a write to GitHub was for.
type Part int

// The parts of a work item Bumper writes to GitHub.
const (
	StatusComment Part = iota
	StateLabel
)

// Note is the reply: what could not be written, why as far as Bumper can tell, and what
// it means for the work item. created says the write was the item's first status
// comment; refused, that GitHub refused the content (HTTP 422); trigger is the label
// that starts a work item.
func Note(what Part, created bool, state ledger.State, err error, refused bool, trigger string) string {
	why := ""
	switch {
	case errors.Is(err, ledger.ErrTooLong):
		why = " (it would be longer than a GitHub comment may be)"
	case refused:
		why = " (GitHub refused its content: HTTP 422)"
	}
	const approved = " Whatever is not recorded, a run only ever gets credentials for the text a maintainer approved: Bumper re-reads the issue when it hands them out."
	switch {
	case what == StateLabel:
		return fmt.Sprintf("Bumper could not move this issue's `%s` label to `%s`%s. Its status comment is up to date; Bumper has logged the error.",
			ledger.LabelPrefix+"…", state.Label(), why)
	case created:
		return fmt.Sprintf("Bumper could not write the status comment that records this work item%s, so there is no work item: "+
			"no run gets credentials for it. Bumper has logged the error; remove and add the `%s` label again to try again.", why, trigger)
	default:
		return fmt.Sprintf("Bumper could not update this work item's status comment%s, so what just happened to the work item "+
			"(it would now be `%s`) is not recorded: the status comment and its label still show it as it was. Bumper has logged the error.%s",
			why, state, approved)
	}
}
