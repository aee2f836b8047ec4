package fidelity

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// FuzzMiddleware feeds arbitrary methods, paths, bodies and statuses through the
// middleware, as request and as response; it must not panic, and every mismatch must
// name the request it is about.
func FuzzMiddleware(f *testing.F) {
	issue, err := os.ReadFile("testdata/issue.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add("GET", "/repos/o/r/issues/1", []byte(nil), 200, issue)
	f.Add("POST", "/repos/o/r/issues", []byte(`{"title":"x","labels":[{"name":1}]}`), 201, issue)
	f.Add("PATCH", "/repos/o/r/issues/1?state=open", []byte(`{"state":"nope","milestone":{}}`), 422, []byte(`{"message":"Validation Failed","errors":[]}`))
	f.Add("GET", "/repos/o/r/git/ref/heads/%2e%2e/x", []byte(nil), 200, []byte(`[1,2`))
	f.Add("DELETE", "/repos/o/r/issues/comments/1", []byte(`null`), 204, []byte(`x`))
	f.Add("GET", "/repos/o/r/branches/%zz/protection", []byte(nil), 304, []byte(nil))
	f.Add("PUT", "/", []byte(`{"a":`), 999, []byte(`{}`))
	api := loadTestOpenAPI(f)

	f.Fuzz(func(t *testing.T, method, target string, reqBody []byte, status int, respBody []byte) {
		req, err := http.NewRequestWithContext(context.Background(), method, "http://emulator.test"+target, bytes.NewReader(reqBody))
		if err != nil {
			t.Skip("not an HTTP request net/http would build")
		}
		req.Header.Set("Content-Type", "application/json")
		if status < 100 || status > 999 {
			status = 200
		}
		h := api.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = w.Write(respBody)
		}), func(m Mismatch) {
			if m.Method != req.Method || m.Message == "" || (m.Phase != PhaseRequest && m.Phase != PhaseResponse) {
				t.Errorf("malformed mismatch %+v", m)
			}
			if m.Phase == PhaseResponse && m.Status != status {
				t.Errorf("mismatch has status %d, want %d", m.Status, status)
			}
			if strings.TrimSpace(m.String()) == "" {
				t.Error("empty mismatch text")
			}
		})
		h.ServeHTTP(httptest.NewRecorder(), req)
	})
}
