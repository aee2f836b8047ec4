package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeLog(t *testing.T, n int) (string, Head) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		err := l.Write(&Entry{Time: time.Unix(1700000000, int64(i)), Client: "10.0.2.15:4000", Kind: "connect",
			Method: "CONNECT", Target: "allowed.test:443", Addr: "93.184.215.14:443", Allowed: i%2 == 0,
			Reason: "reason \"quoted\" \x00 \xff é", Status: 200, BytesUp: int64(i), BytesDn: 7, Duration: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
	}
	head := l.Head()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return path, head
}

func TestLinesAreJSON(t *testing.T) {
	path, head := writeLog(t, 3)
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 3 || head.Lines != 3 {
		t.Fatalf("got %d lines, head %+v", len(lines), head)
	}
	for _, ln := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(ln), &m); err != nil {
			t.Fatalf("line %q: %v", ln, err)
		}
		for _, k := range []string{"seq", "prev", "time", "client", "kind", "method", "target", "addr", "allowed", "reason", "status", "bytes_up", "bytes_down", "duration_ms"} {
			if _, ok := m[k]; !ok {
				t.Fatalf("line lacks %q: %s", k, ln)
			}
		}
	}
	if !strings.Contains(lines[0], `"prev":"`+Genesis+`"`) {
		t.Fatalf("first line does not anchor the genesis: %s", lines[0])
	}
}

func TestVerify(t *testing.T) {
	path, head := writeLog(t, 5)
	orig, _ := os.ReadFile(path)
	lines := strings.SplitAfter(string(orig), "\n")
	lines = lines[:len(lines)-1] // trailing empty
	join := func(ls ...string) string { return strings.Join(ls, "") }
	tests := []struct {
		name     string
		content  string
		head     string
		wantLine uint64 // 0: valid
	}{
		{"intact", string(orig), "", 0},
		{"intact with head", string(orig), head.Hash, 0},
		{"edited middle", join(lines[0], strings.Replace(lines[1], `"allowed":false`, `"allowed":true`, 1), lines[2], lines[3], lines[4]), "", 3},
		{"dropped middle", join(lines[0], lines[1], lines[3], lines[4]), "", 3},
		{"dropped first", join(lines[1], lines[2], lines[3], lines[4]), "", 1},
		{"inserted copy", join(lines[0], lines[1], lines[1], lines[2], lines[3], lines[4]), "", 3},
		{"reordered", join(lines[0], lines[2], lines[1], lines[3], lines[4]), "", 2},
		{"dropped last with head", join(lines[0], lines[1], lines[2], lines[3]), head.Hash, 4},
		{"edited last with head", join(lines[0], lines[1], lines[2], lines[3], strings.Replace(lines[4], `"bytes_down":7`, `"bytes_down":8`, 1)), head.Hash, 5},
		{"not json", join(lines[0], "garbage\n"), "", 2},
		{"torn last line", join(lines[0], strings.TrimSuffix(lines[1], "\n")), "", 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Verify(strings.NewReader(tc.content), tc.head)
			if tc.wantLine == 0 {
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				return
			}
			var ve *VerifyError
			if !errors.As(err, &ve) {
				t.Fatalf("Verify error %v, want a VerifyError", err)
			}
			if ve.Line != tc.wantLine {
				t.Fatalf("broken at line %d (%v), want %d", ve.Line, err, tc.wantLine)
			}
		})
	}
}

func TestOpenContinuesChain(t *testing.T) {
	path, _ := writeLog(t, 2)
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Write(&Entry{Time: time.Now(), Kind: "http"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(path)
	defer f.Close()
	h, err := Verify(f, "")
	if err != nil || h.Lines != 3 {
		t.Fatalf("after reopen: %+v %v", h, err)
	}
}

func TestOpenRefusesBrokenLog(t *testing.T) {
	path, _ := writeLog(t, 3)
	data, _ := os.ReadFile(path)
	os.WriteFile(path, bytes.Replace(data, []byte(`"bytes_up":0`), []byte(`"bytes_up":9`), 1), 0o600)
	if _, err := Open(path); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("Open of an edited log: %v", err)
	}
}

func BenchmarkWrite(b *testing.B) {
	l, err := Open(filepath.Join(b.TempDir(), "a.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	e := &Entry{Time: time.Now(), Client: "127.0.0.1:5555", Kind: "http", Method: "GET", Target: "allowed.test:80",
		Addr: "127.0.0.2:8080", Allowed: true, Reason: "allowed by *.allowed.test", Status: 200, BytesUp: 100, BytesDn: 200}
	b.ReportAllocs()
	for b.Loop() {
		if err := l.Write(e); err != nil {
			b.Fatal(err)
		}
	}
}

func TestWriteAfterCloseIsSticky(t *testing.T) {
	l, err := Open(filepath.Join(t.TempDir(), "a.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if l.Err() != nil {
		t.Fatal("fresh log reports an error")
	}
	l.Close()
	if err := l.Write(&Entry{Time: time.Now()}); err == nil {
		t.Fatal("write to a closed log succeeded")
	}
	if l.Err() == nil {
		t.Fatal("failure not sticky")
	}
}

// TestDeniedFieldKeepsOldLogs: a log written before the "denied" field existed (lines
// without it) is continued with lines that have it, and the whole chain verifies; an
// allowed line still has no such field, so its bytes are what they were.
func TestDeniedFieldKeepsOldLogs(t *testing.T) {
	path, _ := writeLog(t, 2) // the old shape: no Denied set
	old, _ := os.ReadFile(path)
	if strings.Contains(string(old), `"denied"`) {
		t.Fatalf("a line without a refusal kind has a denied field:\n%s", old)
	}
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Write(&Entry{Time: time.Unix(1700000001, 0), Kind: "connect", Target: "pkgs.example.test:443",
		Reason: "pkgs.example.test is not on the allowlist", Status: 403, Denied: "host"}); err != nil {
		t.Fatal(err)
	}
	head := l.Head()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := Verify(f, head.Hash); err != nil {
		t.Fatalf("old lines and a new one do not verify: %v", err)
	}
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	var e struct {
		Denied string `json:"denied"`
	}
	if err := json.Unmarshal([]byte(lines[2]), &e); err != nil || e.Denied != "host" {
		t.Fatalf("new line %s: denied %q (%v)", lines[2], e.Denied, err)
	}
}
