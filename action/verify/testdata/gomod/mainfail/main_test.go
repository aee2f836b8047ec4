// Package mainfail's tests pass, but its TestMain fails the package.
package mainfail

import (
	"fmt"
	"os"
	"testing"
)

func TestOK(t *testing.T) {}

func TestMain(m *testing.M) {
	m.Run()
	fmt.Println("TestMain: the database did not shut down")
	os.Exit(3)
}
