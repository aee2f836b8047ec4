package ghhtml

import (
	"testing"

	"golang.org/x/net/html/atom"
)

// TestKept: the elements an attacker reaches for to hide or run something are dropped;
// the ones issues use every day are kept; the footnotes' section is the renderer's own.
func TestKept(t *testing.T) {
	for _, tt := range []struct {
		a          atom.Atom
		kept, adds bool
	}{
		{atom.Script, false, false}, {atom.Style, false, false}, {atom.Iframe, false, false},
		{atom.Svg, false, false}, {atom.Math, false, false}, {atom.Font, false, false},
		{atom.Form, false, false}, {atom.Button, false, false}, {atom.Section, false, true},
		{atom.Sub, true, false}, {atom.Sup, true, false}, {atom.Small, true, false},
		{atom.Details, true, false}, {atom.Summary, true, false}, {atom.Img, true, false},
		{atom.Input, true, false}, {atom.A, true, false},
	} {
		t.Run(tt.a.String(), func(t *testing.T) {
			if Kept(tt.a) != tt.kept || AddedByRenderer(tt.a) != tt.adds {
				t.Fatalf("Kept = %v, AddedByRenderer = %v; want %v, %v", Kept(tt.a), AddedByRenderer(tt.a), tt.kept, tt.adds)
			}
		})
	}
}
