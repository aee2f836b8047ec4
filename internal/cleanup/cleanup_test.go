package cleanup

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"
)

func TestRunUndoesInReverseOnce(t *testing.T) {
	var got []string
	var s Stack
	for _, name := range []string{"run directory", "network namespace", "listener"} {
		s.Push(name, func() error { got = append(got, name); return nil })
	}
	log := zerolog.Nop()
	if err := s.Run(&log); err != nil {
		t.Fatal(err)
	}
	if want := "listener,network namespace,run directory"; strings.Join(got, ",") != want {
		t.Errorf("undone in the order %v, want %s", got, want)
	}
	if err := s.Run(&log); err != nil || len(got) != 3 || s.Len() != 0 {
		t.Errorf("a second Run undid something again: %v (err %v)", got, err)
	}
}

func TestRunGoesOnPastFailures(t *testing.T) {
	var s Stack
	ran := 0
	s.Push("first", func() error { ran++; return nil })
	s.Push("TAP", func() error { ran++; return errors.New("busy") })
	s.Push("last", func() error { ran++; return errors.New("gone") })
	var buf strings.Builder
	log := zerolog.New(&buf)
	err := s.Run(&log)
	if ran != 3 {
		t.Errorf("%d of 3 steps ran: a failure stopped the others", ran)
	}
	for _, want := range []string{"failed to clean up the TAP: busy", "failed to clean up the last: gone"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not say %q", err, want)
		}
	}
	if !strings.Contains(buf.String(), `"cleanup":"TAP"`) {
		t.Errorf("the failure is not logged under its name: %s", buf.String())
	}
}

func TestConcurrentPushAndRun(t *testing.T) {
	var s Stack
	var mu sync.Mutex
	undone := 0
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Push("step", func() error { mu.Lock(); undone++; mu.Unlock(); return nil })
		}()
	}
	wg.Wait()
	log := zerolog.Nop()
	var runs sync.WaitGroup
	for range 4 {
		runs.Add(1)
		go func() { defer runs.Done(); _ = s.Run(&log) }()
	}
	runs.Wait()
	if undone != 50 {
		t.Errorf("%d steps undone, want each of the 50 exactly once", undone)
	}
}
