package redrive

import (
	"context"
	"slices"
	"testing"
	"time"
)

func TestSchedule(t *testing.T) {
	t0 := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	var s Schedule
	for _, p := range []Pending{
		{Key: "b", Item: "o/r#2", Due: t0.Add(2 * time.Minute)},
		{Key: "a", Item: "o/r#1", Due: t0.Add(time.Minute)},
		{Key: "c", Item: "o/r#3", Due: t0.Add(time.Hour)},
	} {
		if !s.Add(p) {
			t.Fatalf("Add(%s) refused a new key", p.Key)
		}
	}
	if s.Add(Pending{Key: "a", Item: "o/r#1", Due: t0}) {
		t.Fatal("Add took a key already scheduled")
	}
	tests := []struct {
		at   time.Duration
		want []string
	}{
		{0, nil},
		{2 * time.Minute, []string{"a", "b"}}, // oldest first; due exactly now counts
		{2 * time.Minute, nil},                // taken once
		{time.Hour, []string{"c"}},
	}
	for _, tt := range tests {
		var got []string
		for _, p := range s.TakeDue(t0.Add(tt.at)) {
			got = append(got, p.Key)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("TakeDue(t0+%v) = %q, want %q", tt.at, got, tt.want)
		}
	}
	if !s.Add(Pending{Key: "a", Due: t0}) {
		t.Error("a key taken is not scheduled again")
	}
}

func TestContext(t *testing.T) {
	if k := Of(context.Background()); k != "" {
		t.Errorf("Of(a plain context) = %q", k)
	}
	if k := Of(With(context.Background(), "o/r#1-abc-1")); k != "o/r#1-abc-1" {
		t.Errorf("Of(With(key)) = %q", k)
	}
}
