package gitserver

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bumperdev/bumper/internal/pktline"
)

func TestCloneFetchPush(t *testing.T) {
	for _, version := range []string{"0", "1", "2"} {
		t.Run("protocol v"+version, func(t *testing.T) {
			f := newFixture(t, Options{})
			f.env = append(f.env, "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=protocol.version", "GIT_CONFIG_VALUE_0="+version)
			ctx := context.Background()

			dir := filepath.Join(t.TempDir(), "clone")
			f.mustGit(t, "", "clone", "--quiet", f.url(readToken, "acme", "widgets"), dir)
			if b, err := os.ReadFile(filepath.Join(dir, "README.md")); err != nil || string(b) != "# widgets\n" {
				t.Fatalf("cloned README.md = %q (%v)", b, err)
			}

			main := f.ref(t, "refs/heads/main")
			next, err := f.srv.CommitFiles(ctx, "acme", "widgets", "main", main,
				map[string][]byte{"src/a.go": []byte("package a\n")}, "add a", testAuthor)
			if err != nil {
				t.Fatalf("CommitFiles: %v", err)
			}
			f.mustGit(t, dir, "fetch", "--quiet", "origin")
			if got := f.mustGit(t, dir, "rev-parse", "origin/main"); got != next {
				t.Fatalf("fetched origin/main = %s, want %s", got, next)
			}

			f.mustGit(t, dir, "checkout", "--quiet", "-b", "bumper/7-1", "origin/main")
			head := f.commit(t, dir, "b.txt", "b\n")
			f.mustGit(t, dir, "push", "--quiet", f.url(writeToken, "acme", "widgets"), "bumper/7-1")
			if got := f.ref(t, "refs/heads/bumper/7-1"); got != head {
				t.Fatalf("pushed branch at %q, want %s", got, head)
			}
			want := []pktline.RefUpdate{{Old: strings.Repeat("0", 40), New: head, Ref: "refs/heads/bumper/7-1"}}
			if got := f.pushed.all(); len(got) != 1 || !slices.Equal(got[0], want) {
				t.Fatalf("Pushed got %v, want one call with %v", got, want)
			}
			// The REST side sees the pushed content.
			content, _, err := f.srv.ReadFile(ctx, "acme", "widgets", "bumper/7-1", "b.txt")
			if err != nil || string(content) != "b\n" {
				t.Fatalf("ReadFile after push = %q (%v)", content, err)
			}
		})
	}
}

func TestPushUpdateAndDelete(t *testing.T) {
	f := newFixture(t, Options{})
	dir := f.clone(t)
	old := f.mustGit(t, dir, "rev-parse", "HEAD")
	f.mustGit(t, dir, "push", "--quiet", "origin", "HEAD:refs/heads/topic")
	head := f.commit(t, dir, "c.txt", "c\n")
	f.mustGit(t, dir, "push", "--quiet", "origin", "main", ":refs/heads/topic")

	zero := strings.Repeat("0", 40)
	want := [][]pktline.RefUpdate{
		{{Old: zero, New: old, Ref: "refs/heads/topic"}},
		{{Old: old, New: head, Ref: "refs/heads/main"}, {Old: old, New: zero, Ref: "refs/heads/topic"}},
	}
	got := f.pushed.all()
	if len(got) != len(want) {
		t.Fatalf("Pushed called %d times (%v), want %d", len(got), got, len(want))
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("push %d: Pushed got %v, want %v", i+1, got[i], want[i])
		}
	}
	if r := f.ref(t, "refs/heads/topic"); r != "" {
		t.Errorf("topic still at %s after delete", r)
	}
}

