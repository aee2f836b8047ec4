package evidence

import (
	"errors"
	"fmt"

	"github.com/bumperdev/bumper/internal/jsondoc"
)

// Validate checks the bundle as Marshal writes it against schema/evidence-v1.json and
// then what a schema cannot say: no string anywhere looks like a secret (see Redact),
// times run forwards and durations match them, the diff's totals add up, counts cover
// the failures listed, the decision ledger is least confident first, and the cost's
// estimated flag matches its count. A *jsondoc.ValidationError lists every problem
// with its JSON path; a secret is named by kind, never quoted.
func (e *Evidence) Validate() error {
	data, err := e.Marshal()
	if err != nil {
		return err
	}
	var problems []jsondoc.Problem
	if err := validateSchema(evidenceSchemaURL, data); err != nil {
		var ve *jsondoc.ValidationError
		if !errors.As(err, &ve) {
			return err
		}
		problems = append(problems, ve.Problems...)
	}
	secrets, err := findSecrets(data)
	if err != nil {
		return err
	}
	problems = append(problems, secrets...)
	problems = append(problems, e.consistency()...)
	if len(problems) > 0 {
		return &jsondoc.ValidationError{Problems: problems}
	}
	return nil
}

// consistency is what the schema cannot check.
func (e *Evidence) consistency() []jsondoc.Problem {
	var out []jsondoc.Problem
	add := func(path, format string, args ...any) {
		out = append(out, jsondoc.Problem{Path: path, Message: fmt.Sprintf(format, args...)})
	}
	if e.EndedAt.Before(e.StartedAt) {
		add("/ended_at", "ends before the run started")
	}
	if want := e.EndedAt.Sub(e.StartedAt).Milliseconds(); e.WallTimeMS != want {
		add("/wall_time_ms", "is %d but the run's times span %d ms", e.WallTimeMS, want)
	}
	for i, p := range e.Phases {
		if p.EndedAt.Before(p.StartedAt) {
			add(fmt.Sprintf("/phases/%d/ended_at", i), "ends before the phase started")
		}
		if want := p.EndedAt.Sub(p.StartedAt).Milliseconds(); p.DurationMS != want {
			add(fmt.Sprintf("/phases/%d/duration_ms", i), "is %d but the phase's times span %d ms", p.DurationMS, want)
		}
	}
	for i, t := range e.Tests {
		if len(t.Failures) > t.Failed {
			add(fmt.Sprintf("/tests/%d/failed", i), "counts %d failures but %d are listed", t.Failed, len(t.Failures))
		}
	}
	d := e.Diff
	if d.FilesChanged != len(d.Files) {
		add("/diff/files_changed", "is %d but %d files are listed", d.FilesChanged, len(d.Files))
	}
	ins, del := 0, 0
	for _, f := range d.Files {
		ins += f.Insertions
		del += f.Deletions
	}
	if d.Insertions != ins || d.Deletions != del {
		add("/diff", "totals +%d −%d do not match the files' +%d −%d", d.Insertions, d.Deletions, ins, del)
	}
	if e.Cost.Estimated != (e.Cost.EstimatedCalls > 0) {
		add("/cost/estimated", "is %t but %d calls were estimated", e.Cost.Estimated, e.Cost.EstimatedCalls)
	}
	if e.Cost.EstimatedCalls > e.Cost.MeteredCalls {
		add("/cost/estimated_calls", "is more than the %d metered calls", e.Cost.MeteredCalls)
	}
	for i := 1; i < len(e.Ledger.Decisions); i++ {
		if e.Ledger.Decisions[i].Confidence < e.Ledger.Decisions[i-1].Confidence {
			add(fmt.Sprintf("/decision_ledger/decisions/%d", i), "is less confident than the one before it (least confident first)")
			break
		}
	}
	return out
}
