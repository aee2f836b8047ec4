package ledger

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// testSealer signs with a fixed test key.
func testSealer(t testing.TB) *Sealer {
	t.Helper()
	s, err := NewSealer([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCodecRoundTrip(t *testing.T) {
	s := testSealer(t)
	r := sampleRecord()
	r.Reason = "closing --> <!-- bumper:record\n{} tricks"
	r.SpecNotice = "hidden: `<!-- payload -->`"
	body, err := s.Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	if !IsStatusComment(body) {
		t.Fatal("encoded comment lacks the status marker")
	}
	if strings.Count(body, RecordOpen) != 1 {
		t.Fatalf("a reason forged a second record marker:\n%s", body)
	}
	if strings.Count(body, "-->") != 2 || strings.Count(body, "<!--") != 2 { // the status marker and the record
		t.Fatalf("the notice or reason opened or closed an HTML comment:\n%s", body)
	}
	got, err := s.Decode(body)
	if err != nil {
		t.Fatalf("Decode: %v\n%s", err, body)
	}
	// The notice is shown with its comment markers broken, and ends its line.
	want := r.Clone()
	want.SpecNotice = "hidden: `&lt;!-- payload --&gt;`\n"
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip changed the record:\n got %+v\nwant %+v", got, want)
	}
	if i := strings.Index(body, RecordOpen); !strings.Contains(body[:i], "state: `running`") {
		t.Fatalf("human summary missing above the record:\n%s", body[:i])
	}
}

func TestDecodeRejects(t *testing.T) {
	s := testSealer(t)
	good := sampleRecord()
	// encodeWith signs a changed record with the right key: what it checks is that
	// Decode validates content, not only signatures.
	encodeWith := func(change func(m map[string]any)) string {
		raw, _ := json.Marshal(good)
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		change(m)
		out, _ := json.Marshal(m)
		return StatusMarker + "\nsummary\n" + RecordOpen + sigPrefix + s.sign(out) + "\n" + string(out) + RecordClose
	}
	full := func(c byte) string { return "sha256:" + strings.Repeat(string(c), 64) }
	tests := []struct {
		name, body, want string
	}{
		{"not a status comment", "hello", "no bumper record"},
		{"no record", StatusMarker + "\nonly a summary", "no bumper record"},
		{"unclosed", StatusMarker + "\n" + RecordOpen + "{}", "not closed"},
		{"not json", StatusMarker + "\n" + RecordOpen + sigPrefix + s.sign([]byte("nope")) + "\nnope" + RecordClose, "failed to parse"},
		{"unknown field", encodeWith(func(m map[string]any) { m["extra"] = 1 }), "unknown field"},
		{"future schema", encodeWith(func(m map[string]any) { m["schema"] = 3 }), "schema 3"},
		{"old schema", encodeWith(func(m map[string]any) { m["schema"] = 1 }), "schema 1"},
		{"short spec revision", encodeWith(func(m map[string]any) { m["spec_revision"] = "sha256:0123456789abcdef" }), "full-length"},
		{"short approval revision", encodeWith(func(m map[string]any) {
			m["approvals"].([]any)[0].(map[string]any)["revision"] = "sha256:0123456789abcdef"
		}), "full-length"},
		{"approval without a comment", encodeWith(func(m map[string]any) {
			m["approvals"].([]any)[0].(map[string]any)["comment_id"] = 0
		}), "points at no comment"},
		{"short plan revision", encodeWith(func(m map[string]any) { m["plan_revision"] = "sha256:00" }), "full-length"},
		{"short policy version", encodeWith(func(m map[string]any) { m["policy_version"] = "sha256:00" }), "full-length"},
		{"upper-case hash", encodeWith(func(m map[string]any) { m["spec_revision"] = "sha256:" + strings.Repeat("A", 64) }), "full-length"},
		{"full-length is fine for the plan", encodeWith(func(m map[string]any) { m["plan_revision"] = full('1'); m["state"] = "merged" }), "state \"merged\""},
		{"zero revision", encodeWith(func(m map[string]any) { m["revision"] = 0 }), "revision 0"},
		{"bad state", encodeWith(func(m map[string]any) { m["state"] = "merged" }), "state \"merged\""},
		{"bad repository", encodeWith(func(m map[string]any) { m["repository"] = "widgets" }), "owner/name"},
		{"bad issue", encodeWith(func(m map[string]any) { m["issue"] = 0 }), "issue 0"},
		{"no requester", encodeWith(func(m map[string]any) { m["requester"] = "" }), "no requester"},
		{"misnumbered attempt", encodeWith(func(m map[string]any) {
			m["attempts"].([]any)[0].(map[string]any)["number"] = 5
		}), "numbered 5"},
		{"two records", func() string { b, _ := s.Encode(good); return b + RecordOpen + "\n{}" + RecordClose }(), "more than one"},
		{"trailing data", StatusMarker + "\n" + RecordOpen + sigPrefix + s.sign([]byte(`{"schema":2} {}`)) + "\n" + `{"schema":2} {}` + RecordClose, "after the JSON"},
		{"oversized", StatusMarker + strings.Repeat("x", MaxCommentBytes), "more than GitHub allows"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Decode(tt.body)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Decode error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestForgedRecords tries what an attacker who can make the bot author an edit would:
// rewrite the record, keep or drop the signature, sign with a key of their own.
func TestForgedRecords(t *testing.T) {
	s := testSealer(t)
	body, err := s.Encode(sampleRecord())
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewSealer([]byte("an attacker's own key, 32 bytes."))
	if err != nil {
		t.Fatal(err)
	}
	forgedRec := sampleRecord()
	forgedRec.Approvals[0].By = "attacker"
	forgedByOther, _ := other.Encode(forgedRec)
	legacy := strings.Replace(body, body[strings.Index(body, RecordOpen):strings.Index(body, "\n{")], RecordOpen, 1)
	tests := []struct{ name, body, want string }{
		{"content changed, signature kept", strings.Replace(body, `"by": "maintainer"`, `"by": "attacker"`, 1), "does not match"},
		{"signature dropped (schema 1 form)", legacy, "no signature"},
		{"signed with another key", forgedByOther, "does not match"},
		{"signature of another algorithm", strings.Replace(body, "sig=hmac-sha256:", "sig=none:", 1), "not hmac-sha256"},
		{"signature truncated", strings.Replace(body, "sig=hmac-sha256:", "sig=hmac-sha256:00", 1), "does not match"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Decode(tt.body)
			if !errors.Is(err, ErrUnsigned) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Decode error %v, want ErrUnsigned containing %q", err, tt.want)
			}
		})
	}
	t.Run("a record signed with a previous key still verifies", func(t *testing.T) {
		rotated, err := NewSealer([]byte("a new key after rotation, 32 b.."), []byte("0123456789abcdef0123456789abcdef"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rotated.Decode(body); err != nil {
			t.Fatalf("rotation lost the record: %v", err)
		}
		again, _ := rotated.Encode(sampleRecord())
		if _, err := s.Decode(again); !errors.Is(err, ErrUnsigned) {
			t.Fatalf("the old key verified a record signed with the new one: %v", err)
		}
	})
}

func TestShortID(t *testing.T) {
	s := testSealer(t)
	a, b := SpecRevision("t", "a"), SpecRevision("t", "b")
	if len(s.ShortID(a)) != ShortIDLen || s.ShortID(a) == s.ShortID(b) || s.ShortID(a) != s.ShortID(SpecRevision("t", "a")) {
		t.Fatalf("short ids %q %q", s.ShortID(a), s.ShortID(b))
	}
	if strings.HasPrefix(a, "sha256:"+s.ShortID(a)) {
		t.Fatal("the short id is a plain prefix of the hash: it can be collided offline")
	}
	other, _ := NewSealer([]byte("an attacker's own key, 32 bytes."))
	if other.ShortID(a) == s.ShortID(a) {
		t.Fatal("the short id does not depend on the key")
	}
}

func FuzzDecode(f *testing.F) {
	s := testSealer(f)
	good, _ := s.Encode(sampleRecord())
	f.Add(good)
	f.Add(StatusMarker + "\n" + RecordOpen + "\n{}" + RecordClose)
	f.Add(StatusMarker + "\n" + RecordOpen + "\n" + `{"schema":1,"revision":1}`)
	f.Add("")
	f.Fuzz(func(t *testing.T, body string) {
		r, err := s.Decode(body)
		if err != nil {
			return
		}
		// Whatever decodes must be valid and survive a round trip unchanged.
		if err := r.Validate(); err != nil {
			t.Fatalf("Decode returned an invalid record: %v", err)
		}
		again, err := s.Encode(r)
		if err != nil {
			t.Fatalf("Encode of a decoded record: %v", err)
		}
		r2, err := s.Decode(again)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if r2.ID() != r.ID() || r2.State != r.State || r2.Revision != r.Revision {
			t.Fatalf("round trip changed the record: %+v vs %+v", r, r2)
		}
	})
}

// TestDecodeUnverified: without the key a record still reads, whoever signed it, and
// what is not a well-formed record is still refused.
func TestDecodeUnverified(t *testing.T) {
	other, err := NewSealer([]byte("another key, also 32 bytes long!"))
	if err != nil {
		t.Fatal(err)
	}
	signed, err := testSealer(t).Encode(sampleRecord())
	if err != nil {
		t.Fatal(err)
	}
	byOther, err := other.Encode(sampleRecord())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, body string
		ok         bool
	}{
		{"signed with this key", signed, true},
		{"signed with another key", byOther, true},
		{"signature line removed", strings.Replace(signed, signed[strings.Index(signed, sigPrefix):strings.Index(signed, sigPrefix)+len(sigPrefix)+64], "", 1), true},
		{"not a status comment", "hello", false},
		{"unknown field", strings.Replace(signed, `"schema"`, `"extra": 1, "schema"`, 1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := DecodeUnverified(tc.body)
			if (err == nil) != tc.ok {
				t.Fatalf("DecodeUnverified: %v; want ok=%v", err, tc.ok)
			}
			if tc.ok && r.Issue != sampleRecord().Issue {
				t.Fatalf("issue %d; want %d", r.Issue, sampleRecord().Issue)
			}
		})
	}
	if _, err := testSealer(t).Decode(byOther); !errors.Is(err, ErrUnsigned) {
		t.Fatalf("Decode of another key's record: %v; want ErrUnsigned", err)
	}
}
