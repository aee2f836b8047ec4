package workitem

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestRefusalLabels pins every kind's metric label (bumper_token_exchanges_total's
// reason, which dashboards and alerts match and docs/operating.md lists): a kind added
// without a row here, or a label changed, fails.
func TestRefusalLabels(t *testing.T) {
	labels := map[RefusalKind]string{
		RefusalBadRequest:    "bad_request",
		RefusalOIDC:          "oidc",
		RefusalRunToken:      "run_token",
		RefusalIdentity:      "identity",
		RefusalUnknownItem:   "unknown_item",
		RefusalAttempt:       "attempt",
		RefusalNonce:         "nonce",
		RefusalApproval:      "approval",
		RefusalState:         "state",
		RefusalStage:         "stage",
		RefusalInvalidReport: "invalid_report",
		RefusalPolicy:        "policy",
		RefusalDependency:    "dependency",
		RefusalBudget:        "budget",
		RefusalPaused:        "paused",
	}
	if len(RefusalKinds()) != len(labels) {
		t.Fatalf("RefusalKinds has %d kinds, the table %d", len(RefusalKinds()), len(labels))
	}
	for _, k := range RefusalKinds() {
		t.Run(string(k), func(t *testing.T) {
			want, ok := labels[k]
			if !ok {
				t.Fatalf("kind %q has no label in the table", k)
			}
			ref := Refuse(k, "the nonce of attempt %d was already used", 2)
			if got := string(ref.Kind()); got != want {
				t.Fatalf("label %q, want %q: a kind is its label, whatever the reason says", got, want)
			}
			if ref.Reason() != "the nonce of attempt 2 was already used" || ref.Error() != "refused: "+ref.Reason() {
				t.Fatalf("reason %q, error %q", ref.Reason(), ref.Error())
			}
		})
	}
}

// TestRefusalsHaveTheirKindWhereMade walks every call that makes a refusal in this
// package and in app/runnerapi (the HTTP layer's own refusals): its kind must be one of
// the Refusal* constants, named at the call, not a variable, a conversion or a literal,
// and no Refusal is built but by Refuse. So a refusal's kind is decided where it is
// made, by its author, and never read back from its words.
func TestRefusalsHaveTheirKindWhereMade(t *testing.T) {
	names := map[string]bool{}
	fset := token.NewFileSet()
	decl, err := parser.ParseFile(fset, "refusal.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range decl.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
			for _, spec := range g.Specs {
				for _, n := range spec.(*ast.ValueSpec).Names {
					names[n.Name] = true
				}
			}
		}
	}
	if len(names) != len(RefusalKinds()) {
		t.Fatalf("refusal.go declares %d kinds, RefusalKinds lists %d", len(names), len(RefusalKinds()))
	}

	here, _ := filepath.Glob("*.go")
	http, _ := filepath.Glob("../runnerapi/*.go")
	calls := map[string]int{}
	for _, name := range append(here, http...) {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		if name == "refusal.go" {
			continue // Refuse itself
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CompositeLit:
				if id := kindName(n.Type); id == "Refusal" {
					t.Errorf("%s: a Refusal built as a literal; use Refuse with its kind", fset.Position(n.Pos()))
				}
			case *ast.CallExpr:
				if !makesRefusal(n.Fun) {
					return true
				}
				calls[filepath.Dir(name)]++
				if len(n.Args) < 2 || !names[kindName(n.Args[0])] {
					t.Errorf("%s: a refusal whose kind is not one of the Refusal* constants named at the call", fset.Position(n.Pos()))
				}
			}
			return true
		})
	}
	// The walk must see the refusals it vouches for: 40-odd here, 4 in the HTTP layer.
	if calls["."] < 40 || calls["../runnerapi"] < 4 {
		t.Fatalf("found %v refusals; the walk missed them", calls)
	}
}

// makesRefusal reports whether a call's function is refuse, Refuse or workitem.Refuse.
func makesRefusal(fn ast.Expr) bool {
	switch fn := fn.(type) {
	case *ast.Ident:
		return fn.Name == "refuse" || fn.Name == "Refuse"
	case *ast.SelectorExpr:
		pkg, ok := fn.X.(*ast.Ident)
		return ok && pkg.Name == "workitem" && fn.Sel.Name == "Refuse"
	}
	return false
}

// kindName is the name an expression ends in: RefusalState for RefusalState and for
// workitem.RefusalState; "" for anything else.
func kindName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	}
	return ""
}
