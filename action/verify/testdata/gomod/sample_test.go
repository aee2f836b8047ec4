// Package sample is a module whose tests pass, fail, skip and panic, for the parser
// of `go test -json` (action/verify). Not part of Bumper's build: it lives under
// testdata with its own go.mod.
package sample

import "testing"

func TestPass(t *testing.T) { t.Log("fine") }

func TestFail(t *testing.T) { t.Errorf("got 1, want 2") }

func TestSkip(t *testing.T) { t.Skip("not today") }

func TestSub(t *testing.T) {
	t.Run("ok", func(t *testing.T) {})
	t.Run("bad", func(t *testing.T) { t.Fatal("sub broke") })
}

// TestPanic comes last: a panic ends the package's test binary.
func TestPanic(t *testing.T) {
	var m map[string]int
	m["x"] = 1
}
