package state

import (
	"crypto/rsa"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/internal/fsutil"
)

// Files of the state directory.
const (
	// StateFile holds the World, saved whole after every change.
	StateFile = "state.json"
	// AppKeyFile holds the App's private key, as GitHub lets an admin download it.
	AppKeyFile = "app-private-key.pem"
)

// appKeyPath is the file of the App's key in the state directory dir.
func appKeyPath(dir string) string { return filepath.Join(dir, AppKeyFile) }

// firstID is where a new world's IDs start from: the first object gets 1001.
const firstID = 1000

// Store is the World and the one lock that guards it (see the package documentation). It keeps the world in
// a state directory, so an emulator restarted on the same directory continues where it
// stopped.
type Store struct {
	mu        sync.Mutex
	w         *World
	dir       string
	log       zerolog.Logger
	ephemeral bool
}

// Options configure Open.
type Options struct {
	// Dir is the state directory; it must exist.
	Dir string
	// Now is the world's clock; nil: time.Now.
	Now func() time.Time
	// Logger receives the failures to save the state, which have nobody else to go to.
	Logger zerolog.Logger
	// NewKey makes the App's key when Dir has none; nil: a new 2048-bit RSA key.
	NewKey func() (*rsa.PrivateKey, error)
	// Ephemeral worlds are never written: nothing outlives the process (an emulator
	// in a temporary directory, removed when it closes).
	Ephemeral bool
}

// Open loads the world saved in opts.Dir, and the App's key (created when the directory
// has none). When the directory holds no world yet, seed builds a new one; if seed
// fails, nothing is kept. The new world is saved by the first Do that changes it, or
// Save.
func Open(opts Options, seed func(w *World) error) (*Store, error) {
	s := &Store{dir: opts.Dir, log: opts.Logger, ephemeral: opts.Ephemeral}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	key, err := LoadOrCreateKey(appKeyPath(opts.Dir), opts.NewKey)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(opts.Dir, StateFile)
	raw, err := os.ReadFile(path)
	switch {
	case err == nil:
		s.w = newWorld()
		if err := s.w.decode(raw); err != nil {
			return nil, fmt.Errorf("failed to parse %s: %w; remove the state directory to start afresh", path, err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("failed to read the emulator state: %w", err)
	}
	fresh := s.w == nil
	if fresh {
		s.w = newWorld()
		s.w.nextID = firstID
	}
	s.w.now, s.w.appKey, s.w.keyPath = now, key, appKeyPath(opts.Dir)
	if fresh {
		if err := seed(s.w); err != nil {
			return nil, err
		}
	}
	s.w.changed = false
	return s, nil
}

// Do runs fn with the world, holding the lock; fn must not call Do (it is not
// reentrant). If fn changed the world, it is saved before the lock is let go; a failure
// to save is logged, since the change was made and nobody is left to tell.
func (s *Store) Do(fn func(w *World)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.w.changed = false
	fn(s.w)
	if s.w.changed {
		s.w.changed = false
		if err := s.save(); err != nil {
			s.log.Error().Err(err).Msg("failed to save emulator state")
		}
	}
}

// Save writes the world now.
func (s *Store) Save() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.save()
}

func (s *Store) save() error {
	if s.ephemeral {
		return nil
	}
	raw, err := s.w.encode()
	if err != nil {
		return fmt.Errorf("failed to encode the emulator state: %w", err)
	}
	// Every change rewrites the world: a sync each time was most of the emulator's
	// system time, and a restarted emulator finds the file either way.
	return fsutil.ReplaceFile(filepath.Join(s.dir, StateFile), raw, 0o600)
}
