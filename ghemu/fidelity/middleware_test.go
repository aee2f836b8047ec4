package fidelity

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// testPaths are the description's templates the middleware tests exercise.
var testPaths = []string{
	"/repos/{owner}/{repo}/issues",
	"/repos/{owner}/{repo}/issues/{issue_number}",
	"/repos/{owner}/{repo}/issues/comments",
	"/repos/{owner}/{repo}/issues/comments/{comment_id}",
	"/repos/{owner}/{repo}/git/ref/{ref}",
	"/repos/{owner}/{repo}/branches/{branch}/protection",
}

// The description is loaded once per test binary and shared, as the emulator shares it:
// loading is the slow part, and sharing also exercises concurrent use.
var (
	testOpenAPI = sync.OnceValues(func() (*OpenAPI, error) {
		return LoadOpenAPI(Paths(testPaths...), Skip(func(r *http.Request) bool {
			return strings.Contains(r.URL.Path, ".git/") || strings.HasPrefix(r.URL.Path, "/_emulator/")
		}))
	})
	fullOpenAPI = sync.OnceValues(func() (*OpenAPI, error) { return LoadOpenAPI() })
)

func loadTestOpenAPI(t testing.TB) *OpenAPI {
	t.Helper()
	api, err := testOpenAPI()
	if err != nil {
		t.Fatalf("LoadOpenAPI: %v", err)
	}
	return api
}

func loadFullOpenAPI(t testing.TB) *OpenAPI {
	t.Helper()
	api, err := fullOpenAPI()
	if err != nil {
		t.Fatalf("LoadOpenAPI: %v", err)
	}
	return api
}

