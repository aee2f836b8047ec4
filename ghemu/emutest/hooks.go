package emutest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"sync"
	"testing"

	"github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/gitserver"
)

// HookSecret is the webhook secret a Receiver checks; emulators under test are given it
// through Options.WebhookSecret.
const HookSecret = "test-webhook-secret"

// Receiver is a webhook endpoint that checks signatures the way an App must, and
// fails its first failFirst deliveries with 500.
type Receiver struct {
	t         testing.TB
	mu        sync.Mutex
	events    []Received
	failFirst int
}

// Received is one webhook a Receiver accepted.
type Received struct {
	Event, Delivery, Agent string
	// Payload is the event as go-github parses it.
	Payload any
	// Body is the payload as sent, for what go-github does not parse.
	Body []byte
}

// NewReceiver starts a Receiver for the test and returns it with its URL.
func NewReceiver(t testing.TB, failFirst int) (*Receiver, string) {
	rc := &Receiver{t: t, failFirst: failFirst}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	return rc, srv.URL
}

func (rc *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := github.ValidatePayload(r, []byte(HookSecret))
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
	rc.events = append(rc.events, Received{Event: github.WebHookType(r), Delivery: github.DeliveryID(r),
		Agent: r.UserAgent(), Payload: ev, Body: body})
}

// Got is what the receiver accepted so far, in order.
func (rc *Receiver) Got() []Received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]Received(nil), rc.events...)
}

// Git runs the real git client with a private HOME so the machine's configuration
// does not leak in.
func Git(t testing.TB, ctx context.Context, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=Mae", "GIT_AUTHOR_EMAIL=maintainer@example.test",
		"GIT_COMMITTER_NAME=Mae", "GIT_COMMITTER_EMAIL=maintainer@example.test")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// CloneURL is the default repository's clone URL with x-access-token:<token> in it, as
// Actions writes it.
func CloneURL(e *ghemu.Emulator, token string) string {
	u, _ := url.Parse(e.BaseURL() + "/" + ghemu.DefaultOrg + "/" + ghemu.DefaultRepo + ".git")
	u.User = url.UserPassword("x-access-token", token)
	return u.String()
}

// BranchWithCommit makes branch of the default repository from main with one new file,
// without a clone, and returns the new commit.
func BranchWithCommit(t testing.TB, e *ghemu.Emulator, branch, file string) string {
	t.Helper()
	ctx := Context(t)
	org, repo := ghemu.DefaultOrg, ghemu.DefaultRepo
	refs, err := e.Git().Refs(ctx, org, repo)
	if err != nil {
		t.Fatal(err)
	}
	main := refs["refs/heads/main"]
	if err := e.Git().UpdateRef(ctx, org, repo, "refs/heads/"+branch, main, ""); err != nil {
		t.Fatal(err)
	}
	sha, err := e.Git().CommitFiles(ctx, org, repo, branch, main, map[string][]byte{file: []byte("x\n")},
		"Add "+file, gitserver.Signature{Name: "bumper", Email: "bumper@example.test"})
	if err != nil {
		t.Fatal(err)
	}
	return sha
}
