package ghemu_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/ghemu"
)

// receiver is a webhook endpoint that checks signatures the way an App must, and
// fails its first `failFirst` deliveries with 500.
type receiver struct {
	t         *testing.T
	mu        sync.Mutex
	events    []received
	failFirst int
}

type received struct {
	event, delivery, agent string
	payload                any
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := github.ValidatePayload(r, []byte(hookSecret))
	if err != nil {
		rc.t.Errorf("webhook signature: %v", err)
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	ev, err := github.ParseWebHook(github.WebHookType(r), body)
	if err != nil {
		rc.t.Errorf("go-github cannot parse the %s webhook: %v", github.WebHookType(r), err)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.failFirst > 0 {
		rc.failFirst--
		http.Error(w, "try again later", http.StatusInternalServerError)
		return
	}
	rc.events = append(rc.events, received{event: github.WebHookType(r), delivery: github.DeliveryID(r),
		agent: r.UserAgent(), payload: ev})
}

func (rc *receiver) got() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.events...)
}

// hookSecret is the webhook secret the receivers check; emulators under test are given
// it through Options.WebhookSecret.
const hookSecret = "test-webhook-secret"

func newReceiver(t *testing.T, failFirst int) (*receiver, string) {
	rc := &receiver{t: t, failFirst: failFirst}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	return rc, srv.URL
}

