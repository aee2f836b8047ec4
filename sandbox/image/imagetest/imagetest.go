// Package imagetest gives tests a real sandbox image from a cache shared by every test on
// the machine, so the slow debootstrap runs once per machine rather than once per test.
package imagetest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/bumperdev/bumper/internal/cachedir"
	"github.com/bumperdev/bumper/internal/testgate"
	"github.com/bumperdev/bumper/sandbox/image"
)

// CacheEnv names the environment variable holding the shared test cache directory.
const CacheEnv = "BUMPER_TEST_IMAGE_CACHE"

// DefaultCacheDir is the shared test cache when CacheEnv is unset.
const DefaultCacheDir = "/var/tmp/bumper-test-cache"

// CacheDir returns the shared test cache directory.
func CacheDir() string {
	if d := os.Getenv(CacheEnv); d != "" {
		return d
	}
	return DefaultCacheDir
}

// SkipUnlessCanBuild gates a test on this machine being able to build images (testgate:
// skipped under -short, failing in CI when something is missing).
func SkipUnlessCanBuild(t testing.TB) {
	t.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skipf("sandbox images are built on linux/amd64 hosts, this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	testgate.RequiresRoot(t)
	for _, c := range [][2]string{{"debootstrap", "debootstrap"}, {"apt-get", "apt"}, {"apt-cache", "apt"},
		{"dpkg-deb", "dpkg"}, {"mkfs.ext4", "e2fsprogs"}, {"go", "the Go toolchain"}} {
		testgate.Command(t, c[0], c[1])
	}
}

// AgentBinary builds the bumper binary of the module under test, static, into a
// temporary directory, and returns its path.
func AgentBinary(t testing.TB) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "bumper")
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, "github.com/bumperdev/bumper/cmd/bumper")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("failed to build the bumper binary for the guest agent: %v\n%s", err, b)
	}
	return out
}

// Image returns an image with the current bumper binary as its agent and the given extra
// packages, built in (or reused from) the shared test cache. It skips when the machine
// cannot build images. Build progress goes to the test log.
func Image(t testing.TB, packages ...string) *image.Image {
	t.Helper()
	SkipUnlessCanBuild(t)
	im, err := image.Build(context.Background(), image.BuildConfig{
		CacheDir:    CacheDir(),
		Packages:    packages,
		AgentBinary: AgentBinary(t),
		Progress:    testWriter{t},
	})
	if err != nil {
		t.Fatalf("failed to build the test image: %v", err)
	}
	// Build marked the image as used; images of older agents go after a day.
	if _, err := cachedir.Prune(filepath.Dir(im.Dir()), time.Now().Add(-PruneAfter), nil, false); err != nil {
		t.Logf("failed to prune old test images: %v", err)
	}
	return im
}

// PruneAfter is how long an image in the shared test cache may go unused before Image
// deletes it. Every test run with a changed agent makes a new image (about 250 MB on
// disk), so without pruning the cache grows with every edit.
const PruneAfter = 24 * time.Hour

// testWriter sends progress lines to the test log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s", p)
	return len(p), nil
}