func TestPushAuth(t *testing.T) {
	tests := []struct {
		name    string
		token   string
		repo    string
		push    bool
		wantOut string
	}{
		{name: "clone without credentials", token: "", repo: "widgets", wantOut: "could not read Username"},
		{name: "clone with a wrong token", token: "ghs_wrong", repo: "widgets", wantOut: "Authentication failed"},
		{name: "clone a hidden repository", token: writeToken, repo: hiddenRepo, wantOut: "not found"},
		{name: "clone a missing repository", token: writeToken, repo: "nope", wantOut: "not found"},
		{name: "clone with a forbidden token", token: forbiddenToken, repo: "widgets", wantOut: "403"},
		{name: "push with a read token", token: readToken, repo: "widgets", push: true, wantOut: "403"},
		{name: "push without credentials", token: "", repo: "widgets", push: true, wantOut: "could not read Username"},
		{name: "push with a wrong token", token: "ghs_wrong", repo: "widgets", push: true, wantOut: "Authentication failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, Options{})
			var out string
			var err error
			if tt.push {
				dir := f.clone(t)
				f.commit(t, dir, "x.txt", "x\n")
				out, err = f.git(dir, "push", f.url(tt.token, "acme", tt.repo), "HEAD:refs/heads/x")
			} else {
				out, err = f.git("", "clone", f.url(tt.token, "acme", tt.repo), filepath.Join(t.TempDir(), "c"))
			}
			if err == nil {
				t.Fatalf("git succeeded, want it refused:\n%s", out)
			}
			if !strings.Contains(out, tt.wantOut) {
				t.Fatalf("git output lacks %q:\n%s", tt.wantOut, out)
			}
			if len(f.pushed.all()) != 0 {
				t.Fatalf("Pushed was called for a refused request")
			}
			if tt.push && f.ref(t, "refs/heads/x") != "" {
				t.Fatalf("refused push created refs/heads/x")
			}
		})
	}
}

func TestCheckPushRefusal(t *testing.T) {
	const msg = "refusing to allow direct push to protected branch main"
	var mu sync.Mutex
	var asked [][]pktline.RefUpdate
	f := newFixture(t, Options{CheckPush: func(_ *http.Request, owner, repo string, updates []pktline.RefUpdate) error {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, updates)
		for _, u := range updates {
			if u.Ref == "refs/heads/main" {
				return errors.New(msg)
			}
		}
		return nil
	}})
	dir := f.clone(t)
	before := f.ref(t, "refs/heads/main")
	f.commit(t, dir, "d.txt", "d\n")
	out, err := f.git(dir, "push", "origin", "main", "HEAD:refs/heads/side")
	if err == nil {
		t.Fatalf("push to a protected branch succeeded:\n%s", out)
	}
	for _, want := range []string{"remote: error: " + msg, "! [remote rejected] main -> main (" + msg + ")", "! [remote rejected] HEAD -> side (" + msg + ")"} {
		if !strings.Contains(out, want) {
			t.Errorf("git output lacks %q:\n%s", want, out)
		}
	}
	if got := f.ref(t, "refs/heads/main"); got != before {
		t.Errorf("main moved from %s to %s", before, got)
	}
	if got := f.ref(t, "refs/heads/side"); got != "" {
		t.Errorf("side was created at %s by a refused push", got)
	}
	if len(f.pushed.all()) != 0 {
		t.Errorf("Pushed was called for a refused push: %v", f.pushed.all())
	}
	mu.Lock()
	if len(asked) != 1 || len(asked[0]) != 2 {
		t.Errorf("CheckPush saw %v, want one call with two updates", asked)
	}
	mu.Unlock()
	// The same server lets other branches through.
	out = f.mustGit(t, dir, "push", "origin", "HEAD:refs/heads/side")
	if f.ref(t, "refs/heads/side") == "" {
		t.Fatalf("allowed push did not create side:\n%s", out)
	}
}

// TestLargePushThroughCheckPush sends a pack larger than git's post buffer, so git uses
// a chunked body after an authentication probe, both of which pass the command parser.
func TestLargePushThroughCheckPush(t *testing.T) {
	var checked atomic.Int32
	f := newFixture(t, Options{CheckPush: func(*http.Request, string, string, []pktline.RefUpdate) error {
		checked.Add(1)
		return nil
	}})
	dir := f.clone(t)
	big := make([]byte, 3<<20)
	for i := range big {
		big[i] = byte(i*7919>>3) ^ byte(i>>11)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.bin"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	f.mustGit(t, dir, "add", "big.bin")
	f.mustGit(t, dir, "commit", "--quiet", "-m", "big")
	head := f.mustGit(t, dir, "rev-parse", "HEAD")
	// Record how the pushes arrive, to be sure the chunked path is the one tested.
	var chunked, probes atomic.Int32
	rec := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/git-receive-pack") {
			if len(r.TransferEncoding) > 0 {
				chunked.Add(1)
			}
			if r.ContentLength == 4 {
				probes.Add(1)
			}
		}
		f.srv.ServeHTTP(w, r)
	}))
	defer rec.Close()
	url := strings.Replace(rec.URL, "http://", "http://x-access-token:"+writeToken+"@", 1) + "/acme/widgets.git"
	f.mustGit(t, dir, "-c", "http.postBuffer=65536", "push", "--quiet", url, "HEAD:refs/heads/big")
	if chunked.Load() != 1 || probes.Load() != 1 {
		t.Fatalf("saw %d chunked pushes and %d probes, want 1 of each", chunked.Load(), probes.Load())
	}
	if got := f.ref(t, "refs/heads/big"); got != head {
		t.Fatalf("big push left the branch at %q, want %s", got, head)
	}
	if checked.Load() != 1 {
		t.Fatalf("CheckPush called %d times, want 1 (the probe has no updates)", checked.Load())
	}
}

