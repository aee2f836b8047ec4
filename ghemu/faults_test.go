package ghemu_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
	"github.com/bumperdev/bumper/ghemu/faults"
)

// exchange is one raw answer of the emulator.
type exchange struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

// call sends one REST request with a personal token.
func call(t *testing.T, e *ghemu.Emulator, token, method, path string, body any) exchange {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, e.BaseURL()+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "token "+token)
	req.Header.Set("Accept", "application/vnd.github+json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	x := exchange{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	_ = json.Unmarshal(raw, &x.body)
	return x
}

func seedOf(v uint64) *uint64 { return &v }

const commentsRoute = "/repos/{owner}/{repo}/issues/{issue_number}/comments"

// TestFaultsREST: each kind of fault, at rate 1 on one route, answers every request of
// that route and method as GitHub would, changes nothing, and leaves other routes and
// methods alone.
func TestFaultsREST(t *testing.T) {
	comment := map[string]any{"body": "hello"}
	tests := []struct {
		name   string
		rule   faults.RESTRule
		kind   faults.Kind
		method string
		path   string
		body   any
		status int
		// check looks at the faulted answer.
		check func(t *testing.T, x exchange)
		// unchanged checks that the faulted request changed nothing.
		unchanged func(t *testing.T, e *ghemu.Emulator, token string)
	}{
		{name: "502", rule: faults.RESTRule{Route: commentsRoute, Methods: []string{"POST"}, BadGateway: 1},
			kind: faults.BadGateway, method: "POST", path: "/repos/acme/widgets/issues/1/comments", body: comment, status: 502,
			check: func(t *testing.T, x exchange) {
				if strings.TrimSpace(x.raw) != `{"message":"Server Error"}` {
					t.Errorf("body = %s", x.raw)
				}
			}},
		{name: "503", rule: faults.RESTRule{Route: "/repos/*/*/issues/*/comments", Methods: []string{"post"}, Unavailable: 1},
			kind: faults.Unavailable, method: "POST", path: "/repos/acme/widgets/issues/1/comments", body: comment, status: 503,
			check: func(t *testing.T, x exchange) {
				if !strings.HasPrefix(x.body["message"].(string), "No server is currently available to service your request.") {
					t.Errorf("body = %s", x.raw)
				}
			}},
		{name: "403 secondary rate limit", rule: faults.RESTRule{Route: "/repos/acme/**/comments", Methods: []string{"POST"}, SecondaryRateLimit: 1},
			kind: faults.SecondaryRateLimit, method: "POST", path: "/repos/acme/widgets/issues/1/comments", body: comment, status: 403,
			check: func(t *testing.T, x exchange) { checkSecondary(t, x, "60") }},
		{name: "429", rule: faults.RESTRule{Route: commentsRoute, Methods: []string{"POST"}, TooManyRequests: 1, RetryAfter: 5},
			kind: faults.TooManyRequests, method: "POST", path: "/repos/acme/widgets/issues/1/comments", body: comment, status: 429,
			check: func(t *testing.T, x exchange) { checkSecondary(t, x, "5") }},
		{name: "422 race on creating a ref", rule: faults.RESTRule{Route: "/repos/{owner}/{repo}/git/refs", Methods: []string{"POST"}, Race: 1},
			kind: faults.Race, method: "POST", path: "/repos/acme/widgets/git/refs", status: 422,
			check: func(t *testing.T, x exchange) {
				if x.body["message"] != "Reference already exists" {
					t.Errorf("body = %s", x.raw)
				}
			},
			unchanged: func(t *testing.T, e *ghemu.Emulator, token string) {
				if x := call(t, e, token, "GET", "/repos/acme/widgets/git/ref/bumper/dispatch/1-r-1", nil); x.status != 404 {
					t.Errorf("the faulted request created the ref: %d %s", x.status, x.raw)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := emutest.New(t, ghemu.Options{Faults: &ghemu.FaultsConfig{Seed: seedOf(1), REST: []faults.RESTRule{tt.rule}}})
			token := e.UserToken(ghemu.DefaultMaintainer)
			if x := call(t, e, token, "POST", "/repos/acme/widgets/issues", map[string]any{"title": "t"}); x.status != 201 {
				t.Fatalf("creating an issue (another route) = %d %s", x.status, x.raw)
			}
			body := tt.body
			if tt.kind == faults.Race {
				main := call(t, e, token, "GET", "/repos/acme/widgets/git/ref/heads/main", nil)
				sha := main.body["object"].(map[string]any)["sha"]
				body = map[string]any{"ref": "refs/bumper/dispatch/1-r-1", "sha": sha}
			}
			for range 3 {
				x := call(t, e, token, tt.method, tt.path, body)
				if x.status != tt.status {
					t.Fatalf("%s %s = %d %s, want %d", tt.method, tt.path, x.status, x.raw, tt.status)
				}
				tt.check(t, x)
			}
			if got := e.Faults().Counts().ByKind[tt.kind]; got != 3 {
				t.Errorf("counted %d faults of kind %s, want 3", got, tt.kind)
			}
			if tt.unchanged != nil {
				tt.unchanged(t, e, token)
			} else if x := call(t, e, token, "GET", "/repos/acme/widgets/issues/1/comments", nil); x.status != 200 || strings.TrimSpace(x.raw) != "[]" {
				t.Errorf("the faulted requests changed the world, or the GET of the route was faulted: %d %s", x.status, x.raw)
			}
			if x := call(t, e, token, "GET", "/repos/acme/widgets", nil); x.status != 200 {
				t.Errorf("another route was faulted: %d %s", x.status, x.raw)
			}
		})
	}
}

// checkSecondary checks a secondary rate limit answer against GitHub's: the message,
// the documentation_url clients recognise it by, retry-after, and no x-ratelimit
// headers (those are the primary limit's).
func checkSecondary(t *testing.T, x exchange, retryAfter string) {
	t.Helper()
	msg, _ := x.body["message"].(string)
	reqID := x.header.Get("X-GitHub-Request-Id")
	if !strings.HasPrefix(msg, "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.") ||
		reqID == "" || !strings.HasSuffix(msg, "please include the request ID "+reqID+".") {
		t.Errorf("message = %q (request ID %q)", msg, reqID)
	}
	if x.body["documentation_url"] != faults.SecondaryDocsURL || !strings.HasSuffix(faults.SecondaryDocsURL, "#about-secondary-rate-limits") {
		t.Errorf("documentation_url = %v", x.body["documentation_url"])
	}
	if got := x.header.Get("Retry-After"); got != retryAfter {
		t.Errorf("retry-after = %q, want %q", got, retryAfter)
	}
	if got := x.header.Get("X-RateLimit-Remaining"); got != "" {
		t.Errorf("x-ratelimit-remaining = %q on a secondary rate limit", got)
	}
}

// TestFaultsSecondaryRateLimitGoGitHub: go-github, as Bumper's App uses it, sees the
// 403 as a secondary rate limit with its Retry-After.
func TestFaultsSecondaryRateLimitGoGitHub(t *testing.T) {
	e := emutest.New(t, ghemu.Options{Faults: &ghemu.FaultsConfig{REST: []faults.RESTRule{
		{Route: "/repos/{owner}/{repo}/issues/{issue_number}", Methods: []string{"GET"}, SecondaryRateLimit: 1, RetryAfter: 42}}}})
	c := emutest.UserClient(t, e, ghemu.DefaultMaintainer)
	_, _, err := c.Issues.Get(emutest.Context(t), org, repo, 1)
	var abuse *github.AbuseRateLimitError
	if !errors.As(err, &abuse) || abuse.GetRetryAfter() != 42*time.Second {
		t.Fatalf("err = %#v, want an AbuseRateLimitError with RetryAfter 42s", err)
	}
}

// TestFaultsLatency: a rule's latency delays the requests it matches, and no others.
func TestFaultsLatency(t *testing.T) {
	e := emutest.New(t, ghemu.Options{Faults: &ghemu.FaultsConfig{REST: []faults.RESTRule{
		{Route: "/repos/{owner}/{repo}/labels", Latency: faults.Latency{Min: 200 * time.Millisecond, Max: 250 * time.Millisecond}}}}})
	token := e.UserToken(ghemu.DefaultMaintainer)
	start := time.Now()
	if x := call(t, e, token, "GET", "/repos/acme/widgets/labels", nil); x.status != 200 {
		t.Fatalf("labels = %d", x.status)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("the delayed request took %v", d)
	}
	start = time.Now()
	call(t, e, token, "GET", "/repos/acme/widgets", nil)
	if d := time.Since(start); d >= 200*time.Millisecond {
		t.Errorf("an undelayed request took %v", d)
	}
	c := e.Faults().Counts()
	if c.ByKind[faults.Delay] != 1 || c.Delay < 200*time.Millisecond || c.Delay > 250*time.Millisecond || c.Total() != 0 {
		t.Errorf("counts = %+v", c)
	}
}

// TestFaultsSeedReplays: the same seed and the same requests give the same faults;
// another seed, others.
func TestFaultsSeedReplays(t *testing.T) {
	sequence := func(seed uint64) string {
		e := emutest.New(t, ghemu.Options{Faults: &ghemu.FaultsConfig{Seed: seedOf(seed), REST: []faults.RESTRule{
			{Route: "/repos/{owner}/{repo}", BadGateway: 0.3, Unavailable: 0.2, TooManyRequests: 0.1}}}})
		if e.Faults().Seed() != seed {
			t.Fatalf("seed = %d, want %d", e.Faults().Seed(), seed)
		}
		token := e.UserToken(ghemu.DefaultMaintainer)
		var b strings.Builder
		for range 40 {
			b.WriteString(http.StatusText(call(t, e, token, "GET", "/repos/acme/widgets", nil).status)[:1])
		}
		return b.String()
	}
	first, again, other := sequence(7), sequence(7), sequence(8)
	if first != again {
		t.Errorf("seed 7 gave %s, then %s", first, again)
	}
	if first == other {
		t.Errorf("seeds 7 and 8 gave the same faults: %s", first)
	}
	if !strings.Contains(first, "O") || !strings.Contains(first, "B") {
		t.Errorf("seed 7 gave %s: no mix of answers", first)
	}
}

// TestFaultsEarlyRetries: a request with the credential that was told to retry after
// N seconds is counted when it comes sooner, on any route; after, or with another
// credential, it is not.
func TestFaultsEarlyRetries(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	e := emutest.New(t, ghemu.Options{Now: clock, Faults: &ghemu.FaultsConfig{REST: []faults.RESTRule{
		{Route: commentsRoute, Methods: []string{"POST"}, SecondaryRateLimit: 1, RetryAfter: 30}}}})
	maintainer, reader := e.UserToken(ghemu.DefaultMaintainer), e.UserToken(ghemu.DefaultReader)
	call(t, e, maintainer, "POST", "/repos/acme/widgets/issues", map[string]any{"title": "t"})
	if x := call(t, e, maintainer, "POST", "/repos/acme/widgets/issues/1/comments", map[string]any{"body": "b"}); x.status != 403 {
		t.Fatalf("comment = %d", x.status)
	}
	steps := []struct {
		after time.Duration
		token string
		want  int
	}{
		{10 * time.Second, maintainer, 1}, // too soon, another route
		{0, reader, 1},                    // another credential
		{21 * time.Second, maintainer, 1}, // after the 30 seconds
		{0, maintainer, 1},
	}
	for i, s := range steps {
		advance(s.after)
		call(t, e, s.token, "GET", "/repos/acme/widgets/issues/1", nil)
		if got := e.Faults().EarlyRetries(); got != s.want {
			t.Fatalf("step %d: %d early retries, want %d", i, got, s.want)
		}
	}
	log := e.Faults().EarlyRetryLog()
	if len(log) != 1 || log[0].Path != "/repos/acme/widgets/issues/1" || log[0].Early != 20*time.Second {
		t.Errorf("early retries = %+v", log)
	}
}

// TestFaultsEarlyRetriesAfterTheAnswer: a limit's answer goes out after its rule's
// latency; a request of that credential sent meanwhile (the client could not know) is
// not early, and the Retry-After counts from the answer.
func TestFaultsEarlyRetriesAfterTheAnswer(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	e := emutest.New(t, ghemu.Options{Now: clock, Faults: &ghemu.FaultsConfig{REST: []faults.RESTRule{
		{Route: commentsRoute, Methods: []string{"POST"}, SecondaryRateLimit: 1, RetryAfter: 10, Latency: faults.Latency{Min: 2 * time.Second, Max: 2 * time.Second}}}}})
	maintainer := e.UserToken(ghemu.DefaultMaintainer)
	call(t, e, maintainer, "POST", "/repos/acme/widgets/issues", map[string]any{"title": "t"})
	if x := call(t, e, maintainer, "POST", "/repos/acme/widgets/issues/1/comments", map[string]any{"body": "b"}); x.status != 403 {
		t.Fatalf("comment = %d", x.status)
	}
	for i, s := range []struct {
		after time.Duration
		want  int
	}{
		{time.Second, 0},      // while the answer was on its way
		{10 * time.Second, 1}, // 9 s after it, of 10
		{2 * time.Second, 1},  // 11 s after it: free again
	} {
		advance(s.after)
		call(t, e, maintainer, "GET", "/repos/acme/widgets/issues/1", nil)
		if got := e.Faults().EarlyRetries(); got != s.want {
			t.Fatalf("step %d: %d early retries, want %d", i, got, s.want)
		}
	}
}

// TestFaultsEarlyRetriesBeforeTheAnswerIsWritten: a busy host writes a limit's answer
// later than its rule's latency says; a request of that credential that comes meanwhile
// (the client cannot know yet) is not early, and the Retry-After counts from when the
// answer was written.
func TestFaultsEarlyRetriesBeforeTheAnswerIsWritten(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	// The rule's latency is a second of the emulator's clock and of the timer's; the
	// test moves the clock five seconds on while the timer still runs, as a host too busy
	// to write the answer on time would.
	e := emutest.New(t, ghemu.Options{Now: clock, Faults: &ghemu.FaultsConfig{REST: []faults.RESTRule{
		{Route: commentsRoute, Methods: []string{"POST"}, SecondaryRateLimit: 1, RetryAfter: 10, Latency: faults.Latency{Min: time.Second, Max: time.Second}}}}})
	maintainer := e.UserToken(ghemu.DefaultMaintainer)
	call(t, e, maintainer, "POST", "/repos/acme/widgets/issues", map[string]any{"title": "t"})
	limited := make(chan int, 1)
	go func() {
		limited <- call(t, e, maintainer, "POST", "/repos/acme/widgets/issues/1/comments", map[string]any{"body": "b"}).status
	}()
	for e.Faults().Counts().ByKind[faults.SecondaryRateLimit] == 0 {
		time.Sleep(10 * time.Millisecond) // until the limit is decided, its answer not yet written
	}
	advance(5 * time.Second)
	call(t, e, maintainer, "GET", "/repos/acme/widgets/issues/1", nil)
	if got := e.Faults().EarlyRetries(); got != 0 {
		t.Fatalf("a request before the limit's answer was written counted as early: %+v", e.Faults().EarlyRetryLog())
	}
	if status := <-limited; status != http.StatusForbidden {
		t.Fatalf("comment = %d", status)
	}
	advance(time.Second)
	call(t, e, maintainer, "GET", "/repos/acme/widgets/issues/1", nil)
	if log := e.Faults().EarlyRetryLog(); len(log) != 1 || log[0].Early != 9*time.Second {
		t.Fatalf("a request a second after the answer was written: early retries %+v, want one 9s early", log)
	}
}

// TestFaultsDroppedDelivery: a dropped delivery is a failed one in the App's delivery
// log, and redelivers with its GUID.
func TestFaultsDroppedDelivery(t *testing.T) {
	rc, url := emutest.NewReceiver(t, 0)
	e := emutest.New(t, ghemu.Options{WebhookURL: url, WebhookSecret: emutest.HookSecret, Faults: &ghemu.FaultsConfig{
		Webhooks: []faults.WebhookRule{{Events: []string{"issue_comment.created"}, Drop: 1}}}})
	ctx := emutest.Context(t)
	c := emutest.UserClient(t, e, ghemu.DefaultMaintainer)
	if _, _, err := c.Issues.Create(ctx, org, repo, &github.IssueRequest{Title: github.String("t")}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Issues.CreateComment(ctx, org, repo, 1, &github.IssueComment{Body: github.String("/approve")}); err != nil {
		t.Fatal(err)
	}
	if err := e.WaitWebhooks(ctx); err != nil {
		t.Fatal(err)
	}
	if got := events(rc); len(got) != 1 || got[0].Event != "issues" {
		t.Fatalf("received %v, want the issues delivery alone", got)
	}
	if n := len(e.FailedDeliveries()); n != 1 {
		t.Fatalf("%d failed deliveries, want 1", n)
	}
	app := emutest.AppClient(t, e)
	list, _, err := app.Apps.ListHookDeliveries(ctx, nil)
	if err != nil || len(list) == 0 {
		t.Fatalf("deliveries = %v, %v", list, err)
	}
	dropped := list[0]
	if dropped.GetEvent() != "issue_comment" || dropped.GetStatusCode() != 0 || !strings.Contains(dropped.GetStatus(), "failed to connect") {
		t.Fatalf("dropped delivery = %+v", dropped)
	}
	if _, _, err := app.Apps.RedeliverHookDelivery(ctx, dropped.GetID()); err != nil && !errors.As(err, new(*github.AcceptedError)) {
		t.Fatal(err)
	}
	if err := e.WaitWebhooks(ctx); err != nil {
		t.Fatal(err)
	}
	got := events(rc)
	if len(got) != 2 || got[1].Event != "issue_comment" || got[1].Delivery != dropped.GetGUID() {
		t.Fatalf("after redelivery received %v, want issue_comment %s", got, dropped.GetGUID())
	}
	if n := len(e.FailedDeliveries()); n != 0 {
		t.Errorf("%d failed deliveries after the redelivery", n)
	}
	if c := e.Faults().Counts(); c.ByKind[faults.Drop] != 1 || c.Total() != 1 {
		t.Errorf("counts = %+v", c)
	}
}

// TestFaultsDuplicatedDelivery: a duplicated delivery arrives twice with one GUID, and
// both attempts are in the delivery log.
func TestFaultsDuplicatedDelivery(t *testing.T) {
	rc, url := emutest.NewReceiver(t, 0)
	e := emutest.New(t, ghemu.Options{WebhookURL: url, WebhookSecret: emutest.HookSecret, Faults: &ghemu.FaultsConfig{
		Webhooks: []faults.WebhookRule{{Events: []string{"issues"}, Duplicate: 1}}}})
	ctx := emutest.Context(t)
	c := emutest.UserClient(t, e, ghemu.DefaultMaintainer)
	if _, _, err := c.Issues.Create(ctx, org, repo, &github.IssueRequest{Title: github.String("t")}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Issues.CreateComment(ctx, org, repo, 1, &github.IssueComment{Body: github.String("hi")}); err != nil {
		t.Fatal(err)
	}
	if err := e.WaitWebhooks(ctx); err != nil {
		t.Fatal(err)
	}
	got := events(rc)
	if len(got) != 3 || got[0].Event != "issues" || got[1].Event != "issues" || got[2].Event != "issue_comment" ||
		got[0].Delivery != got[1].Delivery || got[0].Delivery == "" {
		t.Fatalf("received %v, want issues twice with one GUID, then issue_comment once", got)
	}
	list, _, err := emutest.AppClient(t, e).Apps.ListHookDeliveries(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	same := 0
	for _, d := range list {
		if d.GetGUID() == got[0].Delivery && d.GetStatusCode() == 200 && !d.GetRedelivery() {
			same++
		}
	}
	if same != 2 {
		t.Errorf("%d successful attempts of %s in the delivery log, want 2", same, got[0].Delivery)
	}
	if c := e.Faults().Counts(); c.ByKind[faults.Duplicate] != 1 {
		t.Errorf("counts = %+v", c)
	}
}

// received is what a test needs of a delivery.
type received struct{ Event, Delivery string }

// events are the deliveries rc accepted, but the installation announcement.
func events(rc *emutest.Receiver) []received {
	var out []received
	for _, r := range rc.Got() {
		if r.Event != "installation" {
			out = append(out, received{r.Event, r.Delivery})
		}
	}
	return out
}
