package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/app/wire"
)

// recorder is the run's record as it goes: the evidence being built, each phase's time,
// outcome and log line, the files of the artifact (Config.Out), and the run's share of
// the job log.
type recorder struct {
	ev *evidence.Evidence
	// now is the clock; hook Config.Phase (log groups); out the artifact's directory.
	now  func() time.Time
	hook func(name evidence.PhaseName, end bool, p evidence.Phase)
	out  string
	job  *jobLog
}

// newRecorder starts the run's evidence and record.
func newRecorder(cfg Config) *recorder {
	cfg = cfg.withDefaults()
	limit := cfg.MaxJobLog
	if limit <= 0 {
		limit = DefaultMaxJobLog
	}
	return &recorder{
		ev: &evidence.Evidence{
			SchemaVersion: evidence.SchemaVersion, WorkItem: evidence.WorkItem{Repository: cfg.WorkItem.Repository, Issue: cfg.WorkItem.Issue},
			Trigger: cfg.Trigger, Stage: cfg.Stage, Attempt: cfg.Attempt, StartedAt: cfg.Now().UTC(),
			Approvals: []wire.Approval{}, Ledger: evidence.Ledger{Status: evidence.LedgerAbsent},
		},
		now: cfg.Now, hook: cfg.Phase, out: cfg.Out,
		job: &jobLog{w: cfg.Log, left: limit, max: limit},
	}
}

// phase runs fn as one phase of the evidence: its times, outcome and detail, a log
// line, and the Phase call-back (log groups).
func (rec *recorder) phase(ctx context.Context, name evidence.PhaseName, round int, fn func(ctx context.Context) (string, error)) error {
	start := rec.now().UTC()
	rec.hook(name, false, evidence.Phase{Name: name, Round: round, StartedAt: start})
	detail, err := fn(ctx)
	if err == nil && ctx.Err() != nil {
		err = context.Cause(ctx)
	}
	outcome := evidence.PhaseOK
	switch {
	case err == nil:
	case errors.Is(err, errStopped) || errors.Is(context.Cause(ctx), errStopped):
		outcome = evidence.PhaseCancelled
	case isTimeout(err):
		outcome = evidence.PhaseTimedOut
	default:
		outcome = evidence.PhaseFailed
	}
	if err != nil && detail == "" {
		detail = err.Error()
	}
	p := evidence.NewPhase(name, start, rec.now().UTC(), outcome)
	p.Round, p.Detail = round, cut(detail, maxLine)
	rec.ev.Phases = append(rec.ev.Phases, p)
	ev := zerolog.Ctx(ctx).Info()
	if err != nil {
		ev = zerolog.Ctx(ctx).Warn().Err(err)
	}
	ev.Str(logKeyPhase, string(name)).Int(logKeyRound, round).Dur(logKeyDuration, time.Duration(p.DurationMS)*time.Millisecond).Msg("phase ended")
	rec.hook(name, true, p)
	return err
}

// step runs fn as one phase (recorder.phase) and returns what it made: also with an
// error, for what a phase made before it failed is the run's to end (a session to close,
// a pull request to name).
func step[T any](ctx context.Context, rec *recorder, name evidence.PhaseName, fn func(ctx context.Context) (T, string, error)) (T, error) {
	var made T
	err := rec.phase(ctx, name, 0, func(ctx context.Context) (string, error) {
		var detail string
		var err error
		made, detail, err = fn(ctx)
		return detail, err
	})
	return made, err
}

// outFile creates a file in the artifact.
func (rec *recorder) outFile(name string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(rec.out, name), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o640)
	if err != nil {
		return nil, fmt.Errorf("failed to create %s: %w", name, err)
	}
	return f, nil
}

// keep writes a file of the artifact, best effort: what the VM left is kept for people
// to read, and a file that cannot be written fails nothing.
func (rec *recorder) keep(name string, data []byte) {
	_ = os.WriteFile(filepath.Join(rec.out, name), data, 0o640)
}