func TestWebhooksAreSignedAndNameTheSender(t *testing.T) {
	rc, url := newReceiver(t, 0)
	e := newEmulator(t, ghemu.Options{WebhookURL: url, WebhookSecret: hookSecret})
	ctx := ctxT(t)
	c := userClient(t, e, ghemu.DefaultMaintainer)
	if _, _, err := c.Issues.Create(ctx, org, repo, &github.IssueRequest{Title: github.String("t")}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Issues.AddLabelsToIssue(ctx, org, repo, 1, []string{"agent:implement"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Issues.CreateComment(ctx, org, repo, 1, &github.IssueComment{Body: github.String("/approve")}); err != nil {
		t.Fatal(err)
	}
	if err := e.WaitWebhooks(ctx); err != nil {
		t.Fatal(err)
	}
	got := rc.got()
	var kinds []string
	for _, ev := range got {
		kinds = append(kinds, ev.event)
		if !strings.HasPrefix(ev.agent, "GitHub-Hookshot/") || ev.delivery == "" {
			t.Errorf("%s: User-Agent %q, delivery %q", ev.event, ev.agent, ev.delivery)
		}
	}
	want := "installation,issues,issues,issue_comment"
	if strings.Join(kinds, ",") != want {
		t.Fatalf("events = %v, want %s", kinds, want)
	}
	lab, ok := got[2].payload.(*github.IssuesEvent)
	if !ok || lab.GetAction() != "labeled" || lab.GetLabel().GetName() != "agent:implement" ||
		lab.GetSender().GetLogin() != ghemu.DefaultMaintainer || lab.GetInstallation().GetID() != e.InstallationID(org) {
		t.Errorf("labeled event = %+v", got[2].payload)
	}
	cm, ok := got[3].payload.(*github.IssueCommentEvent)
	if !ok || cm.GetComment().GetBody() != "/approve" || cm.GetIssue().GetNumber() != 1 {
		t.Errorf("comment event = %+v", got[3].payload)
	}
}

func TestFailedDeliveriesAreKeptAndRedelivered(t *testing.T) {
	rc, url := newReceiver(t, 2)
	e := newEmulator(t, ghemu.Options{WebhookURL: url, WebhookSecret: hookSecret})
	ctx := ctxT(t)
	c := userClient(t, e, ghemu.DefaultMaintainer)
	if _, _, err := c.Issues.Create(ctx, org, repo, &github.IssueRequest{Title: github.String("t")}); err != nil {
		t.Fatal(err)
	}
	if err := e.WaitWebhooks(ctx); err != nil {
		t.Fatal(err)
	}
	failed := e.FailedDeliveries()
	if len(failed) != 2 || len(rc.got()) != 0 {
		t.Fatalf("failed deliveries = %v, received %d; want 2 failed, none received", failed, len(rc.got()))
	}
	app := appClient(t, e)
	list, _, err := app.Apps.ListHookDeliveries(ctx, nil)
	if err != nil || len(list) != 2 || list[0].GetStatusCode() != 500 {
		t.Fatalf("deliveries = %v, %v", list, err)
	}
	full, _, err := app.Apps.GetHookDelivery(ctx, list[0].GetID())
	if err != nil || full.Request == nil || full.Request.Headers["X-GitHub-Event"] == "" {
		t.Fatalf("delivery detail = %+v, %v", full, err)
	}
	for _, id := range failed {
		// GitHub answers 202 Accepted, which go-github reports as an AcceptedError.
		_, resp, err := app.Apps.RedeliverHookDelivery(ctx, id)
		var accepted *github.AcceptedError
		if !errors.As(err, &accepted) || resp.StatusCode != http.StatusAccepted {
			t.Fatalf("redeliver: %v", err)
		}
	}
	if err := e.WaitWebhooks(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rc.got(); len(got) != 2 || got[1].event != "issues" {
		t.Fatalf("after redelivery received %v", got)
	}
	if f := e.FailedDeliveries(); len(f) != 0 {
		t.Errorf("still failed after redelivery: %v", f)
	}
}

func TestPing(t *testing.T) {
	rc, url := newReceiver(t, 0)
	e := newEmulator(t, ghemu.Options{WebhookURL: url, WebhookSecret: hookSecret})
	ctx := ctxT(t)
	e.Ping()
	if err := e.WaitWebhooks(ctx); err != nil {
		t.Fatal(err)
	}
	got := rc.got()
	if len(got) != 2 || got[1].event != "ping" {
		t.Fatalf("events = %+v, want installation then ping", got)
	}
	if p, ok := got[1].payload.(*github.PingEvent); !ok || p.GetHook().GetID() != e.AppID() {
		t.Errorf("ping = %+v", got[1].payload)
	}
}

// TestDroppedDeliveries: a dropped delivery never reaches the App, is listed as failed
// (code 0), and its redelivery keeps the GUID and says redelivery.
func TestDroppedDeliveries(t *testing.T) {
	rc, url := newReceiver(t, 0)
	e := newEmulator(t, ghemu.Options{WebhookURL: url, WebhookSecret: hookSecret})
	ctx := ctxT(t)
	c := userClient(t, e, ghemu.DefaultMaintainer)
	e.DropDeliveries("issue_comment", 1)
	if _, _, err := c.Issues.Create(ctx, org, repo, &github.IssueRequest{Title: github.String("t")}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Issues.CreateComment(ctx, org, repo, 1, &github.IssueComment{Body: github.String("/approve")}); err != nil {
		t.Fatal(err)
	}
	if err := e.WaitWebhooks(ctx); err != nil {
		t.Fatal(err)
	}
	before := rc.got()
	for _, ev := range before {
		if ev.event == "issue_comment" {
			t.Fatalf("received %v: the dropped delivery reached the App", before)
		}
	}
	app := appClient(t, e)
	list, _, err := app.Apps.ListHookDeliveries(ctx, nil)
	if err != nil || len(list) == 0 {
		t.Fatalf("deliveries = %v, %v", list, err)
	}
	dropped := list[0]
	if dropped.GetEvent() != "issue_comment" || dropped.GetStatusCode() != 0 || dropped.GetRedelivery() {
		t.Fatalf("dropped delivery = %+v", dropped)
	}
	for status, want := range map[string]int{"success": len(list) - 1, "failure": 0} {
		req, _ := app.NewRequest(http.MethodGet, "app/hook/deliveries?status="+status, nil)
		var out []*github.HookDelivery
		if _, err := app.Do(ctx, req, &out); err != nil || len(out) != want {
			t.Errorf("status=%s: %d deliveries (%v), want %d", status, len(out), err, want)
		}
	}
	var accepted *github.AcceptedError
	if _, _, err := app.Apps.RedeliverHookDelivery(ctx, dropped.GetID()); !errors.As(err, &accepted) {
		t.Fatalf("redeliver: %v", err)
	}
	if err := e.WaitWebhooks(ctx); err != nil {
		t.Fatal(err)
	}
	got := rc.got()
	if len(got) != len(before)+1 || got[len(got)-1].event != "issue_comment" || got[len(got)-1].delivery != dropped.GetGUID() {
		t.Fatalf("after redelivery received %v", got)
	}
	n := len(list)
	list, _, err = app.Apps.ListHookDeliveries(ctx, nil)
	if err != nil || len(list) != n+1 || !list[0].GetRedelivery() || list[0].GetGUID() != dropped.GetGUID() || list[0].GetStatusCode() != http.StatusOK {
		t.Fatalf("deliveries after redelivery = %v, %v", list, err)
	}
}

// TestDeliveriesPageByCursor: the list pages by cursor, newest first, as GitHub's does.
func TestDeliveriesPageByCursor(t *testing.T) {
	_, url := newReceiver(t, 0)
	e := newEmulator(t, ghemu.Options{WebhookURL: url, WebhookSecret: hookSecret})
	ctx := ctxT(t)
	c := userClient(t, e, ghemu.DefaultMaintainer)
	for i := 0; i < 5; i++ {
		if _, _, err := c.Issues.Create(ctx, org, repo, &github.IssueRequest{Title: github.String("t")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.WaitWebhooks(ctx); err != nil {
		t.Fatal(err)
	}
	app := appClient(t, e)
	opts := &github.ListCursorOptions{PerPage: 2}
	var ids []int64
	pages := 0
	for {
		list, resp, err := app.Apps.ListHookDeliveries(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, d := range list {
			ids = append(ids, d.GetID())
		}
		if resp.Cursor == "" {
			break
		}
		opts.Cursor = resp.Cursor
	}
	if pages != (len(ids)+1)/2 || len(ids) < 6 {
		t.Fatalf("%d pages, ids %v; want at least 6 (5 issues, the installation) in pages of 2", pages, ids)
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] >= ids[i-1] {
			t.Fatalf("ids %v not newest first", ids)
		}
	}
}
