package pktline_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/internal/pktline"
)

const (
	oidA = "2a4c9fa881f40e32a0171c3ff1dd08bf19d93af0"
	oidB = "af4173b62a044f8b3e111eaa1d947fee15f591ae"
	zero = "0000000000000000000000000000000000000000"
	sha2 = "1111111111111111111111111111111111111111111111111111111111111111"
	z256 = "0000000000000000000000000000000000000000000000000000000000000000"
)

// pkts frames each line as a pkt-line and ends the list with a flush-pkt.
func pkts(lines ...string) []byte {
	var b []byte
	for _, l := range lines {
		var err error
		if b, err = pktline.AppendString(b, l); err != nil {
			panic(err)
		}
	}
	return pktline.AppendFlush(b)
}

func TestReadCommands(t *testing.T) {
	tests := []struct {
		name    string
		body    []byte
		want    []pktline.RefUpdate
		caps    []string
		shallow int
		wantErr string
	}{
		{
			name: "create with capabilities",
			body: pkts(zero + " " + oidA + " refs/heads/main\x00 report-status side-band-64k agent=git/2.39.5"),
			want: []pktline.RefUpdate{{Old: zero, New: oidA, Ref: "refs/heads/main"}},
			caps: []string{"report-status", "side-band-64k", "agent=git/2.39.5"},
		},
		{
			name: "several commands with newlines",
			body: pkts(oidA+" "+oidB+" refs/heads/main\x00report-status\n", oidA+" "+zero+" refs/tags/v1\n"),
			want: []pktline.RefUpdate{{Old: oidA, New: oidB, Ref: "refs/heads/main"}, {Old: oidA, New: zero, Ref: "refs/tags/v1"}},
			caps: []string{"report-status"},
		},
		{
			name: "no capabilities",
			body: pkts(oidA + " " + oidB + " refs/heads/bumper/12-1"),
			want: []pktline.RefUpdate{{Old: oidA, New: oidB, Ref: "refs/heads/bumper/12-1"}},
		},
		{name: "probe: bare flush", body: []byte("0000")},
		{
			name:    "shallow lines first",
			body:    pkts("shallow "+oidA, oidA+" "+oidB+" refs/heads/x\x00 report-status"),
			want:    []pktline.RefUpdate{{Old: oidA, New: oidB, Ref: "refs/heads/x"}},
			caps:    []string{"report-status"},
			shallow: 1,
		},
		{
			name: "sha256",
			body: pkts(z256 + " " + sha2 + " refs/heads/main\x00 object-format=sha256"),
			want: []pktline.RefUpdate{{Old: z256, New: sha2, Ref: "refs/heads/main"}},
			caps: []string{"object-format=sha256"},
		},
		{name: "sha256 oid without object-format", body: pkts(z256 + " " + sha2 + " refs/heads/main"), wantErr: "needs 40"},
		{name: "sha1 oid with object-format sha256", body: pkts(zero + " " + oidA + " refs/heads/main\x00object-format=sha256"), wantErr: "needs 64"},
		{name: "unknown object-format", body: pkts(zero + " " + oidA + " refs/heads/main\x00object-format=md5"), wantErr: "unknown object-format"},
		{name: "empty input", body: nil, wantErr: "unexpected EOF"},
		{name: "no flush", body: pkts(zero + " " + oidA + " refs/heads/main")[:4+89], wantErr: "unexpected EOF"},
		{name: "truncated payload", body: []byte("0064" + zero), wantErr: "unexpected EOF"},
		{name: "non-hex length", body: []byte("00g0xxxx"), wantErr: "not four hex digits"},
		{name: "reserved length 0003", body: []byte("0003"), wantErr: "reserved"},
		{name: "oversized packet", body: []byte("fff1"), wantErr: "longer than 65520"},
		{name: "delim packet", body: []byte("0001"), wantErr: "unexpected delim-pkt"},
		{name: "response-end packet", body: []byte("0002"), wantErr: "unexpected response-end-pkt"},
		{name: "empty packet", body: []byte("00040000"), wantErr: "want \"<old> <new> <ref>\""},
		{name: "two fields", body: pkts(zero + " refs/heads/main"), wantErr: "want \"<old> <new> <ref>\""},
		{name: "four fields", body: pkts(zero + " " + oidA + " refs/heads/main extra"), wantErr: "want \"<old> <new> <ref>\""},
		{name: "uppercase hex", body: pkts(zero + " " + strings.ToUpper(oidA) + " refs/heads/main"), wantErr: "not lowercase hex"},
		{name: "short oid", body: pkts(zero + " abc refs/heads/main"), wantErr: "must be 40 or 64"},
		{name: "zero to zero", body: pkts(zero + " " + zero + " refs/heads/main"), wantErr: "zero old and new"},
		{name: "ref outside refs/", body: pkts(zero + " " + oidA + " HEAD"), wantErr: "must start with refs/"},
		{name: "ref with ..", body: pkts(zero + " " + oidA + " refs/heads/a..b"), wantErr: `contains ".."`},
		{name: "ref with @{", body: pkts(zero + " " + oidA + " refs/heads/a@{1}"), wantErr: `contains "@{"`},
		{name: "ref with control char", body: pkts(zero + " " + oidA + " refs/heads/a\x01b"), wantErr: "control character"},
		{name: "ref with tab", body: pkts(zero + " " + oidA + " refs/heads/a\tb"), wantErr: "control character"},
		{name: "ref with colon", body: pkts(zero + " " + oidA + " refs/heads/a:b"), wantErr: "forbidden character"},
		{name: "ref with backslash", body: pkts(zero + " " + oidA + " refs/heads/a\\b"), wantErr: "forbidden character"},
		{name: "ref ending in .lock", body: pkts(zero + " " + oidA + " refs/heads/main.lock"), wantErr: ".lock"},
		{name: "ref with dot component", body: pkts(zero + " " + oidA + " refs/heads/.hidden"), wantErr: "starting with a dot"},
		{name: "ref with //", body: pkts(zero + " " + oidA + " refs/heads//x"), wantErr: "empty component"},
		{name: "ref ending in /", body: pkts(zero + " " + oidA + " refs/heads/x/"), wantErr: "ends with /"},
		{name: "ref ending in dot", body: pkts(zero + " " + oidA + " refs/heads/x."), wantErr: "ends with a dot"},
		{name: "ref not UTF-8", body: pkts(zero + " " + oidA + " refs/heads/\xff"), wantErr: "not valid UTF-8"},
		{name: "same ref twice", body: pkts(zero+" "+oidA+" refs/heads/x", zero+" "+oidB+" refs/heads/x"), wantErr: "more than once"},
		{name: "NUL on second command", body: pkts(zero+" "+oidA+" refs/heads/x", zero+" "+oidB+" refs/heads/y\x00report-status"), wantErr: "carries a NUL"},
		{name: "capability with control byte", body: pkts(zero + " " + oidA + " refs/heads/x\x00report-status\x01"), wantErr: "printable ASCII"},
		{name: "shallow after command", body: pkts(zero+" "+oidA+" refs/heads/x", "shallow "+oidA), wantErr: "shallow lines must come first"},
		{name: "bad shallow", body: pkts("shallow xyz"), wantErr: "bad shallow line"},
		{name: "push certificate", body: pkts("push-cert\x00 report-status", "certificate version 0.1\n"), wantErr: "signed pushes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Errors are checked on the body alone, so that trailing bytes cannot stand
			// in for a missing packet.
			var trailer []byte
			if tt.wantErr == "" {
				trailer = []byte("PACK-and-more")
			}
			r := bytes.NewReader(append(append([]byte{}, tt.body...), trailer...))
			cl, err := pktline.ReadCommands(r)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ReadCommands: %v", err)
			}
			if len(cl.Updates) != len(tt.want) {
				t.Fatalf("updates %v, want %v", cl.Updates, tt.want)
			}
			for i := range tt.want {
				if cl.Updates[i] != tt.want[i] {
					t.Errorf("update %d: %v, want %v", i, cl.Updates[i], tt.want[i])
				}
			}
			if strings.Join(cl.Capabilities, " ") != strings.Join(tt.caps, " ") {
				t.Errorf("capabilities %q, want %q", cl.Capabilities, tt.caps)
			}
			if len(cl.Shallow) != tt.shallow {
				t.Errorf("shallow %v, want %d", cl.Shallow, tt.shallow)
			}
			if !bytes.Equal(cl.Raw, tt.body) {
				t.Errorf("Raw %q, want exactly the command list %q", cl.Raw, tt.body)
			}
			rest, _ := io.ReadAll(r)
			if !bytes.Equal(rest, trailer) {
				t.Errorf("ReadCommands left %q unread, want %q", rest, trailer)
			}
		})
	}
}

