package wire

import (
	"encoding/json"
	"testing"
)

// TestWorkItem: a work item's name parses only when whole, writes back as it was read,
// and is the same string in JSON, where decoding parses it.
func TestWorkItem(t *testing.T) {
	tests := []struct {
		in   string
		want WorkItem
		ok   bool
	}{
		{"acme/widgets#7", WorkItem{Repository: "acme/widgets", Issue: 7}, true},
		{"Acme/Widgets#12", WorkItem{Repository: "Acme/Widgets", Issue: 12}, true},
		{"acme/widgets#0", WorkItem{}, false},
		{"acme/widgets#-1", WorkItem{}, false},
		{"acme/widgets#7x", WorkItem{}, false},
		{"acme/widgets#", WorkItem{}, false},
		{"acme#7", WorkItem{}, false},
		{"acme/a/b#7", WorkItem{}, false},
		{"acme/widgets", WorkItem{}, false},
		{"/widgets#1", WorkItem{}, false},
		{"acme/#1", WorkItem{}, false},
		{"#1", WorkItem{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseWorkItem(tt.in)
			if (err == nil) != tt.ok || got != tt.want {
				t.Fatalf("ParseWorkItem = %+v, %v; want %+v, ok %v", got, err, tt.want, tt.ok)
			}
			var decoded struct {
				W WorkItem `json:"w"`
			}
			raw, _ := json.Marshal(map[string]string{"w": tt.in})
			if err := json.Unmarshal(raw, &decoded); (err == nil) != tt.ok || decoded.W != tt.want {
				t.Fatalf("JSON %s decodes to %+v, %v", raw, decoded.W, err)
			}
			if !tt.ok {
				return
			}
			if got.String() != tt.in {
				t.Fatalf("String = %q, want %q", got.String(), tt.in)
			}
			back, err := json.Marshal(decoded)
			if err != nil || string(back) != string(raw) {
				t.Fatalf("JSON %s encodes back to %s, %v", raw, back, err)
			}
		})
	}
	t.Run("the zero work item is the empty string", func(t *testing.T) {
		raw, err := json.Marshal(RunClaims{})
		if err != nil {
			t.Fatal(err)
		}
		var c RunClaims
		if err := json.Unmarshal(raw, &c); err != nil || c.WorkItem != (WorkItem{}) || (WorkItem{}).String() != "" {
			t.Fatalf("%s decodes to %+v, %v", raw, c.WorkItem, err)
		}
	})
}
