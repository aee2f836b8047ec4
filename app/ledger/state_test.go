package ledger

import (
	"errors"
	"testing"
)

// legal is written out independently of the transitions table, so a change to the table
// must be made twice: once on purpose, once here.
var legal = map[[2]State]bool{
	{Requested, Planning}: true, {Requested, AwaitingApproval}: true, {Requested, Stopped}: true,
	{Requested, Failed}: true, {Requested, Error}: true,
	{Planning, AwaitingApproval}: true, {Planning, Stopped}: true, {Planning, Failed}: true, {Planning, Error}: true,
	{AwaitingApproval, Running}: true, {AwaitingApproval, Planning}: true, {AwaitingApproval, Stopped}: true,
	{AwaitingApproval, Failed}: true, {AwaitingApproval, Error}: true,
	{Running, Verifying}: true, {Running, Reviewing}: true, {Running, InReview}: true, {Running, AwaitingApproval}: true,
	{Running, Done}: true, {Running, Stopped}: true, {Running, Failed}: true, {Running, Error}: true,
	{Verifying, Running}: true, {Verifying, Reviewing}: true, {Verifying, InReview}: true, {Verifying, Done}: true,
	{Verifying, AwaitingApproval}: true, {Verifying, Stopped}: true, {Verifying, Failed}: true, {Verifying, Error}: true,
	{Reviewing, InReview}: true, {Reviewing, Done}: true, {Reviewing, Stopped}: true, {Reviewing, Failed}: true, {Reviewing, Error}: true,
	{InReview, Running}: true, {InReview, Reviewing}: true, {InReview, Done}: true, {InReview, Stopped}: true, {InReview, Failed}: true, {InReview, Error}: true,
	{Failed, AwaitingApproval}: true, {Failed, Requested}: true,
	{Stopped, AwaitingApproval}: true, {Stopped, Requested}: true,
	{Error, Requested}: true,
}

func TestTransitionEveryPair(t *testing.T) {
	for _, from := range States() {
		for _, to := range States() {
			want := legal[[2]State{from, to}]
			t.Run(string(from)+"→"+string(to), func(t *testing.T) {
				err := Transition(from, to)
				if want && err != nil {
					t.Fatalf("legal move refused: %v", err)
				}
				if !want {
					if err == nil {
						t.Fatal("illegal move allowed")
					}
					if !errors.Is(err, ErrIllegalTransition) {
						t.Fatalf("error %v does not wrap ErrIllegalTransition", err)
					}
				}
				rec := &Record{Repository: "o/r", Issue: 1, State: from}
				if got := rec.MoveTo(to, "because") == nil; got != want {
					t.Fatalf("MoveTo allowed=%v, want %v", got, want)
				}
			})
		}
	}
}

func TestTransitionUnknownState(t *testing.T) {
	if err := Transition("bogus", Running); err == nil {
		t.Fatal("a move from an unknown state was allowed")
	}
	if _, err := ParseState("bogus"); err == nil {
		t.Fatal("ParseState accepted an unknown state")
	}
	for _, s := range States() {
		got, err := ParseState(string(s))
		if err != nil || got != s {
			t.Fatalf("ParseState(%q) = %q, %v", s, got, err)
		}
		if s.Label() != "bumper:"+string(s) {
			t.Fatalf("label of %s is %q", s, s.Label())
		}
	}
}

func TestNoTransitionOutOfDone(t *testing.T) {
	for _, to := range States() {
		if CanTransition(Done, to) {
			t.Errorf("done → %s is allowed; a merged item must stay done", to)
		}
	}
}
