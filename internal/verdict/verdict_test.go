package verdict

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	ok := `{"schema_version":1,"verdict":"request_changes","confidence":0.7,"summary":"Two problems.",` +
		`"findings":[{"file":"widgets.sh","line":3,"severity":"major","message":"Off by one."},` +
		`{"severity":"minor","message":"No test for zero widgets."}]}`
	v, err := Parse([]byte(ok))
	if err != nil {
		t.Fatalf("a valid verdict: %v", err)
	}
	if v.Verdict != RequestChanges || v.Confidence != 0.7 || len(v.Findings) != 2 || v.Findings[0].Side != SideRight || v.Findings[1].Side != "" {
		t.Fatalf("parsed %+v", v)
	}
	bad := []struct {
		name, doc, want string
	}{
		{"empty", ``, "is empty"},
		{"not JSON", `verdict: approve`, "not valid JSON"},
		{"trailing data", ok + `{}`, "trailing data"},
		{"duplicate key, the second would approve", `{"schema_version":1,"verdict":"request_changes","verdict":"approve","confidence":1,"summary":"x","findings":[]}`, "duplicate key"},
		{"unknown verdict", strings.Replace(ok, `"request_changes"`, `"APPROVE"`, 1), "/verdict"},
		{"merge is not a verdict", strings.Replace(ok, `"request_changes"`, `"merge"`, 1), "/verdict"},
		{"confidence above 1", strings.Replace(ok, `0.7`, `1.5`, 1), "/confidence"},
		{"confidence as a string", strings.Replace(ok, `0.7`, `"0.9"`, 1), "/confidence"},
		{"no summary", `{"schema_version":1,"verdict":"approve","confidence":1,"findings":[]}`, "summary"},
		{"empty summary", `{"schema_version":1,"verdict":"approve","confidence":1,"summary":"","findings":[]}`, "/summary"},
		{"no findings list", `{"schema_version":1,"verdict":"approve","confidence":1,"summary":"fine"}`, "findings"},
		{"another version", strings.Replace(ok, `"schema_version":1`, `"schema_version":2`, 1), "/schema_version"},
		{"an unknown field", strings.Replace(ok, `"summary"`, `"merge":true,"summary"`, 1), "merge"},
		{"a line without a file", `{"schema_version":1,"verdict":"comment","confidence":0.5,"summary":"s","findings":[{"line":3,"severity":"nit","message":"m"}]}`, "/findings/0"},
		{"a path out of the repository", strings.Replace(ok, `widgets.sh`, `../etc/passwd`, 1), "/findings/0/file"},
		{"an absolute path", strings.Replace(ok, `widgets.sh`, `/etc/passwd`, 1), "/findings/0/file"},
		{"a path that breaks out of its line", strings.Replace(ok, `widgets.sh`, `a

@octocat ![i](https://evil.example/p)`, 1), "/findings/0/file"},
		{"line zero", strings.Replace(ok, `"line":3`, `"line":0`, 1), "/findings/0/line"},
		{"a side that is not one", strings.Replace(ok, `"line":3`, `"line":3,"side":"BOTH"`, 1), "/findings/0/side"},
		{"unknown severity", strings.Replace(ok, `"major"`, `"critical!"`, 1), "/findings/0/severity"},
		{"not UTF-8", "{\"schema_version\":1,\"verdict\":\"approve\",\"confidence\":1,\"summary\":\"\xff\",\"findings\":[]}", "UTF-8"},
		{"too big", `{"schema_version":1,"verdict":"approve","confidence":1,"summary":"` + strings.Repeat("a", MaxBytes) + `","findings":[]}`, "at most"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc))
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want ErrInvalid naming %q", err, tc.want)
			}
		})
	}
}

func TestPasses(t *testing.T) {
	for _, tc := range []struct {
		verdict    string
		confidence float64
		threshold  float64
		want       bool
	}{
		{Approve, 0.9, 0.8, true},
		{Approve, 0.8, 0.8, true},
		{Approve, 0.79, 0.8, false},
		{Comment, 1, 0.8, false},
		{RequestChanges, 1, 0, false},
	} {
		v := Verdict{Verdict: tc.verdict, Confidence: tc.confidence}
		if got := v.Passes(tc.threshold); got != tc.want {
			t.Errorf("%s at %.2f, threshold %.2f: passes %v, want %v", tc.verdict, tc.confidence, tc.threshold, got, tc.want)
		}
	}
}

func TestDigest(t *testing.T) {
	if got := Digest([]byte("abc")); got != "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Fatalf("digest %s", got)
	}
}
