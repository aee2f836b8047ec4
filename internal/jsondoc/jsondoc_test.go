package jsondoc

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckShape(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"an object", `{"a":[1,{"b":null}]}`, ""},
		{"a duplicate key deep down", `{"a":[{"b":1,"b":2}]}`, `/a/0: duplicate key "b"`},
		{"trailing data", `{} {}`, "trailing data"},
		{"not JSON", `{"a":}`, "not valid JSON"},
		{"too deep", strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), "nested deeper"},
		{"a key with a slash", `{"a/b":{"c":1,"c":2}}`, "/a~1b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckShape([]byte(tc.doc))
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	s, err := Compile("https://example.invalid/", map[string][]byte{
		"a.json": []byte(`{"type":"object","required":["n"],"properties":{"n":{"type":"integer"},"m":{"$ref":"b.json"}},"additionalProperties":false}`),
		"b.json": []byte(`{"type":"string","maxLength":3}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate("https://example.invalid/a.json", []byte(`{"n":1,"m":"abc"}`)); err != nil {
		t.Fatalf("valid: %v", err)
	}
	err = s.Validate("https://example.invalid/a.json", []byte(`{"n":"x","m":"abcd","z":1}`))
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) != 3 || ve.Problems[0].Path != "" || ve.Problems[1].Path != "/m" || ve.Problems[2].Path != "/n" {
		t.Fatalf("invalid: %v", err)
	}
	if _, err := Compile("https://example.invalid/", map[string][]byte{"c.json": []byte(`{"$ref":"https://elsewhere.invalid/x.json"}`)}); err == nil {
		t.Fatal("a schema that refers outside the set compiled: it would have been fetched")
	}
}
