// Package browsertest opens pages in headless Chromium (Debian's chromium package,
// driven through chromedp) for the tests that look at what a person would see: the
// emulator's web view and the demo's pull request page.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/bumperdev/bumper/internal/testgate"
)

// Require skips the test, or fails it under CI, when Chromium is not installed.
func Require(t testing.TB) {
	t.Helper()
	testgate.Command(t, "chromium", "chromium")
}

// Open starts a headless Chromium the size of a laptop's screen and returns a browser
// context for chromedp, and its cancel, which ends the browser.
func Open(ctx context.Context) (context.Context, context.CancelFunc, error) {
	path, err := exec.LookPath("chromium")
	if err != nil {
		return nil, nil, fmt.Errorf("failed to find chromium: %w", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path),
		chromedp.WindowSize(1280, 900), chromedp.Flag("hide-scrollbars", true))
	if os.Geteuid() == 0 {
		// Chromium's sandbox refuses to start as root.
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	return bctx, func() { cancelBrowser(); cancelAlloc() }, nil
}

// ScreenshotDir is where a browser test leaves its screenshots: BUMPER_SCREENSHOT_DIR
// when set (`BUMPER_SCREENSHOT_DIR=$PWD/docs/img` renews the README's picture), else the
// test's artifact directory, which `go test -artifacts -outputdir DIR` keeps.
func ScreenshotDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("BUMPER_SCREENSHOT_DIR"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.ArtifactDir()
}
