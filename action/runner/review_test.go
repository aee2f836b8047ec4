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
	baseSHA   = "1111111111111111111111111111111111111111"
	headSHA   = "2222222222222222222222222222222222222222"
	updateSHA = "4444444444444444444444444444444444444444"
)

// TestCheckGrant: the grant's branch and pull request are held to the run's own issue
// and stage before anything is fetched or pushed with them, as a serve that erred (or
// a grant for another run) would send them.
func TestCheckGrant(t *testing.T) {
	tests := []struct {
		name       string
		stage      wire.Stage
		attempt    int
		grant      wire.ExchangeResponse
		want       string // "" accepted, with wantBranch
		wantBranch string
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
		{"revise on the pull request's branch", "revise", 3, wire.ExchangeResponse{Branch: "bumper/7-1", PullRequest: 9, HeadCommit: headSHA}, "", "bumper/7-1"},
		{"revise on its own new branch", "revise", 3, wire.ExchangeResponse{Branch: "bumper/7-3", PullRequest: 9, HeadCommit: headSHA}, "earlier attempt", ""},
		{"revise without its pull request", "revise", 3, wire.ExchangeResponse{Branch: "bumper/7-1", HeadCommit: headSHA}, "without its pull request", ""},
		{"update, merging the base branch's head", "update", 3, wire.ExchangeResponse{Branch: "bumper/7-1", PullRequest: 9, HeadCommit: headSHA, UpdateTo: updateSHA}, "", "bumper/7-1"},
		{"update with nothing to merge", "update", 3, wire.ExchangeResponse{Branch: "bumper/7-1", PullRequest: 9, HeadCommit: headSHA}, "base branch head to merge", ""},
		{"update merging a branch name", "update", 3, wire.ExchangeResponse{Branch: "bumper/7-1", PullRequest: 9, HeadCommit: headSHA, UpdateTo: "main"}, "base branch head to merge", ""},
		{"update merging its own head", "update", 3, wire.ExchangeResponse{Branch: "bumper/7-1", PullRequest: 9, HeadCommit: headSHA, UpdateTo: headSHA}, "base branch head to merge", ""},
		{"update on main", "update", 3, wire.ExchangeResponse{Branch: "main", PullRequest: 9, HeadCommit: headSHA, UpdateTo: updateSHA}, "works only on", ""},
		{"a fix that merges", "fix", 3, wire.ExchangeResponse{Branch: "bumper/7-1", PullRequest: 9, HeadCommit: headSHA, UpdateTo: updateSHA}, "only an update run merges one", ""},
		{"an implement run that merges", "implement", 2, wire.ExchangeResponse{Branch: "bumper/7-2", UpdateTo: updateSHA}, "only an update run merges one", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := tt.grant
			g.BaseCommit = baseSHA
			cfg := Config{WorkItem: wire.WorkItem{Repository: "acme/widgets", Issue: 7}, Stage: tt.stage, Attempt: tt.attempt}
			branch, err := checkGrant(cfg, g)
			if tt.want == "" {
				if err != nil || branch != tt.wantBranch {
					t.Fatalf("checkGrant = %v, branch %q; want %q", err, branch, tt.wantBranch)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || branch != "" {
				t.Fatalf("checkGrant = %v (branch %q); want a refusal saying %q", err, branch, tt.want)
			}
		})
	}
	t.Run("a task that names another pull request", func(t *testing.T) {
		cfg := Config{WorkItem: wire.WorkItem{Repository: "acme/widgets", Issue: 7}, Stage: wire.StageFix, Attempt: 2}
		g := wire.ExchangeResponse{Branch: "bumper/7-1", PullRequest: 9, HeadCommit: headSHA, BaseCommit: baseSHA}
		branch, err := checkGrant(cfg, g)
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range []wire.Task{{PullRequest: 10}, {Branch: "bumper/7-3"}, {HeadCommit: baseSHA}} {
			if err := checkTask(task, g, branch); err == nil {
				t.Errorf("task %+v taken", task)
			}
		}
		if err := checkTask(wire.Task{PullRequest: 9, Branch: "bumper/7-1", HeadCommit: headSHA}, g, branch); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a round's task that is not the grant's", func(t *testing.T) {
		revise := wire.ExchangeResponse{Stage: wire.StageRevise, Branch: "bumper/7-1", PullRequest: 9, HeadCommit: headSHA, BaseCommit: baseSHA}
		update := revise
		update.Stage, update.UpdateTo = wire.StageUpdate, updateSHA
		comment := wire.ReviewComment{ID: 1, Kind: wire.ReviewKindInline, Author: "mae", Body: "x"}
		tooMany := make([]wire.ReviewComment, wire.MaxReviewComments+1)
		for _, tt := range []struct {
			name  string
			grant wire.ExchangeResponse
			task  wire.Task
			want  string
		}{
			{"a revise round", revise, wire.Task{Round: 2, Review: []wire.ReviewComment{comment}}, ""},
			{"an update round", update, wire.Task{Round: 1, UpdateTo: updateSHA}, ""},
			{"a revise task without its round", revise, wire.Task{Review: []wire.ReviewComment{comment}}, "names no round"},
			{"an update task merging another commit", update, wire.Task{Round: 1, UpdateTo: baseSHA}, "merges"},
			{"an update task merging nothing", update, wire.Task{Round: 1}, "merges"},
			{"a revise task merging", revise, wire.Task{Round: 1, UpdateTo: updateSHA}, "merges"},
			{"more comments than a round takes", revise, wire.Task{Round: 1, Review: tooMany}, "at most 50"},
			{"review comments for an update", update, wire.Task{Round: 1, UpdateTo: updateSHA, Review: []wire.ReviewComment{comment}}, "only a revise run"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				err := checkTask(tt.task, tt.grant, "bumper/7-1")
				if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
					t.Fatalf("checkTask = %v, want %q", err, tt.want)
				}
			})
		}
	})
}

