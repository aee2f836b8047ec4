package rest_test

import (
	"os"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/ghemu"
)

// TestDocsListEveryRoute keeps the route table of docs/emulator-rest.md true.
func TestDocsListEveryRoute(t *testing.T) {
	readme, err := os.ReadFile("../../docs/emulator-rest.md")
	if err != nil {
		t.Fatal(err)
	}
	e, err := ghemu.New(ghemu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, r := range e.Routes() {
		method, path, _ := strings.Cut(r, " ")
		row := "| `" + method + "` | `" + strings.ReplaceAll(path, "...}", "}") + "` |"
		if !strings.Contains(string(readme), row) {
			t.Errorf("docs/emulator-rest.md lacks the route row %s", row)
		}
	}
}
