package evidence_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/action/evidence"
)

// parseDecisions reads data as the agent's decisions.json, through NewLedger.
func parseDecisions(data []byte) ([]evidence.Decision, error) {
	l := evidence.NewLedger(data, true)
	if l.Status != evidence.LedgerOK {
		return nil, errors.New(l.Error)
	}
	return l.Decisions, nil
}

func TestParseDecisions(t *testing.T) {
	ds, err := parseDecisions([]byte(`{
	  "schema_version": 1,
	  "decisions": [
	    {"question": "a", "choice": "x", "confidence": 0.9},
	    {"question": "b", "choice": "x", "confidence": 0.2, "rationale": "r", "alternatives": ["y", "z"]},
	    {"question": "c", "choice": "x", "confidence": 0.9},
	    {"question": "d", "choice": "x", "confidence": 0},
	    {"question": "e", "choice": "x", "confidence": 1},
	    {"question": "f", "choice": "x", "confidence": 0.2}
	  ]
	}`))
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, d := range ds {
		order = append(order, d.Question)
	}
	if got := strings.Join(order, ""); got != "dbface" {
		t.Errorf("order = %s, want dbface (least confident first, ties in file order)", got)
	}
	if ds[1].Rationale != "r" || len(ds[1].Alternatives) != 2 {
		t.Errorf("fields lost: %+v", ds[1])
	}

	empty, err := parseDecisions([]byte(`{"schema_version":1,"decisions":[]}`))
	if err != nil || len(empty) != 0 {
		t.Errorf("an empty ledger = %v, %v", empty, err)
	}
}

func TestParseDecisionsHostile(t *testing.T) {
	one := func(decision string) string {
		return `{"schema_version": 1, "decisions": [` + decision + `]}`
	}
	many := make([]string, 101)
	for i := range many {
		many[i] = `{"question": "q", "choice": "c", "confidence": 0.5}`
	}
	tests := []struct {
		name string
		data string
		want string // part of the error
	}{
		{"too big", `{"schema_version": 1, "decisions": []}` + strings.Repeat(" ", 256<<10), "at most 262144 are read"},
		{"empty", ``, "not valid JSON"},
		{"not JSON", `decisions: none`, "not valid JSON"},
		{"NaN literal", one(`{"question": "q", "choice": "c", "confidence": NaN}`), "not valid JSON"},
		{"Infinity literal", one(`{"question": "q", "choice": "c", "confidence": Infinity}`), "not valid JSON"},
		{"NaN as a string", one(`{"question": "q", "choice": "c", "confidence": "NaN"}`), "/decisions/0/confidence"},
		{"huge number", one(`{"question": "q", "choice": "c", "confidence": 1e999}`), "/decisions/0/confidence"},
		{"confidence above 1", one(`{"question": "q", "choice": "c", "confidence": 1.5}`), "/decisions/0/confidence"},
		{"negative confidence", one(`{"question": "q", "choice": "c", "confidence": -0.1}`), "/decisions/0/confidence"},
		{"confidence missing", one(`{"question": "q", "choice": "c"}`), "confidence"},
		{"confidence null", one(`{"question": "q", "choice": "c", "confidence": null}`), "/decisions/0/confidence"},
		{"question a number", one(`{"question": 7, "choice": "c", "confidence": 0.5}`), "/decisions/0/question"},
		{"empty question", one(`{"question": "", "choice": "c", "confidence": 0.5}`), "/decisions/0/question"},
		{"question too long", one(`{"question": "` + strings.Repeat("q", 501) + `", "choice": "c", "confidence": 0.5}`), "/decisions/0/question"},
		{"alternative a number", one(`{"question": "q", "choice": "c", "confidence": 0.5, "alternatives": [1]}`), "/decisions/0/alternatives/0"},
		{"unknown field in a decision", one(`{"question": "q", "choice": "c", "confidence": 0.5, "approve": true}`), "approve"},
		{"unknown top-level field", `{"schema_version": 1, "decisions": [], "verdict": "approve"}`, "verdict"},
		{"wrong version", `{"schema_version": 2, "decisions": []}`, "/schema_version"},
		{"version as a string", `{"schema_version": "1", "decisions": []}`, "/schema_version"},
		{"version missing", `{"decisions": []}`, "schema_version"},
		{"decisions missing", `{"schema_version": 1}`, "decisions"},
		{"decisions an object", `{"schema_version": 1, "decisions": {"question": "q"}}`, "/decisions"},
		{"decisions null", `{"schema_version": 1, "decisions": null}`, "/decisions"},
		{"too many decisions", `{"schema_version": 1, "decisions": [` + strings.Join(many, ",") + `]}`, "/decisions"},
		{"top level an array", `[{"question": "q", "choice": "c", "confidence": 0.5}]`, "(root)"},
		{"top level null", `null`, "(root)"},
		{"duplicate key", `{"schema_version": 1, "decisions": [], "decisions": [{"question": "q", "choice": "c", "confidence": 0.5}]}`, `duplicate key "decisions"`},
		{"duplicate key in a decision", one(`{"question": "q", "choice": "c", "confidence": 0.1, "confidence": 0.9}`), `/decisions/0: duplicate key "confidence"`},
		{"trailing data", `{"schema_version": 1, "decisions": []} {"schema_version": 1, "decisions": []}`, "trailing data"},
		{"invalid UTF-8", one(`{"question": "q` + "\xff" + `", "choice": "c", "confidence": 0.5}`), "UTF-8"},
		{"deep nesting", `{"schema_version": 1, "decisions": ` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}`, "nested deeper"},
		{"long hostile key", `{"` + strings.Repeat("k", 10000) + `": 1, "` + strings.Repeat("k", 10000) + `": 2}`, "duplicate key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds, err := parseDecisions([]byte(tt.data))
			if err == nil {
				t.Fatalf("accepted: %+v", ds)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want one naming %q", err, tt.want)
			}
			if len(err.Error()) >= 1000 { // NewLedger keeps 1,000 characters: an error that long was cut
				t.Errorf("error is %d bytes long", len(err.Error()))
			}
		})
	}
}

func TestNewLedger(t *testing.T) {
	if l := evidence.NewLedger(nil, false); l.Status != evidence.LedgerAbsent || l.Decisions != nil {
		t.Errorf("absent: %+v", l)
	}
	l := evidence.NewLedger([]byte(`{"schema_version": 1, "decisions": [{"question": "q", "choice": "c", "confidence": 2}]}`), true)
	if l.Status != evidence.LedgerInvalid || !strings.Contains(l.Error, "/decisions/0/confidence") {
		t.Errorf("invalid: %+v", l)
	}
	l = evidence.NewLedger([]byte(strings.Repeat("x", 256<<10+1)), true)
	if l.Status != evidence.LedgerInvalid || len(l.Error) > 1000 {
		t.Errorf("too big: %+v", l)
	}
	l = evidence.NewLedger([]byte(`{"schema_version": 1, "decisions": [{"question": "q", "choice": "c", "confidence": 0.5}]}`), true)
	if l.Status != evidence.LedgerOK || fmt.Sprint(l.Decisions) != "[{q c  0.5 []}]" {
		t.Errorf("ok: %+v", l)
	}
}