func TestBadPaths(t *testing.T) {
	f := newFixture(t, Options{})
	tests := []struct {
		name, method, path string
		wantStatus         int
	}{
		{name: "dot-dot owner", method: "GET", path: "/../x.git/info/refs?service=git-upload-pack", wantStatus: 404},
		{name: "three segments", method: "GET", path: "/a/b/c.git/info/refs?service=git-upload-pack", wantStatus: 404},
		{name: "empty repo name", method: "GET", path: "/acme/.git/info/refs?service=git-upload-pack", wantStatus: 404},
		{name: "no .git suffix", method: "GET", path: "/acme/widgets/info/refs?service=git-upload-pack", wantStatus: 404},
		{name: "dumb protocol", method: "GET", path: "/acme/widgets.git/info/refs", wantStatus: 404},
		{name: "dumb object path", method: "GET", path: "/acme/widgets.git/objects/info/packs", wantStatus: 404},
		{name: "HEAD file", method: "GET", path: "/acme/widgets.git/HEAD", wantStatus: 404},
		{name: "unknown service", method: "GET", path: "/acme/widgets.git/info/refs?service=git-upload-archive", wantStatus: 404},
		{name: "extra query", method: "GET", path: "/acme/widgets.git/info/refs?service=git-upload-pack&x=1", wantStatus: 404},
		{name: "percent-encoded name", method: "GET", path: "/acme/widg%65ts.git/info/refs?service=git-upload-pack", wantStatus: 404},
		{name: "encoded slash", method: "GET", path: "/acme%2Fwidgets.git/info/refs?service=git-upload-pack", wantStatus: 404},
		{name: "owner with underscore", method: "GET", path: "/ac_me/widgets.git/info/refs?service=git-upload-pack", wantStatus: 404},
		{name: "repo ending .git.git", method: "GET", path: "/acme/widgets.git.git/info/refs?service=git-upload-pack", wantStatus: 404},
		{name: "POST to info/refs", method: "POST", path: "/acme/widgets.git/info/refs?service=git-upload-pack", wantStatus: 405},
		{name: "GET upload-pack", method: "GET", path: "/acme/widgets.git/git-upload-pack", wantStatus: 405},
		{name: "no credentials", method: "GET", path: "/acme/widgets.git/info/refs?service=git-upload-pack", wantStatus: 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, f.http.URL+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, want %d (body %q)", resp.StatusCode, tt.wantStatus, body)
			}
			switch tt.wantStatus {
			case 404:
				if !strings.Contains(string(body), `"message":"Not Found"`) {
					t.Errorf("404 body %q is not GitHub's", body)
				}
			case 401:
				if got := resp.Header.Get("WWW-Authenticate"); got != `Basic realm="GitHub"` {
					t.Errorf("WWW-Authenticate %q", got)
				}
			}
		})
	}
}

