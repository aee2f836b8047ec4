package webhook_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
)

func TestWebhooksAreSignedAndNameTheSender(t *testing.T) {
	rc, url := emutest.NewReceiver(t, 0)
	e := emutest.New(t, ghemu.Options{WebhookURL: url, WebhookSecret: emutest.HookSecret})
	ctx := emutest.Context(t)
	c := emutest.UserClient(t, e, ghemu.DefaultMaintainer)
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
	got := rc.Got()
	var kinds []string
	for _, ev := range got {
		kinds = append(kinds, ev.Event)
		if !strings.HasPrefix(ev.Agent, "GitHub-Hookshot/") || ev.Delivery == "" {
			t.Errorf("%s: User-Agent %q, delivery %q", ev.Event, ev.Agent, ev.Delivery)
		}
	}
	want := "installation,issues,issues,issue_comment"
	if strings.Join(kinds, ",") != want {
		t.Fatalf("events = %v, want %s", kinds, want)
	}
	lab, ok := got[2].Payload.(*github.IssuesEvent)
	if !ok || lab.GetAction() != "labeled" || lab.GetLabel().GetName() != "agent:implement" ||
		lab.GetSender().GetLogin() != ghemu.DefaultMaintainer || lab.GetInstallation().GetID() != e.InstallationID(org) {
		t.Errorf("labeled event = %+v", got[2].Payload)
	}
	cm, ok := got[3].Payload.(*github.IssueCommentEvent)
	if !ok || cm.GetComment().GetBody() != "/approve" || cm.GetIssue().GetNumber() != 1 {
		t.Errorf("comment event = %+v", got[3].Payload)
	}
}

func TestFailedDeliveriesAreKeptAndRedelivered(t *testing.T) {
	rc, url := emutest.NewReceiver(t, 2)
	e := emutest.New(t, ghemu.Options{WebhookURL: url, WebhookSecret: emutest.HookSecret})
	ctx := emutest.Context(t)
	c := emutest.UserClient(t, e, ghemu.DefaultMaintainer)
	if _, _, err := c.Issues.Create(ctx, org, repo, &github.IssueRequest{Title: github.String("t")}); err != nil {
		t.Fatal(err)
	}
	if err := e.WaitWebhooks(ctx); err != nil {
		t.Fatal(err)
	}
	failed := e.FailedDeliveries()
	if len(failed) != 2 || len(rc.Got()) != 0 {
		t.Fatalf("failed deliveries = %v, received %d; want 2 failed, none received", failed, len(rc.Got()))
	}
	app := emutest.AppClient(t, e)
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
	if got := rc.Got(); len(got) != 2 || got[1].Event != "issues" {
		t.Fatalf("after redelivery received %v", got)
	}
	if f := e.FailedDeliveries(); len(f) != 0 {
		t.Errorf("still failed after redelivery: %v", f)
	}
}

func TestPing(t *testing.T) {
	rc, url := emutest.NewReceiver(t, 0)
	e := emutest.New(t, ghemu.Options{WebhookURL: url, WebhookSecret: emutest.HookSecret})
	ctx := emutest.Context(t)
	e.Ping()
	if err := e.WaitWebhooks(ctx); err != nil {
		t.Fatal(err)
	}
	got := rc.Got()
	if len(got) != 2 || got[1].Event != "ping" {
		t.Fatalf("events = %+v, want installation then ping", got)
	}
	if p, ok := got[1].Payload.(*github.PingEvent); !ok || p.GetHook().GetID() != e.AppID() {
		t.Errorf("ping = %+v", got[1].Payload)
	}
}

// TestDroppedDeliveries: a dropped delivery never reaches the App, is listed as failed
// (code 0), and its redelivery keeps the GUID and says redelivery.
func TestDroppedDeliveries(t *testing.T) {
	rc, url := emutest.NewReceiver(t, 0)
	e := emutest.New(t, ghemu.Options{WebhookURL: url, WebhookSecret: emutest.HookSecret})
	ctx := emutest.Context(t)
	c := emutest.UserClient(t, e, ghemu.DefaultMaintainer)
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
	before := rc.Got()
	for _, ev := range before {
		if ev.Event == "issue_comment" {
			t.Fatalf("received %v: the dropped delivery reached the App", before)
		}
	}
	app := emutest.AppClient(t, e)
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
	got := rc.Got()
	if len(got) != len(before)+1 || got[len(got)-1].Event != "issue_comment" || got[len(got)-1].Delivery != dropped.GetGUID() {
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
	_, url := emutest.NewReceiver(t, 0)
	e := emutest.New(t, ghemu.Options{WebhookURL: url, WebhookSecret: emutest.HookSecret})
	ctx := emutest.Context(t)
	c := emutest.UserClient(t, e, ghemu.DefaultMaintainer)
	for i := 0; i < 5; i++ {
		if _, _, err := c.Issues.Create(ctx, org, repo, &github.IssueRequest{Title: github.String("t")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.WaitWebhooks(ctx); err != nil {
		t.Fatal(err)
	}
	app := emutest.AppClient(t, e)
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
