package runner

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/bumperdev/bumper/action/evidence"
)

// Groups is how the job log shows the run's phases: ghaction.Env in a workflow.
type Groups interface {
	// Group starts a collapsed section of the log named title; EndGroup ends it.
	Group(title string)
	EndGroup()
	// StopCommands has the runner take no line for a workflow command until resume is
	// called.
	StopCommands() (resume func())
}

// PhaseGroups is Config.Phase for the job log, where w (Config.Log) writes: each phase a
// group ("agent (round 2)") ended by one line of its outcome, detail and time. The
// output of the phases that run the repository's code or print its files (an
// environment's setup, an update's merge, the agent, verification) is the repository's
// text: the runner must not take a line of it
// for a workflow command (a mask that hides a failure, a forged annotation, a stop of
// the runner's own commands), so those phases are quoted (StopCommands) while they run.
func PhaseGroups(g Groups, w io.Writer) func(name evidence.PhaseName, end bool, p evidence.Phase) {
	var resume func() // ends the quote of the phase that runs, if it is quoted
	return func(name evidence.PhaseName, end bool, p evidence.Phase) {
		if !end {
			title := string(name)
			if p.Round > 0 {
				title += " (round " + strconv.Itoa(p.Round) + ")"
			}
			g.Group(title)
			if runsRepositoryCode(name) {
				resume = g.StopCommands()
			}
			return
		}
		if resume != nil {
			resume()
			resume = nil
		}
		if p.Detail != "" {
			// One line, starting with the outcome: a detail may quote what the agent
			// left (git's errors name paths), and a line of it must not become a
			// workflow command.
			fmt.Fprintf(w, "%s: %s (%s)\n", p.Outcome, strings.Join(strings.Fields(p.Detail), " "), timeMS(p.DurationMS))
		}
		g.EndGroup()
	}
}

// runsRepositoryCode says the phase's output, in the job log, is what the repository's
// code printed.
func runsRepositoryCode(name evidence.PhaseName) bool {
	return name == evidence.PhaseEnvironment || name == evidence.PhaseMerge || name == evidence.PhaseAgent || name == evidence.PhaseVerification
}

func timeMS(ms int64) string {
	return strconv.FormatFloat(float64(ms)/1000, 'f', 1, 64) + " s"
}