// readJSON returns a testdata file decoded for editing.
func readJSON(t testing.TB, name string) map[string]any {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// reply is what the test handler answers.
type reply struct {
	status      int
	contentType string
	body        any // marshalled to JSON unless it is a string
}

func (rp reply) serve(w http.ResponseWriter) {
	if rp.contentType != "" {
		w.Header().Set("Content-Type", rp.contentType)
	}
	w.WriteHeader(rp.status)
	switch b := rp.body.(type) {
	case nil:
	case string:
		_, _ = io.WriteString(w, b)
	default:
		_ = json.NewEncoder(w).Encode(b)
	}
}

func TestMiddleware(t *testing.T) {
	api := loadTestOpenAPI(t)
	const jsonCT = "application/json; charset=utf-8"
	issue := func(edit func(map[string]any)) map[string]any {
		m := readJSON(t, "issue.json")
		if edit != nil {
			edit(m)
		}
		return m
	}
	tests := []struct {
		name    string
		method  string
		path    string
		header  map[string]string
		body    string
		reply   reply
		want    []Mismatch // Message holds a substring; other fields must equal
		wantNot bool       // the request is skipped: the handler still runs
	}{
		{
			name: "real issue passes", method: "GET", path: "/repos/o/r/issues/1",
			reply: reply{200, jsonCT, issue(nil)},
		},
		{
			name: "missing required field", method: "GET", path: "/repos/o/r/issues/1",
			reply: reply{200, jsonCT, issue(func(m map[string]any) { delete(m, "title") })},
			want:  []Mismatch{{Phase: PhaseResponse, Status: 200, OperationID: "issues/get", Route: "/repos/{owner}/{repo}/issues/{issue_number}", Message: `/title: property "title" is missing`}},
		},
		{
			name: "wrong type", method: "GET", path: "/repos/o/r/issues/1",
			reply: reply{200, jsonCT, issue(func(m map[string]any) { m["number"] = "1" })},
			want:  []Mismatch{{Phase: PhaseResponse, Status: 200, Message: "/number"}},
		},
		{
			name: "date-time format is checked", method: "GET", path: "/repos/o/r/issues/1",
			reply: reply{200, jsonCT, issue(func(m map[string]any) { m["created_at"] = "yesterday" })},
			want:  []Mismatch{{Phase: PhaseResponse, Status: 200, Message: `/created_at: string doesn't match the format "date-time": not an RFC 3339 date-time`}},
		},
		{
			name: "uri format is checked", method: "GET", path: "/repos/o/r/issues/1",
			reply: reply{200, jsonCT, issue(func(m map[string]any) { m["html_url"] = "issues/1" })},
			want:  []Mismatch{{Phase: PhaseResponse, Status: 200, Message: `/html_url: string doesn't match the format "uri": not an absolute URI`}},
		},
		{
			name: "undeclared status", method: "GET", path: "/repos/o/r/issues/1",
			reply: reply{418, jsonCT, map[string]any{"message": "teapot"}},
			want:  []Mismatch{{Phase: PhaseResponse, Status: 418, Message: "status 418 is not one GitHub's description declares for issues/get (declared: 200, 301, 304, 404, 410)"}},
		},
		{
			name: "undeclared 401 with GitHub's error body", method: "GET", path: "/repos/o/r/issues/1",
			reply: reply{401, jsonCT, map[string]any{"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest", "status": "401"}},
		},
		{
			name: "undeclared 403 with a body of the wrong shape", method: "GET", path: "/repos/o/r/issues/1",
			reply: reply{403, jsonCT, map[string]any{"message": []any{"forbidden"}}},
			want:  []Mismatch{{Phase: PhaseResponse, Status: 403, Message: "/message"}},
		},
		{
			name: "undeclared 403 that is not JSON", method: "GET", path: "/repos/o/r/issues/1",
			reply: reply{403, "text/plain", "Forbidden"},
			want:  []Mismatch{{Phase: PhaseResponse, Status: 403, Message: "Content-Type"}},
		},
		{
			name: "undeclared 422 with GitHub's validation error", method: "PATCH", path: "/repos/o/r/issues/comments/1",
			header: map[string]string{"Content-Type": "application/json"}, body: `{"body":"x"}`,
			reply: reply{422, jsonCT, map[string]any{"message": "Validation Failed", "documentation_url": "https://docs.github.com/rest", "errors": []any{map[string]any{"resource": "IssueComment", "code": "custom", "field": "body"}}}},
		},
		{
			name: "undeclared 422 without documentation_url", method: "GET", path: "/repos/o/r/issues/comments/1",
			reply: reply{422, jsonCT, map[string]any{"message": "Validation Failed"}},
			want:  []Mismatch{{Phase: PhaseResponse, Status: 422, Message: "documentation_url"}},
		},
		{
			name: "undeclared 409 is refused", method: "GET", path: "/repos/o/r/issues/1",
			reply: reply{409, jsonCT, map[string]any{"message": "Conflict"}},
			want:  []Mismatch{{Phase: PhaseResponse, Status: 409, Message: "status 409 is not one"}},
		},
		{
			name: "undeclared 201 is refused", method: "GET", path: "/repos/o/r/issues/1",
			reply: reply{201, jsonCT, issue(nil)},
			want:  []Mismatch{{Phase: PhaseResponse, Status: 201, Message: "status 201 is not one"}},
		},
		{
			name: "declared error with GitHub's shape", method: "GET", path: "/repos/o/r/issues/9",
			reply: reply{404, jsonCT, map[string]any{"message": "Not Found", "documentation_url": "https://docs.github.com/rest", "status": "404"}},
		},
		{
			name: "error body of the wrong shape", method: "GET", path: "/repos/o/r/issues/9",
			reply: reply{404, jsonCT, map[string]any{"message": 404}},
			want:  []Mismatch{{Phase: PhaseResponse, Status: 404, Message: "/message"}},
		},
		{
			name: "no content type", method: "GET", path: "/repos/o/r/issues/1",
			reply: reply{200, "", issue(nil)},
			want:  []Mismatch{{Phase: PhaseResponse, Status: 200, Message: "Content-Type"}},
		},
		{
			name: "empty body where JSON is due", method: "GET", path: "/repos/o/r/issues/1",
			reply: reply{200, jsonCT, nil},
			want:  []Mismatch{{Phase: PhaseResponse, Status: 200}},
		},
		{
			name: "valid request body", method: "POST", path: "/repos/o/r/issues",
			header: map[string]string{"Content-Type": "application/json"}, body: `{"title":"Found a bug","labels":["agent:implement"]}`,
			reply: reply{201, jsonCT, issue(nil)},
		},
		{
			name: "request body missing required field", method: "POST", path: "/repos/o/r/issues",
			header: map[string]string{"Content-Type": "application/json"}, body: `{"body":"no title"}`,
			reply: reply{201, jsonCT, issue(nil)},
			want:  []Mismatch{{Phase: PhaseRequest, OperationID: "issues/create", Message: `property "title" is missing`}},
		},
		{
			name: "malformed request body", method: "POST", path: "/repos/o/r/issues",
			header: map[string]string{"Content-Type": "application/json"}, body: `{"title":`,
			reply: reply{400, jsonCT, map[string]any{"message": "Problems parsing JSON"}},
			want:  []Mismatch{{Phase: PhaseRequest, Message: "request body"}},
		},
		{
			name: "body where none is described", method: "GET", path: "/repos/o/r/issues/1",
			header: map[string]string{"Content-Type": "application/json"}, body: `{"x":1}`,
			reply: reply{200, jsonCT, issue(nil)},
			want:  []Mismatch{{Phase: PhaseRequest, Message: "body"}},
		},
		{
			name: "path parameter of the wrong type", method: "GET", path: "/repos/o/r/issues/abc",
			reply: reply{404, jsonCT, map[string]any{"message": "Not Found"}},
			want:  []Mismatch{{Phase: PhaseRequest, Message: `"issue_number"`}},
		},
		{
			name: "query parameter out of enum", method: "GET", path: "/repos/o/r/issues?state=maybe",
			reply: reply{200, jsonCT, []any{}},
			want:  []Mismatch{{Phase: PhaseRequest, OperationID: "issues/list-for-repo", Message: `"state"`}},
		},
		{
			name: "unknown route", method: "GET", path: "/repos/o/r/frobnicate",
			reply: reply{404, jsonCT, map[string]any{"message": "Not Found"}},
			want:  []Mismatch{{Phase: PhaseRequest, Route: "", OperationID: "", Message: "is not a route of GitHub's REST API"}},
		},
		{
			name: "method GitHub lacks", method: "PUT", path: "/repos/o/r/issues/1",
			reply: reply{404, jsonCT, map[string]any{"message": "Not Found"}},
			want:  []Mismatch{{Phase: PhaseRequest, Message: "GitHub's API has no PUT on /repos/{owner}/{repo}/issues/{issue_number} (it has GET, PATCH)"}},
		},
		{
			name: "GitHub route not loaded", method: "GET", path: "/rate_limit",
			reply: reply{200, jsonCT, map[string]any{}},
			want:  []Mismatch{{Phase: PhaseRequest, Message: "GitHub's /rate_limit, which was not among the paths given to fidelity.Paths"}},
		},
		{
			name: "skipped git path", method: "GET", path: "/o/r.git/info/refs?service=git-upload-pack",
			reply: reply{200, "application/x-git-upload-pack-advertisement", "001e# service=git-upload-pack\n"}, wantNot: true,
		},
		{
			name: "skipped control path", method: "POST", path: "/_emulator/reset",
			reply: reply{204, "", nil}, wantNot: true,
		},
		{
			name: "literal segment beats parameter", method: "GET", path: "/repos/o/r/issues/comments",
			reply: reply{200, jsonCT, []any{}},
		},
		{
			name: "ref with slashes", method: "GET", path: "/repos/o/r/git/ref/heads/bumper/12-1",
			reply: reply{200, jsonCT, readJSON(t, "git-ref.json")},
		},
		{
			name: "escaped branch name", method: "GET", path: "/repos/o/r/branches/bumper%2F12-1/protection",
			reply: reply{404, jsonCT, map[string]any{"message": "Branch not protected"}},
		},
		{
			name: "304 declared", method: "GET", path: "/repos/o/r/issues/1",
			header: map[string]string{"If-None-Match": `"abc"`},
			reply:  reply{304, "", nil},
		},
		{
			name: "304 undeclared but conditional", method: "GET", path: "/repos/o/r/issues/comments/1",
			header: map[string]string{"If-None-Match": `"abc"`},
			reply:  reply{304, "", nil},
		},
		{
			name: "304 undeclared and unconditional", method: "GET", path: "/repos/o/r/issues/comments/1",
			reply: reply{304, "", nil},
			want:  []Mismatch{{Phase: PhaseResponse, Status: 304, OperationID: "issues/get-comment", Message: "status 304 is not one"}},
		},
		{
			name: "204 with a body", method: "DELETE", path: "/repos/o/r/issues/comments/1",
			reply: reply{204, jsonCT, `{"deleted":true}`},
			want:  []Mismatch{{Phase: PhaseResponse, Status: 204, Message: "status 204 carries no body, but the handler wrote 16 bytes"}},
		},
		{
			name: "204 without a body", method: "DELETE", path: "/repos/o/r/issues/comments/1",
			reply: reply{204, "", nil},
		},
		{
			name: "HEAD is looked up as GET", method: "HEAD", path: "/repos/o/r/issues/1",
			reply: reply{200, jsonCT, nil},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []Mismatch
			served := false
			h := api.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				served = true
				tt.reply.serve(w)
			}), func(m Mismatch) { got = append(got, m) })
			req := httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body))
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			h.ServeHTTP(httptest.NewRecorder(), req)
			if !served {
				t.Fatal("the handler was not called")
			}
			if len(got) > 0 {
				t.Logf("mismatches:\n%s", mismatchList(got))
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d mismatches, want %d:\n%s", len(got), len(tt.want), mismatchList(got))
			}
			for i, w := range tt.want {
				g := got[i]
				if g.Method != tt.method || g.Path != strings.SplitN(tt.path, "?", 2)[0] {
					t.Errorf("mismatch %d names %s %s, want %s %s", i, g.Method, g.Path, tt.method, tt.path)
				}
				if g.Phase != w.Phase || (w.Status != 0 && g.Status != w.Status) ||
					(w.OperationID != "" && g.OperationID != w.OperationID) || (w.Route != "" && g.Route != w.Route) {
					t.Errorf("mismatch %d is %+v, want %+v", i, g, w)
				}
				if !strings.Contains(g.Message, w.Message) {
					t.Errorf("mismatch %d message %q does not contain %q", i, g.Message, w.Message)
				}
			}
		})
	}
}

