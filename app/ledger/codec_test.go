package ledger

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestCodecRoundTrip(t *testing.T) {
	r := sampleRecord()
	r.Reason = "closing --> <!-- bumper:record\n{} tricks"
	body, err := Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	if !IsStatusComment(body) {
		t.Fatal("encoded comment lacks the status marker")
	}
	if strings.Count(body, RecordOpen) != 1 {
		t.Fatalf("a reason forged a second record marker:\n%s", body)
	}
	got, err := Decode(body)
	if err != nil {
		t.Fatalf("Decode: %v\n%s", err, body)
	}
	if !reflect.DeepEqual(got, r) {
		t.Fatalf("round trip changed the record:\n got %+v\nwant %+v", got, r)
	}
	if i := strings.Index(body, RecordOpen); !strings.Contains(body[:i], "state: `running`") {
		t.Fatalf("human summary missing above the record:\n%s", body[:i])
	}
}

func TestDecodeRejects(t *testing.T) {
	good := sampleRecord()
	encodeWith := func(change func(m map[string]any)) string {
		raw, _ := json.Marshal(good)
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		change(m)
		out, _ := json.Marshal(m)
		return StatusMarker + "\nsummary\n" + RecordOpen + string(out) + RecordClose
	}
	tests := []struct {
		name, body, want string
	}{
		{"not a status comment", "hello", "no bumper record"},
		{"no record", StatusMarker + "\nonly a summary", "no bumper record"},
		{"unclosed", StatusMarker + "\n" + RecordOpen + "{}", "not closed"},
		{"not json", StatusMarker + "\n" + RecordOpen + "nope" + RecordClose, "failed to parse"},
		{"unknown field", encodeWith(func(m map[string]any) { m["extra"] = 1 }), "unknown field"},
		{"future schema", encodeWith(func(m map[string]any) { m["schema"] = 2 }), "schema 2"},
		{"zero revision", encodeWith(func(m map[string]any) { m["revision"] = 0 }), "revision 0"},
		{"bad state", encodeWith(func(m map[string]any) { m["state"] = "merged" }), "state \"merged\""},
		{"bad repository", encodeWith(func(m map[string]any) { m["repository"] = "widgets" }), "owner/name"},
		{"bad issue", encodeWith(func(m map[string]any) { m["issue"] = 0 }), "issue 0"},
		{"no requester", encodeWith(func(m map[string]any) { m["requester"] = "" }), "no requester"},
		{"misnumbered attempt", encodeWith(func(m map[string]any) {
			m["attempts"].([]any)[0].(map[string]any)["number"] = 5
		}), "numbered 5"},
		{"two records", func() string { b, _ := Encode(good); return b + RecordOpen + "{}" + RecordClose }(), "more than one"},
		{"trailing data", StatusMarker + "\n" + RecordOpen + `{"schema":1} {}` + RecordClose, "after the JSON"},
		{"oversized", StatusMarker + strings.Repeat("x", maxRecordBytes), "more than GitHub allows"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode(tt.body)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Decode error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	good, _ := Encode(sampleRecord())
	f.Add(good)
	f.Add(StatusMarker + "\n" + RecordOpen + "{}" + RecordClose)
	f.Add(StatusMarker + "\n" + RecordOpen + `{"schema":1,"revision":1}`)
	f.Add("")
	f.Fuzz(func(t *testing.T, body string) {
		r, err := Decode(body)
		if err != nil {
			return
		}
		// Whatever decodes must be valid and survive a round trip unchanged.
		if err := r.Validate(); err != nil {
			t.Fatalf("Decode returned an invalid record: %v", err)
		}
		again, err := Encode(r)
		if err != nil {
			t.Fatalf("Encode of a decoded record: %v", err)
		}
		r2, err := Decode(again)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if r2.ID() != r.ID() || r2.State != r.State || r2.Revision != r.Revision {
			t.Fatalf("round trip changed the record: %+v vs %+v", r, r2)
		}
	})
}