func TestReadCommandsLimit(t *testing.T) {
	lines := make([]string, 0, pktline.MaxCommands+1)
	for i := range pktline.MaxCommands + 1 {
		lines = append(lines, zero+" "+oidA+" refs/heads/b"+strings.Repeat("x", i%7)+"/"+string(rune('a'+i%26))+"-"+strconv.Itoa(i))
	}
	for _, n := range []int{pktline.MaxCommands, pktline.MaxCommands + 1} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			_, err := pktline.ReadCommands(bytes.NewReader(pkts(lines[:n]...)))
			if n <= pktline.MaxCommands && err != nil {
				t.Fatalf("%d commands: %v", n, err)
			}
			if n > pktline.MaxCommands && (err == nil || !strings.Contains(err.Error(), "more than")) {
				t.Fatalf("%d commands: error %v, want the cap", n, err)
			}
		})
	}
}

func TestReadCommandsByteCap(t *testing.T) {
	long := "refs/heads/" + strings.Repeat("x", pktline.MaxPayloadLen-100)
	var lines []string
	for i := 0; len(lines)*pktline.MaxPayloadLen <= pktline.MaxCommandListBytes; i++ {
		lines = append(lines, zero+" "+oidA+" "+long+strconv.Itoa(i))
	}
	_, err := pktline.ReadCommands(bytes.NewReader(pkts(lines...)))
	if err == nil || !strings.Contains(err.Error(), "command list is over") {
		t.Fatalf("error %v, want the byte cap", err)
	}
}

