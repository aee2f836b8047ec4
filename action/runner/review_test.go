package runner

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bumperdev/bumper/action/appclient"
	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/workspace"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/internal/repoconfig"
	"github.com/bumperdev/bumper/internal/verdict"
)

const (
	baseSHA = "1111111111111111111111111111111111111111"
	headSHA = "2222222222222222222222222222222222222222"
)

// TestCheckGrant: the grant's branch and pull request are held to the run's own issue
// and stage before anything is fetched or pushed with them, as a serve that erred (or
// a grant for another run) would send them.
func TestCheckGrant(t *testing.T) {
	tests := []struct {
		name, stage string
		attempt     int
		grant       wire.ExchangeResponse
		want        string // "" accepted, with wantBranch
		wantBranch  string
	}{
		{"implement, its own branch", "implement", 2, wire.ExchangeResponse{Branch: "bumper/7-2"}, "", "bumper/7-2"},
		{"implement, a serve that names none", "implement", 2, wire.ExchangeResponse{}, "", "bumper/7-2"},
		{"plan, none", "plan", 1, wire.ExchangeResponse{}, "", "bumper/7-1"},
		{"implement on another attempt's branch", "implement", 2, wire.ExchangeResponse{Branch: "bumper/7-1"}, "the attempt's own", ""},
		{"implement on main", "implement", 1, wire.ExchangeResponse{Branch: "main"}, "works only on bumper/7-<attempt>", ""},
		{"implement on another issue's branch", "implement", 1, wire.ExchangeResponse{Branch: "bumper/8-1"}, "works only on bumper/7-<attempt>", ""},
		{"implement on a ref", "implement", 1, wire.ExchangeResponse{Branch: "refs/heads/bumper/7-1"}, "works only on", ""},
		{"fix on the pull request's branch", "fix", 3, wire.ExchangeResponse{Branch: "bumper/7-1", PullRequest: 9, HeadCommit: headSHA}, "", "bumper/7-1"},
		{"review on the pull request's branch", "review", 2, wire.ExchangeResponse{Branch: "bumper/7-1", PullRequest: 9, HeadCommit: headSHA}, "", "bumper/7-1"},
		{"fix without a branch", "fix", 3, wire.ExchangeResponse{PullRequest: 9, HeadCommit: headSHA}, "works only on", ""},
		{"fix on its own new branch", "fix", 3, wire.ExchangeResponse{Branch: "bumper/7-3", PullRequest: 9, HeadCommit: headSHA}, "earlier attempt", ""},
		{"fix on main", "fix", 3, wire.ExchangeResponse{Branch: "main", PullRequest: 9, HeadCommit: headSHA}, "works only on", ""},
		{"fix without its pull request", "fix", 3, wire.ExchangeResponse{Branch: "bumper/7-1", HeadCommit: headSHA}, "without its pull request", ""},
		{"review without a head", "review", 2, wire.ExchangeResponse{Branch: "bumper/7-1", PullRequest: 9}, "not a full commit id", ""},
		{"review with a short head", "review", 2, wire.ExchangeResponse{Branch: "bumper/7-1", PullRequest: 9, HeadCommit: headSHA[:12]}, "not a full commit id", ""},
		{"review with a branch name for head", "review", 2, wire.ExchangeResponse{Branch: "bumper/7-1", PullRequest: 9, HeadCommit: "bumper/7-1"}, "not a full commit id", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := tt.grant
			g.BaseCommit = baseSHA
			r := &run{cfg: Config{Stage: tt.stage, Attempt: tt.attempt}, issue: 7, grant: g}
			err := r.checkGrant()
			if tt.want == "" {
				if err != nil || r.branch != tt.wantBranch {
					t.Fatalf("checkGrant = %v, branch %q; want %q", err, r.branch, tt.wantBranch)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || r.branch != "" {
				t.Fatalf("checkGrant = %v (branch %q); want a refusal saying %q", err, r.branch, tt.want)
			}
		})
	}
	t.Run("a task that names another pull request", func(t *testing.T) {
		r := &run{cfg: Config{Stage: "fix", Attempt: 2}, issue: 7, grant: wire.ExchangeResponse{Branch: "bumper/7-1", PullRequest: 9, HeadCommit: headSHA, BaseCommit: baseSHA}}
		if err := r.checkGrant(); err != nil {
			t.Fatal(err)
		}
		for _, task := range []wire.Task{{PullRequest: 10}, {Branch: "bumper/7-3"}, {HeadCommit: baseSHA}} {
			r.task = task
			if err := r.checkTask(); err == nil {
				t.Errorf("task %+v taken", task)
			}
		}
		r.task = wire.Task{PullRequest: 9, Branch: "bumper/7-1", HeadCommit: headSHA}
		if err := r.checkTask(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestPushRules: what the firewall lets each stage push: an implement run its own new
// branch; a fix run the pull request's branch, only on from its head; a plan or review
// run nothing; pushes start closed.
func TestPushRules(t *testing.T) {
	for _, tt := range []struct {
		stage, branch, head, wantRef, wantFrom string
	}{
		{"implement", "bumper/7-2", "", "refs/heads/bumper/7-2", ""},
		{"fix", "bumper/7-1", headSHA, "refs/heads/bumper/7-1", headSHA},
		{"review", "bumper/7-1", headSHA, "", ""},
		{"plan", "bumper/7-1", "", "", ""},
	} {
		t.Run(tt.stage, func(t *testing.T) {
			r := &run{cfg: Config{Stage: tt.stage, Out: t.TempDir()}, repo: "acme/widgets", issue: 7, branch: tt.branch,
				grant: wire.ExchangeResponse{HeadCommit: tt.head}}
			c := r.firewallConfig("127.0.0.1:0")
			if c.Gateway.PushRef != tt.wantRef || c.Gateway.PushFrom != tt.wantFrom || (tt.wantRef != "") != c.Gateway.PushClosed {
				t.Fatalf("push ref %q from %q closed %v; want %q from %q, closed", c.Gateway.PushRef, c.Gateway.PushFrom, c.Gateway.PushClosed, tt.wantRef, tt.wantFrom)
			}
		})
	}
}

// TestReviewConventions: a review run's TASK.md says what to read, that nothing it
// changes is kept and pushes are refused, and how to write verdict.json, with an
// example that is itself a valid verdict.
func TestReviewConventions(t *testing.T) {
	c := string(conventions("review"))
	for _, want := range []string{"/out/verdict.json", "verdict-v1", "pr.diff", "evidence.md", workspace.GuestHead, workspace.GuestBase, "BUMPER_VERIFICATION", "every push is refused", "nothing you change is kept", "never an approval"} {
		if !strings.Contains(c, want) {
			t.Errorf("the review conventions lack %q:\n%s", want, c)
		}
	}
	if strings.Contains(c, "Commit your work") {
		t.Errorf("a reviewer is told to commit:\n%s", c)
	}
	_, rest, _ := strings.Cut(c, "```json\n")
	example, _, _ := strings.Cut(rest, "```")
	if _, err := verdict.Parse([]byte(example)); err != nil {
		t.Fatalf("the example verdict does not parse: %v\n%s", err, example)
	}
	fix := string(conventions("fix"))
	if !strings.Contains(fix, "fix round") || !strings.Contains(fix, "Do not push") {
		t.Errorf("the fix conventions:\n%s", fix)
	}
	if got := commitMessage("Fix failing checks", 7); got != "Fix failing checks (issue 7)" {
		t.Errorf("the fix round's commit message: %q", got)
	}
}

// TestReadVerdict: what the reviewer left in /out is untrusted: a valid verdict is kept
// as written and summarized; one that does not parse is still kept (serve decides) and
// fails the run; none, a link to a file elsewhere, a directory and one too large give
// no document at all.
func TestReadVerdict(t *testing.T) {
	valid := `{"schema_version": 1, "verdict": "request_changes", "confidence": 0.9, "summary": "No.", "findings": [{"severity": "major", "message": "x"}, {"severity": "nit", "message": "y"}]}`
	tests := []struct {
		name    string
		plant   func(t *testing.T, out string)
		doc     bool   // the document is kept for serve
		fail    string // the run's reason, "" for success
		verdict string
	}{
		{"a valid verdict", func(t *testing.T, out string) { write(t, out, valid) }, true, "", "request_changes"},
		{"a malformed verdict", func(t *testing.T, out string) {
			write(t, out, `{"schema_version": 1, "verdict": "lgtm", "confidence": 1, "summary": "ok", "findings": []}`)
		}, true, "does not parse", ""},
		{"no verdict", func(*testing.T, string) {}, false, "wrote no /out/verdict.json", ""},
		{"a link to the host's files", func(t *testing.T, out string) {
			if err := os.Symlink("/etc/passwd", filepath.Join(out, VerdictFile)); err != nil {
				t.Fatal(err)
			}
		}, false, "not a regular file", ""},
		{"a directory", func(t *testing.T, out string) {
			if err := os.Mkdir(filepath.Join(out, VerdictFile), 0o755); err != nil {
				t.Fatal(err)
			}
		}, false, "not a regular file", ""},
		{"too large", func(t *testing.T, out string) { write(t, out, strings.Repeat(" ", verdict.MaxBytes+1)) }, false, "more than", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := t.TempDir()
			tt.plant(t, out)
			r := &run{cfg: Config{Stage: "review", Out: t.TempDir()}, ws: &workspace.Workspace{OutDir: out},
				grant: wire.ExchangeResponse{HeadCommit: headSHA}, ev: &evidence.Evidence{}}
			detail, err := r.readVerdict(context.Background())
			if tt.fail == "" && err != nil || tt.fail != "" && (err == nil || !strings.Contains(err.Error(), tt.fail)) {
				t.Fatalf("readVerdict = %q, %v; want failure %q", detail, err, tt.fail)
			}
			if (r.verdictDoc != nil) != tt.doc {
				t.Fatalf("document kept %v, want %v", r.verdictDoc != nil, tt.doc)
			}
			kept, kerr := os.ReadFile(filepath.Join(r.cfg.Out, VerdictFile))
			if tt.doc && (kerr != nil || string(kept) != string(r.verdictDoc)) || !tt.doc && kerr == nil {
				t.Fatalf("the artifact's verdict.json: %q, %v", kept, kerr)
			}
			if tt.doc {
				rv := r.ev.Review
				if rv == nil || rv.HeadCommit != headSHA || rv.VerdictDigest != verdict.Digest(r.verdictDoc) || rv.Verdict != tt.verdict {
					t.Fatalf("review evidence %+v", rv)
				}
				if tt.verdict != "" && (rv.Findings != 2 || *rv.Confidence != 0.9 || !strings.Contains(detail, "2 finding(s)")) {
					t.Fatalf("review evidence %+v, detail %q", rv, detail)
				}
				if tt.verdict == "" && !strings.Contains(rv.Problem, "verdict schema") {
					t.Fatalf("the problem %q does not say what is wrong", rv.Problem)
				}
			}
		})
	}
}

func write(t *testing.T, dir, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, VerdictFile), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fakeServe records the run's reports in order.
type fakeServe struct {
	mu       sync.Mutex
	paths    []string
	verdict  wire.Verdict
	progress []wire.Progress
}

func (f *fakeServe) start(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.paths = append(f.paths, r.URL.Path)
		switch r.URL.Path {
		case wire.PathVerdict:
			_ = json.Unmarshal(body, &f.verdict)
		case wire.PathProgress:
			var p wire.Progress
			_ = json.Unmarshal(body, &p)
			f.progress = append(f.progress, p)
		}
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "{}")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestReviewRunAlwaysSendsAVerdict: a review run that got its credentials and then
// failed (here before its VM ever booted) still tells serve it has no verdict, and why,
// after its evidence; one with a document sends the document as written, whatever it
// holds, with the verification it ran.
func TestReviewRunAlwaysSendsAVerdict(t *testing.T) {
	for _, tt := range []struct {
		name   string
		doc    []byte
		runErr error
		want   func(v wire.Verdict) bool
	}{
		{"failed before the reviewer ran", nil, failWith(evidence.OutcomeError, "failed to boot the VM: no KVM"), func(v wire.Verdict) bool {
			return v.Document == "" && strings.Contains(v.Problem, "failed to boot the VM") && v.HeadCommit == headSHA
		}},
		{"stopped", nil, errors.Join(errStopped, errors.New("the item was stopped")), func(v wire.Verdict) bool {
			return v.Document == "" && strings.Contains(v.Problem, "stopped")
		}},
		{"a document that does not parse", []byte(`{"verdict": "lgtm"}`), failWith(evidence.OutcomeFailure, "does not parse"), func(v wire.Verdict) bool {
			return v.Document == `{"verdict": "lgtm"}` && v.Problem == "" && v.Verification != nil && !v.Verification.Passed
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeServe{}
			srv := f.start(t)
			client, err := appclient.New(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			r := &run{cfg: Config{Stage: "review", Out: t.TempDir(), APIURL: srv.URL}.withDefaults(), repo: "acme/widgets", issue: 7,
				serve: client.WithRunToken("rt"), exchanged: true, cancel: cancel, verdictDoc: tt.doc,
				grant: wire.ExchangeResponse{HeadCommit: headSHA, InstallationToken: "ghs_x"},
				ev:    &evidence.Evidence{SchemaVersion: 1, Stage: wire.StageReview, StartedAt: time.Now()}}
			if tt.doc != nil {
				r.verification = &wire.Verification{Passed: false, Summary: "1 of 1 commands failed"}
			}
			_, _ = r.finish(ctx, tt.runErr)
			f.mu.Lock()
			defer f.mu.Unlock()
			ev, vd := -1, -1
			for i, p := range f.paths {
				switch p {
				case wire.PathEvidence:
					ev = i
				case wire.PathVerdict:
					vd = i
				}
			}
			if ev < 0 || vd < ev || !tt.want(f.verdict) {
				t.Fatalf("reports %v; verdict %+v", f.paths, f.verdict)
			}
			if tt.doc == nil && (r.ev.Review == nil || r.ev.Review.Problem == "") {
				t.Fatalf("the evidence's review section does not say why there is no verdict: %+v", r.ev.Review)
			}
		})
	}
}

// TestReviewerHarness: a review run runs (and builds the image of) the reviewer's own
// harness, else the repository's; other stages the repository's.
func TestReviewerHarness(t *testing.T) {
	p, err := repoconfig.Parse([]byte("version: 1\nharness: {name: command, command: sh .bumper/agent.sh}\nreviewer:\n  harness: {name: claude-code, version: 2.1.328}\n"))
	if err != nil {
		t.Fatal(err)
	}
	review := &run{cfg: Config{Stage: "review"}, policy: p}
	implement := &run{cfg: Config{Stage: "implement"}, policy: p}
	if review.harnessPolicy().Name != "claude-code" || !review.needsImage() || !strings.Contains(review.imageNeeds(), "claude") {
		t.Fatalf("review harness %+v, needs %q", review.harnessPolicy(), review.imageNeeds())
	}
	if implement.harnessPolicy().Name != "command" || implement.needsImage() {
		t.Fatalf("implement harness %+v, needs %q", implement.harnessPolicy(), implement.imageNeeds())
	}
}

// TestFixRunReports: a fix run knows its pull request from the exchange, but names it to
// serve only with the head it pushed: verifying carries neither, and the end of a
// successful round hands the pull request at its new head to the reviewer (or, with
// reviewer: false, to humans), exactly as an implement run does. It never sends a
// verdict.
func TestFixRunReports(t *testing.T) {
	for _, tt := range []struct {
		name, policy, want string
	}{
		{"reviewer on", "version: 1\n", "reviewing"},
		{"reviewer: false", "version: 1\nreviewer: false\n", "in-review"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := repoconfig.Parse([]byte(tt.policy))
			if err != nil {
				t.Fatal(err)
			}
			f := &fakeServe{}
			srv := f.start(t)
			client, err := appclient.New(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			r := &run{cfg: Config{Stage: "fix", Attempt: 2, Out: t.TempDir(), APIURL: srv.URL}.withDefaults(), repo: "acme/widgets", issue: 7,
				serve: client.WithRunToken("rt"), exchanged: true, cancel: cancel, policy: p, branch: "bumper/7-1",
				grant: wire.ExchangeResponse{PullRequest: 9, HeadCommit: headSHA, BaseCommit: baseSHA, InstallationToken: "ghs_x"},
				pull:  pullInfo{number: 9},
				ev:    &evidence.Evidence{SchemaVersion: 1, Stage: wire.StageFix, StartedAt: time.Now()}}
			if err := r.progress(ctx, "verifying", ""); err != nil {
				t.Fatal(err)
			}
			pushed := strings.Repeat("3", 40)
			r.pull.head = pushed
			_, _ = r.finish(ctx, nil)
			f.mu.Lock()
			defer f.mu.Unlock()
			if len(f.progress) != 2 || f.progress[0] != (wire.Progress{State: "verifying"}) ||
				f.progress[1] != (wire.Progress{State: tt.want, PullRequest: 9, HeadCommit: pushed}) {
				t.Fatalf("progress %+v", f.progress)
			}
			for _, p := range f.paths {
				if p == wire.PathVerdict {
					t.Fatal("a fix run sent a verdict")
				}
			}
		})
	}
}
