package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/bumperdev/bumper/internal/attest"
	"github.com/bumperdev/bumper/internal/browsertest"
	"github.com/bumperdev/bumper/internal/testgate"
	"github.com/bumperdev/bumper/internal/textcut"
	"github.com/bumperdev/bumper/internal/verdict"
	"github.com/bumperdev/bumper/sandbox/image/imagetest"
)

// TestDemoInBrowser runs the demo as `bumper demo` does (the emulator, serve, the local
// runner running the real `bumper run` with its firewall and a QEMU microVM, the
// sample's Go environment, the scripted agent and reviewer, the conversation round the
// maintainer's inline comment starts), then opens its pull request page in headless
// Chromium while the servers are up: the evidence in the description, the verdict's
// check and review, the check runs, the diff, the maintainer's thread with the App's
// reply shown as text, and takes the screenshot the README shows. The files the demo promises are in its output
// directory.
func TestDemoInBrowser(t *testing.T) {
	testgate.Slow(t, "the whole demo: QEMU microVMs under TCG, and headless Chromium")
	testgate.RequiresRoot(t)
	testgate.RequiresQEMU(t)
	testgate.Command(t, "nft", "nftables")
	testgate.Command(t, "git", "git")
	browsertest.Require(t)
	imagetest.SkipUnlessCanBuild(t)

	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	var page struct {
		url                                string
		title, evidence, verdictConclusion string
		reviewState, reviewBody, inline    string
		checks                             []string
		diffPaths                          []string
		addLines, delLines                 int
		thread                             []string
		replyCode                          string
		commitBadges                       []string
		shot                               []byte
		err                                error
	}
	cfg := Config{
		Out: out, Agent: AgentCommand, Keep: true, Listen: "127.0.0.1:0",
		Cache: imagetest.CacheDir(), Binary: imagetest.AgentBinary(t), Stdout: testWriter{t}, Getenv: os.Getenv,
		EUID: os.Geteuid(), RunTimeout: 15 * time.Minute,
		Ready: func(r Result) {
			// The servers are up until cancel: look at the page, then end the demo.
			defer cancel()
			page.url = r.PullURL
			bctx, cancelBrowser, err := browsertest.Open(ctx)
			if page.err = err; err != nil {
				return
			}
			defer cancelBrowser()
			bctx, cancelTimeout := context.WithTimeout(bctx, time.Minute)
			defer cancelTimeout()
			if page.err = chromedp.Do(bctx, chromedp.Navigate(r.PullURL), chromedp.WaitVisible(chromedp.CSS("#diff"))); page.err != nil {
				return
			}
			page.title = get(bctx, &page.err, chromedp.Title())
			// TextContent: the evidence's folded sections (the commands) count too.
			page.evidence = get(bctx, &page.err, chromedp.TextContent(chromedp.CSS("#description .markdown")))
			page.checks = get(bctx, &page.err, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#checks .check")].map(c => c.dataset.name + " " + c.dataset.conclusion)`))
			page.verdictConclusion = get(bctx, &page.err, chromedp.Evaluate[string](`document.querySelector('#checks .check[data-name="bumper/verdict"]')?.dataset.conclusion ?? ""`))
			page.reviewState = get(bctx, &page.err, chromedp.Evaluate[string](`document.querySelector("#reviews .review")?.dataset.state ?? ""`))
			page.reviewBody = get(bctx, &page.err, chromedp.Evaluate[string](`document.querySelector("#reviews .review .box-body")?.textContent ?? ""`))
			page.inline = get(bctx, &page.err, chromedp.Evaluate[string](`document.querySelector("#reviews .inline-comment")?.textContent ?? ""`))
			page.diffPaths = get(bctx, &page.err, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#diff .diff-path")].map(e => e.textContent)`))
			page.addLines = get(bctx, &page.err, chromedp.Evaluate[int](`document.querySelectorAll("#diff tr.diff-add").length`))
			page.delLines = get(bctx, &page.err, chromedp.Evaluate[int](`document.querySelectorAll("#diff tr.diff-del").length`))
			thread := fmt.Sprintf("#thread-%d", r.Thread)
			page.thread = get(bctx, &page.err, chromedp.Evaluate[[]string](`[...document.querySelectorAll("`+thread+` .thread-comment")].map(c => c.textContent)`))
			// The reply's words are code, not Markdown: the last code span of its body.
			page.replyCode = get(bctx, &page.err, chromedp.Evaluate[string](`[...document.querySelectorAll("`+thread+` .thread-comment")].pop()?.querySelector(".markdown code:last-of-type")?.textContent ?? ""`))
			page.commitBadges = get(bctx, &page.err, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#commits .commit")].map(c => c.dataset.badge)`))
			page.shot = get(bctx, &page.err, chromedp.FullScreenshot(100))
		},
	}
	if _, err := Run(ctx, cfg); err != nil {
		var se *StepError
		if errors.As(err, &se) {
			t.Fatalf("%v\n%s", err, se.Log)
		}
		t.Fatal(err)
	}
	if page.err != nil {
		t.Fatalf("failed to read %s in Chromium: %v", page.url, page.err)
	}
	shot := filepath.Join(browsertest.ScreenshotDir(t), "pull-request.png")
	if err := os.WriteFile(shot, page.shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of %s: %s", page.url, shot)

	for _, c := range []struct {
		what      string
		ok        bool
		got, want any
	}{
		{"the page is the pull request's", strings.Contains(page.title, "Total skips the first box"), page.title, "the pull request's title"},
		{"the description is the evidence of a successful run with the Go tests", strings.Contains(page.evidence, "Bumper evidence: success") && strings.Contains(page.evidence, "1 passed, 0 failed") && strings.Contains(page.evidence, "go test ./..."), textcut.FitRunes(page.evidence, 300, textcut.Ellipsis), "Bumper evidence: success … 1 passed, 0 failed … go test ./..."},
		{"the evidence and verdict check runs", strings.Contains(strings.Join(page.checks, ","), "bumper/evidence success") && strings.Contains(strings.Join(page.checks, ","), "bumper/verdict"), page.checks, "bumper/evidence success, bumper/verdict …"},
		{"the output gates passed and serve's statement is on the round's head", strings.Contains(strings.Join(page.checks, ","), "bumper/gates success") && strings.Contains(strings.Join(page.checks, ","), "bumper/attestation success"), page.checks, "bumper/gates success, bumper/attestation success …"},
		{"every commit is Verified (the App's, through the Git Data API)", len(page.commitBadges) > 0 && !slices.ContainsFunc(page.commitBadges, func(b string) bool { return b != "Verified" }), page.commitBadges, "[Verified …]"},
		{"the verdict check on the round's head succeeded (approve, confidence 0.95 ≥ 0.8)", page.verdictConclusion == "success", page.verdictConclusion, "success"},
		{"the reviewer's COMMENT review with its summary", page.reviewState == "COMMENTED" && strings.Contains(page.reviewBody, "first box"), page.reviewState + ": " + page.reviewBody, "COMMENTED: … first box …"},
		{"the reviewer's inline nit on widgets.go", strings.Contains(page.inline, "widgets.go") && strings.Contains(page.inline, "range boxes"), page.inline, "widgets.go line 7 … range boxes"},
		{"the diff changes widgets.go's loop, as the round left it", strings.Join(page.diffPaths, ",") == "widgets.go" && page.addLines == 2 && page.delLines == 2, [3]any{page.diffPaths, page.addLines, page.delLines}, "widgets.go +2 -2"},
		{"the maintainer's thread: the comment, then the App's reply", len(page.thread) == 2 && strings.Contains(page.thread[0], "range boxes") && strings.Contains(page.thread[0], "maintainer") &&
			strings.Contains(page.thread[1], "bumper") && strings.Contains(page.thread[1], "Changed in"), page.thread, "[maintainer … range boxes, bumper[bot] … Changed in …]"},
		{"the reply's words are shown as text (code)", page.replyCode == roundReplyText, page.replyCode, roundReplyText},
	} {
		t.Run(c.what, func(t *testing.T) {
			if !c.ok {
				t.Errorf("got %v, want %v", c.got, c.want)
			}
		})
	}
	t.Run("the files the demo promises", func(t *testing.T) {
		for _, f := range outFiles() {
			if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
				t.Errorf("%s: %v", f, err)
			}
		}
		raw, _ := os.ReadFile(filepath.Join(out, verdict.File))
		var v verdict.Verdict
		if err := json.Unmarshal(raw, &v); err != nil || v.Verdict != verdict.Approve {
			t.Errorf("verdict.json: %v %+v", err, v)
		}
	})
	t.Run("serve's statement of the run verifies", func(t *testing.T) {
		pub, _ := os.ReadFile(filepath.Join(out, attestationPublicKey))
		keys, err := attest.ParsePublicKeys(pub)
		if err != nil {
			t.Fatal(err)
		}
		bundle, _ := os.ReadFile(filepath.Join(out, attest.BundleFile))
		line, err := attest.ReadBundle(bundle)
		if err != nil {
			t.Fatal(err)
		}
		got, err := attest.Verify(context.Background(), line, keys)
		if err != nil {
			t.Fatal(err)
		}
		ev, _ := os.ReadFile(filepath.Join(out, attest.EvidenceName))
		var head struct {
			HeadCommit string `json:"head_commit"`
		}
		_ = json.Unmarshal(ev, &head)
		if err := got.CheckEvidence(ev); err != nil {
			t.Error(err)
		}
		if err := got.CheckCommit(head.HeadCommit); err != nil {
			t.Error(err)
		}
	})
}

// get runs one browser action unless an earlier one failed, keeping the first error.
func get[T any](ctx context.Context, errp *error, a chromedp.Action[T]) T {
	var zero T
	if *errp != nil {
		return zero
	}
	v, err := chromedp.Run(ctx, a)
	*errp = err
	return v
}

// testWriter shows the demo's steps in the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
