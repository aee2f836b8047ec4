package runqueue

import (
	"testing"
	"time"

	"github.com/bumperdev/bumper/app/ledger"
)

var t0 = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

// dispatched is a running item whose run was dispatched at t0+at and waits for a runner.
func dispatched(issue int, at time.Duration) *ledger.Record {
	return &ledger.Record{Repository: "o/r", Issue: issue, State: ledger.Running,
		Attempts: []ledger.Attempt{{RunID: int64(issue), StartedAt: t0.Add(at)}}}
}

// finished is an ended item whose one run took d on its runner, ending at t0+end.
func finished(issue int, end, d time.Duration) *ledger.Record {
	return &ledger.Record{Repository: "o/r", Issue: issue, State: ledger.Done,
		Attempts: []ledger.Attempt{{RunID: 1, Runner: "r", RunnerAt: t0.Add(end - d), EndedAt: t0.Add(end), Outcome: "success"}}}
}

func TestWaiting(t *testing.T) {
	taken := dispatched(1, 0)
	taken.Attempts[0].Runner = "runner-1"
	ended := dispatched(2, 0)
	ended.Attempts[0].Outcome = "failure"
	notDispatched := dispatched(3, 0)
	notDispatched.Attempts[0].RunID = 0
	stopped := dispatched(4, 0)
	stopped.State = ledger.Stopped
	tests := []struct {
		name string
		rec  *ledger.Record
		want bool
	}{
		{"dispatched, no runner yet", dispatched(5, 0), true},
		{"a runner took it", taken, false},
		{"its run ended", ended, false},
		{"not dispatched", notDispatched, false},
		{"the item ended", stopped, false},
		{"no attempt", &ledger.Record{State: ledger.AwaitingApproval}, false},
	}
	for _, tt := range tests {
		if _, got := Waiting(tt.rec); got != tt.want {
			t.Errorf("%s: Waiting = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestRunDuration(t *testing.T) {
	var many []*ledger.Record
	for i := range 12 { // the two oldest (1 h each) are past recentRuns
		d := time.Hour
		if i >= 2 {
			d = time.Duration(i) * time.Minute
		}
		many = append(many, finished(i+1, time.Duration(i)*time.Hour, d))
	}
	tests := []struct {
		name string
		recs []*ledger.Record
		want time.Duration
	}{
		{"none finished", []*ledger.Record{dispatched(1, 0)}, 0},
		{"one", []*ledger.Record{finished(1, time.Hour, 5*time.Minute)}, 5 * time.Minute},
		{"the median", []*ledger.Record{finished(1, time.Hour, 9*time.Minute), finished(2, 2*time.Hour, time.Minute), finished(3, 3*time.Hour, 4*time.Minute)}, 4 * time.Minute},
		{"only the last ten", many, 7 * time.Minute},
	}
	for _, tt := range tests {
		if got := RunDuration(tt.recs); got != tt.want {
			t.Errorf("%s: RunDuration = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestPlaces(t *testing.T) {
	now := t0.Add(time.Hour)
	t.Run("alone with nothing to estimate from", func(t *testing.T) {
		if got := Places([]*ledger.Record{dispatched(1, 0)}, now); len(got) != 0 {
			t.Fatalf("Places = %+v, want none", got)
		}
	})
	t.Run("first dispatched first", func(t *testing.T) {
		recs := []*ledger.Record{dispatched(1, 2*time.Minute), finished(2, 0, 10*time.Minute), dispatched(3, time.Minute)}
		got := Places(recs, now)
		want := []Entry{
			{"o/r#3", ledger.QueuePlace{Position: 1, Of: 2, Estimate: 10 * time.Minute, At: now}},
			{"o/r#1", ledger.QueuePlace{Position: 2, Of: 2, Estimate: 20 * time.Minute, At: now}},
		}
		if len(got) != len(want) {
			t.Fatalf("Places = %+v, want %+v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("place %d = %+v, want %+v", i, got[i], want[i])
			}
		}
	})
}

func TestDue(t *testing.T) {
	place := ledger.QueuePlace{Position: 1, Of: 2, Estimate: time.Minute, At: t0.Add(Refresh)}
	tests := []struct {
		name string
		old  *ledger.QueuePlace
		want bool
	}{
		{"never written", nil, true},
		{"the same place", &ledger.QueuePlace{Position: 1, Of: 2, Estimate: time.Minute, At: t0}, false},
		{"moved, a Refresh after", &ledger.QueuePlace{Position: 2, Of: 2, Estimate: time.Minute, At: t0}, true},
		{"moved, too soon", &ledger.QueuePlace{Position: 2, Of: 2, Estimate: time.Minute, At: t0.Add(time.Second)}, false},
	}
	for _, tt := range tests {
		if got := Due(tt.old, place); got != tt.want {
			t.Errorf("%s: Due = %v, want %v", tt.name, got, tt.want)
		}
	}
}