// TestPushRules: what the firewall lets each stage push: an implement run its own new
// branch; a fix, revise or update run the pull request's branch, only on from its head; a plan or review
// run nothing; pushes start closed.
func TestPushRules(t *testing.T) {
	for _, tt := range []struct {
		stage                           wire.Stage
		branch, head, wantRef, wantFrom string
	}{
		{"implement", "bumper/7-2", "", "refs/heads/bumper/7-2", ""},
		{"fix", "bumper/7-1", headSHA, "refs/heads/bumper/7-1", headSHA},
		{"revise", "bumper/7-1", headSHA, "refs/heads/bumper/7-1", headSHA},
		{"update", "bumper/7-1", headSHA, "refs/heads/bumper/7-1", headSHA},
		{"review", "bumper/7-1", headSHA, "", ""},
		{"plan", "bumper/7-1", "", "", ""},
	} {
		t.Run(string(tt.stage), func(t *testing.T) {
			r := testRun(Config{WorkItem: wire.WorkItem{Repository: "acme/widgets", Issue: 7}, Stage: tt.stage, Out: t.TempDir()},
				&grant{ExchangeResponse: wire.ExchangeResponse{HeadCommit: tt.head}, branch: tt.branch})
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
			r := testRun(Config{Stage: wire.StageReview, Out: t.TempDir()}, &grant{ExchangeResponse: wire.ExchangeResponse{HeadCommit: headSHA}})
			doc, detail, err := r.readVerdict(context.Background(), out)
			if tt.fail == "" && err != nil || tt.fail != "" && (err == nil || !strings.Contains(err.Error(), tt.fail)) {
				t.Fatalf("readVerdict = %q, %v; want failure %q", detail, err, tt.fail)
			}
			if (doc != nil) != tt.doc {
				t.Fatalf("document kept %v, want %v", doc != nil, tt.doc)
			}
			kept, kerr := os.ReadFile(filepath.Join(r.cfg.Out, VerdictFile))
			if tt.doc && (kerr != nil || string(kept) != string(doc)) || !tt.doc && kerr == nil {
				t.Fatalf("the artifact's verdict.json: %q, %v", kept, kerr)
			}
			if tt.doc {
				rv := r.rec.ev.Review
				if rv == nil || rv.HeadCommit != headSHA || rv.VerdictDigest != verdict.Digest(doc) || rv.Verdict != tt.verdict {
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
			cfg := Config{WorkItem: wire.WorkItem{Repository: "acme/widgets", Issue: 7}, Stage: wire.StageReview, Out: t.TempDir(), APIURL: srv.URL}.withDefaults()
			rec := newRecorder(cfg)
			rec.ev = &evidence.Evidence{SchemaVersion: 1, Stage: wire.StageReview, StartedAt: time.Now()}
			// Failed after the exchange, before or after the reviewer ran.
			p := produced{exchanged: exchanged{granted: &wire.ExchangeResponse{HeadCommit: headSHA, InstallationToken: "ghs_x"},
				link: newLink(client.WithRunToken("rt"), time.Now().Add(time.Hour), time.Now)}, review: reviewed{doc: tt.doc}}
			if tt.doc != nil {
				p.review.verification = &wire.Verification{Passed: false, Summary: "1 of 1 commands failed"}
			}
			_, _ = finish(context.Background(), cfg, rec, &p, tt.runErr)
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
			if tt.doc == nil && (rec.ev.Review == nil || rec.ev.Review.Problem == "") {
				t.Fatalf("the evidence's review section does not say why there is no verdict: %+v", rec.ev.Review)
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
	review := testRun(Config{Stage: wire.StageReview}, &grant{policy: p})
	implement := testRun(Config{Stage: wire.StageImplement}, &grant{policy: p})
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
			ctx := context.Background()
			cfg := Config{WorkItem: wire.WorkItem{Repository: "acme/widgets", Issue: 7}, Stage: wire.StageFix, Attempt: 2, Out: t.TempDir(), APIURL: srv.URL}.withDefaults()
			r := testRun(cfg, &grant{ExchangeResponse: wire.ExchangeResponse{PullRequest: 9, HeadCommit: headSHA, BaseCommit: baseSHA, InstallationToken: "ghs_x"},
				policy: p, branch: "bumper/7-1"})
			r.link = newLink(client.WithRunToken("rt"), time.Now().Add(time.Hour), time.Now)
			r.rec.ev = &evidence.Evidence{SchemaVersion: 1, Stage: wire.StageFix, StartedAt: time.Now()}
			// The rounds report verifying; then the run pushes a new head and finishes
			// (its pull request phase is not played: the pull request is the grant's).
			if err := r.link.progress(ctx, "verifying", "", 0, ""); err != nil {
				t.Fatal(err)
			}
			made := produced{exchanged: exchanged{granted: &r.grant.ExchangeResponse, link: r.link, grant: r.grant}, pushed: strings.Repeat("3", 40)}
			_, _ = finish(ctx, cfg, r.rec, &made, nil)
			pushed := made.pushed
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
