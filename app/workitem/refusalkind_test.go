package workitem

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRefusalKinds walks every refuse call of the package: each literal reason must
// have a kind other than RefusalOther, so a metric's reason label never loses a new
// refusal in "other". Reasons built elsewhere (a void's why, a parser's error) are in
// the table below.
func TestRefusalKinds(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	literals := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			if id, ok := call.Fun.(*ast.Ident); !ok || id.Name != "refuse" {
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok {
				t.Errorf("%s: refuse's format is not a literal", fset.Position(call.Pos()))
				return true
			}
			format, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Fatal(err)
			}
			if format == "%s" || format == "%v" {
				return true // built elsewhere: the table below
			}
			literals++
			if k := RefusalKindOf(format); k == RefusalOther {
				t.Errorf("%s: refusal %q has no kind: add its words to refusalKinds", fset.Position(call.Pos()), format)
			}
			return true
		})
	}
	if literals < 20 {
		t.Fatalf("found %d refusals with a literal reason; the walk missed them", literals)
	}

	_, _, parseErr := ParseWorkItem("not-a-work-item")
	tests := []struct {
		reason, want string
	}{
		{parseErr.Error(), RefusalBadRequest},
		{"the base branch main moved from 0123456789ab to ba9876543210 after approval", RefusalApproval},
		{"the issue's title or body changed after approval", RefusalApproval},
		{"the plan comment was deleted", RefusalApproval},
		{"the record names no plan comment", RefusalApproval},
		{"no approval holds", RefusalApproval},
		{"illegal state transition: running → done", RefusalState},
		{"verdict \"lgtm\": want approve, request_changes or comment", RefusalInvalidReport},
		{"the nonce of attempt 2 was already used", RefusalNonce},
		// Reasons that name the state awaiting-approval are about the state, not an approval.
		{"acme/widgets#1 is awaiting-approval; no implement run may start", RefusalState},
		{"a implement run cannot report awaiting-approval", RefusalStage},
		{"illegal state transition: verifying → verifying (from verifying only [awaiting-approval done] are allowed)", RefusalState},
		{"something nobody wrote yet", RefusalOther},
	}
	for _, tt := range tests {
		t.Run(tt.want+"/"+tt.reason, func(t *testing.T) {
			if got := (&Refusal{Reason: tt.reason}).Kind(); got != tt.want {
				t.Errorf("Kind() = %q, want %q", got, tt.want)
			}
		})
	}
}