func mismatchList(ms []Mismatch) string {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString("  " + m.String() + "\n")
	}
	return b.String()
}

// TestMiddlewarePassesThrough checks that neither side sees the validator: the handler
// gets the client's body byte for byte (no defaults filled in), and the client gets the
// handler's status, headers and body unchanged.
func TestMiddlewarePassesThrough(t *testing.T) {
	api := loadTestOpenAPI(t)
	const reqBody = `{"title":"t"}`
	respBody, err := os.ReadFile("testdata/issue.json")
	if err != nil {
		t.Fatal(err)
	}
	var gotReq []byte
	h := api.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotReq, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("ETag", `W/"1"`)
		w.Header().Set("X-RateLimit-Remaining", "4999")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(respBody[:10])
		_, _ = w.Write(respBody[10:])
	}), func(m Mismatch) { t.Errorf("unexpected mismatch: %s", m) })
	srv := httptest.NewServer(h)
	defer srv.Close()

	resp, err := http.Post(srv.URL+"/repos/o/r/issues", "application/json", strings.NewReader(reqBody))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	gotResp, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if string(gotReq) != reqBody {
		t.Errorf("handler got request body %q, want %q", gotReq, reqBody)
	}
	if resp.StatusCode != http.StatusCreated {
		t.Errorf("client got status %d, want 201", resp.StatusCode)
	}
	if !bytes.Equal(gotResp, respBody) {
		t.Errorf("client got a different body (%d bytes, want %d)", len(gotResp), len(respBody))
	}
	for k, v := range map[string]string{"ETag": `W/"1"`, "X-RateLimit-Remaining": "4999"} {
		if resp.Header.Get(k) != v {
			t.Errorf("client got %s %q, want %q", k, resp.Header.Get(k), v)
		}
	}
}