func gzipBytes(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func post(t *testing.T, f *fixture, service string, body []byte, header map[string]string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", f.http.URL+"/acme/widgets.git/"+service, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("x-access-token", writeToken)
	req.Header.Set("Content-Type", "application/x-"+service+"-request")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

func TestGzipBodies(t *testing.T) {
	f := newFixture(t, Options{})
	main := f.ref(t, "refs/heads/main")
	if err := f.srv.UpdateRef(context.Background(), "acme", "widgets", "refs/heads/topic", main, ""); err != nil {
		t.Fatal(err)
	}
	pkt := func(lines ...string) []byte {
		var b []byte
		for _, l := range lines {
			var err error
			if l == "" {
				b = pktline.AppendFlush(b)
				continue
			}
			if b, err = pktline.AppendString(b, l); err != nil {
				t.Fatal(err)
			}
		}
		return b
	}

	t.Run("upload-pack", func(t *testing.T) {
		status, out := post(t, f, "git-upload-pack", gzipBytes(t, pkt("want "+main+"\n", "", "done\n")),
			map[string]string{"Content-Encoding": "gzip"})
		if status != 200 || !bytes.Contains(out, []byte("PACK")) {
			t.Fatalf("status %d, body %q, want a pack", status, out[:min(len(out), 80)])
		}
	})
	t.Run("upload-pack protocol v2", func(t *testing.T) {
		body := pkt("command=ls-refs\n", "object-format=sha1\n")
		body = append(body, "0001"...)
		body = append(body, pkt("ref-prefix refs/heads/\n", "")...)
		status, out := post(t, f, "git-upload-pack", gzipBytes(t, body),
			map[string]string{"Content-Encoding": "gzip", "Git-Protocol": "version=2"})
		if status != 200 || !bytes.Contains(out, []byte(main+" refs/heads/main")) {
			t.Fatalf("status %d, body %q, want the ref list", status, out)
		}
	})
	t.Run("receive-pack delete", func(t *testing.T) {
		zero := strings.Repeat("0", 40)
		status, out := post(t, f, "git-receive-pack", gzipBytes(t, pkt(main+" "+zero+" refs/heads/topic\x00 report-status", "")),
			map[string]string{"Content-Encoding": "gzip"})
		if status != 200 || !bytes.Contains(out, []byte("ok refs/heads/topic")) {
			t.Fatalf("status %d, body %q, want ok", status, out)
		}
		if got := f.ref(t, "refs/heads/topic"); got != "" {
			t.Fatalf("topic still at %s", got)
		}
		want := []pktline.RefUpdate{{Old: main, New: zero, Ref: "refs/heads/topic"}}
		if got := f.pushed.all(); len(got) != 1 || !slices.Equal(got[0], want) {
			t.Fatalf("Pushed got %v, want %v", got, want)
		}
	})
	t.Run("bad gzip", func(t *testing.T) {
		status, out := post(t, f, "git-upload-pack", []byte("not gzip"), map[string]string{"Content-Encoding": "gzip"})
		if status != http.StatusBadRequest || !strings.Contains(string(out), "not valid gzip") {
			t.Fatalf("status %d body %q, want 400 not valid gzip", status, out)
		}
	})
	t.Run("unknown encoding", func(t *testing.T) {
		status, _ := post(t, f, "git-upload-pack", []byte("x"), map[string]string{"Content-Encoding": "br"})
		if status != http.StatusUnsupportedMediaType {
			t.Fatalf("status %d, want 415", status)
		}
	})
	t.Run("malformed push", func(t *testing.T) {
		status, out := post(t, f, "git-receive-pack", pkt("not a command", ""), nil)
		if status != http.StatusBadRequest || !strings.Contains(string(out), "malformed push") {
			t.Fatalf("status %d body %q, want 400 malformed push", status, out)
		}
	})
}

func TestAuthorizeInternalError(t *testing.T) {
	f := newFixture(t, Options{Authorize: func(*http.Request, string, string, Access) error {
		return errors.New("state store unavailable")
	}})
	out, err := f.git("", "clone", f.url(writeToken, "acme", "widgets"), filepath.Join(t.TempDir(), "c"))
	if err == nil || !strings.Contains(out, "500") {
		t.Fatalf("clone with a failing Authorize: %v\n%s", err, out)
	}
}

// TestNamesIgnoreCase clones with the names in another case, as GitHub allows, and
// checks that the callbacks see the names as stored.
func TestNamesIgnoreCase(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	f := newFixture(t, Options{Authorize: func(r *http.Request, owner, repo string, access Access) error {
		mu.Lock()
		seen = append(seen, owner+"/"+repo)
		mu.Unlock()
		return testAuthorize(r, owner, repo, access)
	}})
	f.mustGit(t, "", "clone", "--quiet", f.url(readToken, "ACME", "Widgets"), filepath.Join(t.TempDir(), "c"))
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 {
		t.Fatal("Authorize was not called")
	}
	for _, s := range seen {
		if s != "acme/widgets" {
			t.Fatalf("Authorize saw %q, want the stored acme/widgets", s)
		}
	}
	if _, err := f.srv.CreateRepository(context.Background(), "Acme", "WIDGETS", "main", nil, Signature{}); !errors.Is(err, ErrRepositoryExists) {
		t.Fatalf("CreateRepository of a name differing in case: %v, want ErrRepositoryExists", err)
	}
}
