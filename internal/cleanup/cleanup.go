// Package cleanup is the reverse-order cleanup stack of the project's lifecycles (a
// microVM, a sandbox session, the firewall): each step that makes something pushes how
// to undo it, and the end undoes everything in reverse, once, whatever failed on the way.
package cleanup

import (
	"errors"
	"fmt"
	"sync"

	"github.com/rs/zerolog"
)

// LogKey is the log key naming the step whose undoing failed.
const LogKey = "cleanup"

// Stack is a reverse-order cleanup stack, safe for concurrent use: a Kill from another
// goroutine may run it while a Start still pushes.
type Stack struct {
	mu    sync.Mutex
	steps []step
}

type step struct {
	name string
	fn   func() error
}

// Push adds fn, which undoes what is named name (a noun: "network namespace"); the
// name goes into the error and the log line when fn fails.
func (s *Stack) Push(name string, fn func() error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.steps = append(s.steps, step{name, fn})
}

// Len is the number of steps still to undo.
func (s *Stack) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.steps)
}

// Run undoes every step, last pushed first, and empties the stack, so a second Run
// undoes nothing twice. A step that fails does not stop the others: each failure is
// logged to log and returned, joined.
func (s *Stack) Run(log *zerolog.Logger) error {
	s.mu.Lock()
	steps := s.steps
	s.steps = nil
	s.mu.Unlock()
	var errs []error
	for i := len(steps) - 1; i >= 0; i-- {
		if err := steps[i].fn(); err != nil {
			log.Warn().Err(err).Str(LogKey, steps[i].name).Msg("cleanup failed")
			errs = append(errs, fmt.Errorf("failed to clean up the %s: %w", steps[i].name, err))
		}
	}
	return errors.Join(errs...)
}