// TestMiddlewareConcurrent shares one OpenAPI between many requests at once; run it
// with -race.
func TestMiddlewareConcurrent(t *testing.T) {
	api := loadTestOpenAPI(t)
	body, err := os.ReadFile("testdata/issue.json")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []Mismatch
	h := api.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}), func(m Mismatch) { mu.Lock(); got = append(got, m); mu.Unlock() })
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/repos/o/r/issues/1", nil))
		})
	}
	wg.Wait()
	if len(got) != 0 {
		t.Errorf("concurrent requests reported mismatches:\n%s", mismatchList(got))
	}
}

func TestLoadOpenAPIRejectsUnknownPath(t *testing.T) {
	_, err := LoadOpenAPI(Paths("/repos/{owner}/{repo}/issues", "/repos/{o}/{r}/issues"))
	if err == nil {
		t.Fatal("LoadOpenAPI accepted a template that is not in the description")
	}
	if !strings.Contains(err.Error(), "/repos/{o}/{r}/issues") {
		t.Errorf("error %q does not name the bad template", err)
	}
}

// TestMiddlewareLogsAndNilBody checks that a mismatch is also logged through the
// request's zerolog logger, and that a request built without a body (as a handler test
// may build it) is handled.
func TestMiddlewareLogsAndNilBody(t *testing.T) {
	api := loadTestOpenAPI(t)
	var logs bytes.Buffer
	ctx := zerolog.New(&logs).WithContext(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", "http://emulator.test/repos/o/r/issues/1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if req.Body != nil {
		t.Fatal("test needs a request with a nil Body")
	}
	var got []Mismatch
	api.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	}), func(m Mismatch) { got = append(got, m) }).ServeHTTP(httptest.NewRecorder(), req)
	if len(got) != 1 || got[0].Status != http.StatusTeapot {
		t.Fatalf("want one mismatch about status 418, got:\n%s", mismatchList(got))
	}
	for _, want := range []string{`"level":"warn"`, `"operation":"issues/get"`, `"phase":"response"`, `"status":418`, `"path":"/repos/o/r/issues/1"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log %q lacks %s", logs.String(), want)
		}
	}
}

func TestPathCount(t *testing.T) {
	tests := []struct {
		name               string
		api                *OpenAPI
		wantLoaded, wantIn int
	}{
		{"named paths", loadTestOpenAPI(t), len(testPaths), 811},
		{"whole description", loadFullOpenAPI(t), 811, 811},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			loaded, in := tt.api.PathCount()
			if loaded != tt.wantLoaded || in != tt.wantIn {
				t.Errorf("PathCount() = %d, %d; want %d, %d", loaded, in, tt.wantLoaded, tt.wantIn)
			}
		})
	}
}

// TestMiddlewareClientGone: a client that hangs up (a process killed mid-request) leaves
// the handler to answer its cancelled work with a 500 nobody reads; that is not held
// against the emulator. The same 500 to a client that waits is.
func TestMiddlewareClientGone(t *testing.T) {
	api := loadTestOpenAPI(t)
	for _, tc := range []struct {
		name    string
		hangUp  bool
		reports int
	}{
		{"the client hung up", true, 0},
		{"the client waited", false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			reports := 0
			handled := make(chan struct{})
			h := api.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				defer close(handled)
				if tc.hangUp {
					<-r.Context().Done()
				}
				http.Error(w, "internal", http.StatusInternalServerError)
			}), func(Mismatch) { mu.Lock(); reports++; mu.Unlock() })
			srv := httptest.NewServer(h)
			defer srv.Close()
			ctx, cancel := context.WithCancel(context.Background())
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/repos/o/r/issues/1", nil)
			if tc.hangUp {
				go func() { time.Sleep(50 * time.Millisecond); cancel() }()
			}
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
			cancel()
			<-handled
			srv.Close() // waits for the middleware to have reported
			mu.Lock()
			defer mu.Unlock()
			if reports != tc.reports {
				t.Fatalf("%d mismatches reported, want %d", reports, tc.reports)
			}
		})
	}
}
