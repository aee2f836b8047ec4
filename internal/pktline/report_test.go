package pktline_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/internal/pktline"
)

func TestPacketRoundTrip(t *testing.T) {
	tests := []struct {
		name    string
		payload []byte
		wantErr bool
	}{
		{name: "empty", payload: []byte{}},
		{name: "text", payload: []byte("hello\n")},
		{name: "largest", payload: bytes.Repeat([]byte("x"), pktline.MaxPayloadLen)},
		{name: "one too many", payload: bytes.Repeat([]byte("x"), pktline.MaxPayloadLen+1), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := pktline.AppendPacket(nil, tt.payload)
			if tt.wantErr {
				if err == nil {
					t.Fatal("AppendPacket accepted an oversized payload")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			pkt, err := pktline.ReadPacket(bytes.NewReader(b))
			if err != nil || pkt.Kind != pktline.Data || !bytes.Equal(pkt.Payload, tt.payload) {
				t.Fatalf("read back %v %q (%v)", pkt.Kind, pkt.Payload, err)
			}
		})
	}
}

// decodeBands splits a side-band-64k response into its channels.
func decodeBands(t *testing.T, body []byte) map[byte][]byte {
	t.Helper()
	bands := map[byte][]byte{}
	r := bytes.NewReader(body)
	for _, p := range payloadsToFlush(t, r) {
		bands[p[0]] = append(bands[p[0]], p[1:]...)
	}
	if r.Len() != 0 {
		t.Fatalf("%d bytes after the final flush", r.Len())
	}
	return bands
}

// payloadsToFlush reads pkt-lines from r up to the first flush-pkt and returns their
// payloads.
func payloadsToFlush(t *testing.T, r io.Reader) [][]byte {
	t.Helper()
	var out [][]byte
	for {
		pkt, err := pktline.ReadPacket(r)
		if err != nil {
			t.Fatalf("response is not pkt-lines: %v", err)
		}
		if pkt.Kind == pktline.Flush {
			return out
		}
		out = append(out, pkt.Payload)
	}
}

func TestReportEncode(t *testing.T) {
	rep := pktline.Report{
		Refs:     []pktline.RefStatus{{Ref: "refs/heads/main", Reason: "protected\nbranch\x1b[31m"}, {Ref: "refs/heads/x"}},
		Messages: []string{"error: no"},
	}
	status := string(pkts("unpack ok\n", "ng refs/heads/main protected branch[31m\n", "ok refs/heads/x\n"))
	tests := []struct {
		name     string
		caps     []string
		wantBody string          // without side-band
		wantBand map[byte]string // with side-band
	}{
		{name: "plain report-status", caps: []string{"report-status"}, wantBody: status},
		{name: "report-status-v2", caps: []string{"report-status-v2"}, wantBody: status},
		{name: "nothing asked", caps: nil, wantBody: "0000"},
		{name: "side-band-64k", caps: []string{"report-status", "side-band-64k"},
			wantBand: map[byte]string{1: status, 2: "error: no\n"}},
		{name: "side-band", caps: []string{"report-status-v2", "side-band"},
			wantBand: map[byte]string{1: status, 2: "error: no\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, err := rep.Encode(&pktline.CommandList{Capabilities: tt.caps})
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantBand == nil {
				if string(body) != tt.wantBody {
					t.Fatalf("body %q, want %q", body, tt.wantBody)
				}
				return
			}
			got := decodeBands(t, body)
			for band, want := range tt.wantBand {
				if string(got[band]) != want {
					t.Errorf("band %d: %q, want %q", band, got[band], want)
				}
			}
		})
	}
	if _, err := (pktline.Report{Refs: []pktline.RefStatus{{Ref: "main"}}}).Encode(&pktline.CommandList{Capabilities: []string{"report-status"}}); err == nil {
		t.Error("Encode accepted a ref name outside refs/")
	}
}

func TestReportSideBandSplitsLargeStatus(t *testing.T) {
	var refs []pktline.RefStatus
	for i := range 3000 {
		refs = append(refs, pktline.RefStatus{Ref: "refs/heads/branch-" + strings.Repeat("y", i%50) + "-" + string(rune('a'+i%26)) + "/" + strings.Repeat("z", 1+i/26), Reason: "refused"})
	}
	body, err := pktline.Report{Refs: refs}.Encode(&pktline.CommandList{Capabilities: []string{"report-status", "side-band"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range payloadsToFlush(t, bytes.NewReader(body)) {
		if len(p)+4 > 1000 {
			t.Fatalf("side-band packet of %d bytes, limit is 1000", len(p)+4)
		}
	}
	status := decodeBands(t, body)[1]
	if n := len(payloadsToFlush(t, bytes.NewReader(status))); n != len(refs)+1 {
		t.Fatalf("status has %d lines, want %d", n, len(refs)+1)
	}
}

// TestReportReachesGitClient answers a real git push with a refusal and checks that the
// git client prints the reason and the side-band message.
func TestReportReachesGitClient(t *testing.T) {
	root := t.TempDir()
	env := gitEnv(t)
	rec := newRecorder(t, root)
	refuse := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/git-receive-pack") {
			rec.ServeHTTP(w, r)
			return
		}
		cl, err := pktline.ReadCommands(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rep := pktline.Report{Messages: []string{"error: refusing to allow direct push to protected branch main"}}
		for _, u := range cl.Updates {
			rep.Refs = append(rep.Refs, pktline.RefStatus{Ref: u.Ref, Reason: "protected branch hook declined"})
		}
		body, err := rep.Encode(cl)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/x-git-receive-pack-result")
		w.Write(body)
	})
	srv := httptest.NewServer(refuse)
	defer srv.Close()

	git(t, env, root, "init", "--quiet", "--bare", "repo.git")
	work := t.TempDir()
	git(t, env, work, "init", "--quiet", "--initial-branch=main", ".")
	if err := os.WriteFile(filepath.Join(work, "a.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, env, work, "add", "a.txt")
	git(t, env, work, "commit", "--quiet", "-m", "first")
	cmd := exec.Command("git", "push", srv.URL+"/repo.git", "main")
	cmd.Dir = work
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("push succeeded, want it refused:\n%s", out)
	}
	for _, want := range []string{
		"remote: error: refusing to allow direct push to protected branch main",
		"! [remote rejected] main -> main (protected branch hook declined)",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("git output lacks %q:\n%s", want, out)
		}
	}
}