func TestReadCommandsPushCertIsSentinel(t *testing.T) {
	_, err := pktline.ReadCommands(bytes.NewReader(pkts("push-cert\x00 report-status")))
	if !errors.Is(err, pktline.ErrPushCert) {
		t.Fatalf("error %v, want ErrPushCert", err)
	}
}

// TestRecordedPushes parses the request bodies captured from real pushes (rewritten by
// go test -run TestCapturedPush -update), so the format is checked even without git.
func TestRecordedPushes(t *testing.T) {
	files, err := filepath.Glob("testdata/*.req")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/*.req recordings (%v)", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			body, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			cl, err := pktline.ReadCommands(bytes.NewReader(body))
			if err != nil {
				t.Fatalf("ReadCommands: %v", err)
			}
			if len(cl.Updates) != 2 || cl.Updates[0].Ref != "refs/heads/main" || cl.Updates[1].Ref != "refs/heads/topic" {
				t.Fatalf("updates %v, want main then topic", cl.Updates)
			}
			isFirst := strings.HasSuffix(f, "push1.req")
			if cl.Updates[1].IsCreate() != isFirst || cl.Updates[1].IsDelete() == isFirst {
				t.Errorf("topic update %v: create=%v delete=%v, want the first push to create and the second to delete",
					cl.Updates[1], cl.Updates[1].IsCreate(), cl.Updates[1].IsDelete())
			}
			if !bytes.Equal(cl.Raw, body[:len(cl.Raw)]) {
				t.Error("Raw differs from the start of the body")
			}
		})
	}
}

func FuzzReadCommands(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.req")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(pkts(zero + " " + oidA + " refs/heads/main\x00 report-status side-band-64k"))
	f.Add(pkts("shallow "+oidA, oidA+" "+zero+" refs/heads/x"))
	f.Add([]byte("0000"))
	f.Add([]byte("0001"))
	f.Add(pkts("push-cert\x00 x"))
	f.Fuzz(func(t *testing.T, body []byte) {
		cl, err := pktline.ReadCommands(bytes.NewReader(body))
		if err != nil {
			return
		}
		if !bytes.Equal(cl.Raw, body[:len(cl.Raw)]) {
			t.Fatal("Raw is not the consumed prefix of the body")
		}
		if len(cl.Updates) > pktline.MaxCommands {
			t.Fatalf("%d updates passed the cap", len(cl.Updates))
		}
		seen := map[string]bool{}
		for _, u := range cl.Updates {
			if err := pktline.CheckRefName(u.Ref); err != nil {
				t.Fatalf("accepted a bad ref: %v", err)
			}
			if pktline.CheckOID(u.Old) != nil || pktline.CheckOID(u.New) != nil || len(u.Old) != len(u.New) {
				t.Fatalf("accepted bad object names in %v", u)
			}
			if u.IsCreate() && u.IsDelete() {
				t.Fatalf("accepted zero-to-zero update %v", u)
			}
			if seen[u.Ref] {
				t.Fatalf("accepted %s twice", u.Ref)
			}
			seen[u.Ref] = true
		}
		// Re-reading the consumed bytes alone must give the same result.
		again, err := pktline.ReadCommands(bytes.NewReader(cl.Raw))
		if err != nil || len(again.Updates) != len(cl.Updates) {
			t.Fatalf("re-reading Raw: %v, %d updates, want %d", err, len(again.Updates), len(cl.Updates))
		}
	})
}

// BenchmarkReadCommands parses a recorded two-ref push.
func BenchmarkReadCommands(b *testing.B) {
	body, err := os.ReadFile("testdata/sha1-push2.req")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	for i := 0; i < b.N; i++ {
		if _, err := pktline.ReadCommands(bytes.NewReader(body)); err != nil {
			b.Fatal(err)
		}
	}
}
