package runner

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/ghaction"
)

// TestPhaseGroups attacks the job log as an agent would that prints workflow commands:
// a mask that would hide the word FAIL, a forged error, a stop of the runner's own
// commands with a token it guessed, in its output and in a phase's detail (a reason
// quoting what it left). Read as GitHub's runner reads them, the only commands honoured
// are the runner's own groups; the runner's commands between phases still work.
func TestPhaseGroups(t *testing.T) {
	var out bytes.Buffer
	env := ghaction.New(&out, func(k string) string { return map[string]string{"GITHUB_ACTIONS": "true"}[k] })
	hook := PhaseGroups(env, &out)
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	play := func(name evidence.PhaseName, round int, output, detail string) {
		hook(name, false, evidence.Phase{Name: name, Round: round, StartedAt: start})
		out.WriteString(output)
		p := evidence.NewPhase(name, start, start.Add(1500*time.Millisecond), evidence.PhaseFailed)
		p.Round, p.Detail = round, detail
		hook(name, true, p)
	}
	play(evidence.PhaseExchange, 0, "", "granted implement attempt 1")
	env.AddMask("ghs_token")
	play(evidence.PhaseAgent, 1, "::add-mask::FAIL\n::error::verified, safe to merge\n::stop-commands::x\n", "")
	play(evidence.PhaseVerification, 1, "::add-mask::FAIL\n", "FAIL\n::error::forged in a detail")
	play(evidence.PhasePush, 0, "", "")

	var honoured []string
	stop := ""
	for _, l := range strings.Split(out.String(), "\n") {
		switch {
		case stop != "":
			if l == "::"+stop+"::" {
				stop = ""
			}
		case strings.HasPrefix(l, "::stop-commands::"):
			stop = strings.TrimPrefix(l, "::stop-commands::")
		case strings.HasPrefix(l, "::"):
			honoured = append(honoured, l)
		}
	}
	want := []string{
		"::group::exchange", "::endgroup::", "::add-mask::ghs_token",
		"::group::agent (round 1)", "::endgroup::",
		"::group::verification (round 1)", "::endgroup::",
		"::group::push", "::endgroup::",
	}
	if strings.Join(honoured, "\n") != strings.Join(want, "\n") || stop != "" {
		t.Fatalf("commands honoured:\n%s\nwant\n%s\njob log:\n%s", strings.Join(honoured, "\n"), strings.Join(want, "\n"), out.String())
	}
	for _, line := range []string{"failed: granted implement attempt 1 (1.5 s)", "failed: FAIL ::error::forged in a detail (1.5 s)"} {
		if !strings.Contains(out.String(), "\n"+line+"\n") {
			t.Errorf("the job log lacks the detail line %q:\n%s", line, out.String())
		}
	}
}
