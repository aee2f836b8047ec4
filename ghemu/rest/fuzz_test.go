package rest_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/bumperdev/bumper/ghemu"
)

// FuzzRequests throws arbitrary methods, paths and bodies at the REST surface with a
// valid token: nothing may panic, and every answer must be a GitHub-shaped status.
func FuzzRequests(f *testing.F) {
	e, err := ghemu.New(ghemu.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = e.Close() })
	e.SetBaseURL("http://emulator.test")
	h := e.Handler()
	tok := e.UserToken(ghemu.DefaultMaintainer)
	seeds := []struct{ method, path, body string }{
		{"POST", "/repos/acme/widgets/issues", `{"title":"t","labels":["a"],"assignees":["maintainer"]}`},
		{"PATCH", "/repos/acme/widgets/issues/1", `{"state":"closed","labels":[1]}`},
		{"POST", "/repos/acme/widgets/issues/1/labels", `[{"name":"x"},"y"]`},
		{"PUT", "/repos/acme/widgets/issues/1/labels", `{"labels":null}`},
		{"POST", "/repos/acme/widgets/git/refs", `{"ref":"refs/heads/a","sha":"zz"}`},
		{"POST", "/repos/acme/widgets/check-runs", `{"name":"c","head_sha":"0000000000000000000000000000000000000000","output":{}}`},
		{"POST", "/repos/acme/widgets/actions/workflows/%2e%2e/dispatches", `{"ref":"main","inputs":{"a":[1]}}`},
		{"GET", "/repos/acme/widgets/contents/../../etc/passwd", ``},
		{"GET", "/repos/acme/widgets/issues?per_page=99999999999999999999&page=0", ``},
	}
	for _, s := range seeds {
		f.Add(s.method, s.path, s.body)
	}
	f.Fuzz(func(t *testing.T, method, path, body string) {
		if len(path) == 0 || path[0] != '/' {
			path = "/" + path
		}
		req, err := http.NewRequest(method, "http://emulator.test"+path, bytes.NewReader([]byte(body)))
		if err != nil {
			return
		}
		req.Header.Set("Authorization", "token "+tok)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 && rec.Code != http.StatusInternalServerError {
			t.Fatalf("%s %s: status %d", method, path, rec.Code)
		}
		if rec.Code == http.StatusInternalServerError {
			t.Fatalf("%s %s %q: internal error %s", method, path, body, rec.Body.String())
		}
	})
}
