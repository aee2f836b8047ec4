package app

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	gogithub "github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/ghemu"
)

// TestPullRequestLifecycle: the work branch's pull request is recorded when opened;
// closing the issue meanwhile defers to it; Re-run on its check is /retry; closing it
// unmerged stops the work item.
func TestPullRequestLifecycle(t *testing.T) {
	t.Parallel()
	h := newHarness(t, noReviewer())
	n, run := h.approved()
	code, resp, body := h.exchange(exchangeRequest(h, run, h.runnerToken(run)))
	if code != http.StatusOK {
		t.Fatalf("exchange: %d %s", code, body)
	}
	if code, body := h.post(http.MethodPost, wire.PathProgress, resp.RunToken, wire.Progress{State: "verifying"}); code != http.StatusNoContent {
		t.Fatalf("verifying: %d %s", code, body)
	}
	prNum, head := h.runnerPull(n, 1, resp.InstallationToken)
	if code, body := h.post(http.MethodPost, wire.PathProgress, resp.RunToken, wire.Progress{State: "in-review", PullRequest: prNum, HeadCommit: head}); code != http.StatusNoContent {
		t.Fatalf("in-review: %d %s", code, body)
	}
	h.settle()
	if r := h.expectState(n, ledger.InReview); r.PullRequest != prNum {
		t.Fatalf("pull request %d recorded, want %d", r.PullRequest, prNum)
	}
	maint := h.user(ghemu.DefaultMaintainer)
	pr, _, err := maint.PullRequests.Get(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, prNum)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := maint.Issues.Edit(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, n, &gogithub.IssueRequest{State: gogithub.String("closed")}); err != nil {
		t.Fatal(err)
	}
	h.settle()
	h.expectState(n, ledger.InReview)

	// Re-run on a check of the pull request is /retry, under the same rules. The
	// emulator's check_run "rerequested" body does not match GitHub's webhook schema yet
	// (details_url null, check_suite summary incomplete), so the webhook is signed and
	// posted here, shaped as GitHub sends it.
	h.comment(ghemu.DefaultMaintainer, n, "/stop")
	h.expectState(n, ledger.Stopped)
	h.rerequest(pr.GetNumber(), ghemu.DefaultReader)
	h.expectState(n, ledger.Stopped)
	if replies := h.botReplies(n); len(replies) == 0 || !strings.Contains(replies[len(replies)-1], "Sorry @reader") {
		t.Fatalf("no refusal for a reader's Re-run: %q", replies)
	}
	h.rerequest(pr.GetNumber(), ghemu.DefaultMaintainer)
	h.expectState(n, ledger.AwaitingApproval)

	// The retry's attempt opens a pull request of its own: the earlier one is history,
	// and closing it changes nothing.
	if r := h.record(n); r.PullRequest != 0 {
		t.Fatalf("the retried item still names pull request #%d", r.PullRequest)
	}
	if _, _, err := maint.PullRequests.Edit(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, pr.GetNumber(), &gogithub.PullRequest{State: gogithub.String("closed")}); err != nil {
		t.Fatal(err)
	}
	h.settle()
	h.expectState(n, ledger.AwaitingApproval)
}

// TestPullRequestClosedOrMerged: the work item's pull request closed unmerged stops it;
// merged by a person, it is done.
func TestPullRequestClosedOrMerged(t *testing.T) {
	for _, merge := range []bool{false, true} {
		t.Run(map[bool]string{false: "closed", true: "merged"}[merge], func(t *testing.T) {
			seed := noReviewer()
			seed.Repositories[0].Protected = nil
			h := newHarness(t, seed)
			n, pr, _ := h.handedOver()
			maint := h.user(ghemu.DefaultMaintainer)
			var err error
			if merge {
				_, _, err = maint.PullRequests.Merge(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, pr, "", nil)
			} else {
				_, _, err = maint.PullRequests.Edit(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, pr, &gogithub.PullRequest{State: gogithub.String("closed")})
			}
			if err != nil {
				t.Fatal(err)
			}
			h.settle()
			want := map[bool]ledger.State{false: ledger.Stopped, true: ledger.Done}[merge]
			if r := h.expectState(n, want); !strings.Contains(r.Reason, fmt.Sprintf("#%d", pr)) {
				t.Fatalf("reason %q", r.Reason)
			}
			is, _, err := maint.Issues.Get(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, n)
			if err != nil || (is.GetState() == "closed") != merge {
				t.Fatalf("issue #%d is %s after the pull request was %s (Fixes #%d closes it on a merge only): %v", n, is.GetState(), map[bool]string{false: "closed", true: "merged"}[merge], n, err)
			}
		})
	}
}

// rerequest delivers a signed check_run "rerequested" webhook for a check of the pull
// request, as GitHub does when someone presses Re-run.
func (h *harness) rerequest(pr int, by string) {
	h.t.Helper()
	payload := map[string]any{
		"action": "rerequested",
		"check_run": map[string]any{"id": 1, "name": "bumper/verdict", "status": "completed", "conclusion": "failure",
			"pull_requests": []map[string]any{{"number": pr}}},
		"repository":   map[string]any{"name": ghemu.DefaultRepo, "full_name": ghemu.DefaultOrg + "/" + ghemu.DefaultRepo, "default_branch": "main", "owner": map[string]any{"login": ghemu.DefaultOrg}},
		"installation": map[string]any{"id": h.e.InstallationID(ghemu.DefaultOrg)},
		"sender":       map[string]any{"login": by, "type": "User"},
	}
	h.deliver("check_run", fmt.Sprintf("rerequest-%d-%s", pr, by), payload)
}

// deliver posts a webhook to serve, signed with the App's secret, as GitHub sends it,
// for the events the emulator does not emit itself, and waits until it is handled.
func (h *harness) deliver(event, delivery string, payload any) {
	h.t.Helper()
	if code := h.deliverAnswered(event, delivery, payload); code >= 300 {
		h.t.Fatalf("%s webhook answered %d", event, code)
	}
}

// deliverAnswered is deliver that returns serve's answer, whatever it is.
func (h *harness) deliverAnswered(event, delivery string, payload any) int {
	h.t.Helper()
	raw, _ := json.Marshal(payload)
	mac := hmac.New(sha256.New, []byte(testSecret))
	mac.Write(raw)
	req, _ := http.NewRequest(http.MethodPost, h.hs.URL+h.cfg.Server.WebhookPath, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("%s-%d", delivery, time.Now().UnixNano()))
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	resp.Body.Close()
	h.settle()
	return resp.StatusCode
}
