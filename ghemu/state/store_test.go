package state_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/bumperdev/bumper/ghemu/state"
)

// openFixture opens a copy of a state file in a new state directory.
func openFixture(t *testing.T, name string) (*state.Store, string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, state.StateFile), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := state.Open(state.Options{Dir: dir}, func(*state.World) error {
		t.Fatal("seeded a directory that holds a world")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return s, dir
}

// TestOpensAStateFileOfTheUnsplitEmulator: a state directory written by the emulator
// before it was split into rooms (testdata/state-unsplit.json: an issue, a pull request
// with a review comment, a check run, a status, a queued run, deliveries, a token)
// loads whole, and saves back as the same JSON, so `bumper emulator --state DIR`
// continues where an older one stopped.
func TestOpensAStateFileOfTheUnsplitEmulator(t *testing.T) {
	s, dir := openFixture(t, "state-unsplit.json")
	s.Do(func(w *state.World) {
		rp := w.Repo("ACME", "Widgets")
		if rp == nil {
			t.Fatal("no acme/widgets")
		}
		tests := []struct {
			name      string
			got, want any
		}{
			{"the issue", rp.Issue(1).Title + " " + rp.Issue(1).Labels[0], "Count to 4 agent:implement"},
			{"its comment", len(rp.Comments(1)), 1},
			{"the pull request", rp.Pull(2).Head, "bumper/1-1"},
			{"its review comment", rp.ReviewComments(2)[0].Body, "here"},
			{"the check run", rp.CheckRunsOn(rp.Pull(2).HeadSHA)[0].Name, "bumper/verdict"},
			{"the status", rp.LatestStatus(rp.Pull(2).HeadSHA, "CI").State, "success"},
			{"the run", rp.Runs()[0].Inputs["stage"] + " " + rp.Runs()[0].Status, "implement queued"},
			{"the protection", rp.Protection("main").RequiredChecks, []string{"bumper/verdict"}},
			{"the collaborator", rp.Collaborator("Maintainer"), "write"},
			{"the users", len(w.Users()), 4},
			{"the installation", w.InstallationFor(rp).Account, "acme"},
			{"the token", len(w.Tokens()), 1},
			{"the deliveries", len(w.Deliveries()), 2},
			{"the App", w.App().Slug, "bumper"},
			{"the next ID", w.NextID(), int64(1030)},
		}
		for _, tc := range tests {
			if !reflect.DeepEqual(tc.got, tc.want) {
				t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
			}
		}
		w.MarkChanged()
	})
	var was, is map[string]any
	for path, v := range map[string]*map[string]any{filepath.Join("testdata", "state-unsplit.json"): &was, filepath.Join(dir, state.StateFile): &is} {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatal(err)
		}
	}
	was["next_id"] = float64(1030) // the test took one
	if !reflect.DeepEqual(was, is) {
		t.Errorf("saved state differs from the one loaded:\nloaded %v\nsaved  %v", was, is)
	}
}

// TestDoSavesWhatChanged: a transaction that changes nothing writes nothing; one that
// changes the world saves it before the lock is let go, and a new Store reads it back.
func TestDoSavesWhatChanged(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, state.StateFile)
	s, err := state.Open(state.Options{Dir: dir}, func(w *state.World) error {
		w.AddUser(&state.User{ID: w.NextID(), Login: "mae", Type: "User"})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Do(func(w *state.World) {
		if w.User("MAE") == nil {
			t.Error("the seeded user is missing")
		}
	})
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a transaction that changed nothing wrote the state: %v", err)
	}
	var id int64
	s.Do(func(w *state.World) { id = w.NextID() })
	if id != 1002 {
		t.Errorf("second ID = %d, want 1002 (a new world's IDs start at 1001)", id)
	}
	again, err := state.Open(state.Options{Dir: dir}, func(*state.World) error {
		t.Fatal("seeded a directory that holds a world")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	again.Do(func(w *state.World) {
		if got := w.NextID(); got != 1003 || w.User("mae") == nil {
			t.Errorf("reloaded world: next ID %d (want 1003), user %v", got, w.User("mae"))
		}
	})
}

// TestFailedSeedKeepsNothing: a seed that fails leaves no world behind for the next
// start to load half of.
func TestFailedSeedKeepsNothing(t *testing.T) {
	dir := t.TempDir()
	_, err := state.Open(state.Options{Dir: dir}, func(w *state.World) error {
		w.AddUser(&state.User{ID: w.NextID(), Login: "mae", Type: "User"})
		return errors.New("the git repository could not be created")
	})
	if err == nil {
		t.Fatal("Open succeeded with a failing seed")
	}
	if _, err := os.Stat(filepath.Join(dir, state.StateFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a failed seed left a state file: %v", err)
	}
}

// TestUnreadableStateIsAnError: a damaged state file is refused with what to do, never
// replaced by a new world.
func TestUnreadableStateIsAnError(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, state.StateFile), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := state.Open(state.Options{Dir: dir, Now: time.Now}, func(*state.World) error { return nil })
	if err == nil {
		t.Fatal("Open accepted a damaged state file")
	}
}
