package envbuild

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/firewall/policy"
	"github.com/bumperdev/bumper/internal/environment"
	"github.com/bumperdev/bumper/internal/repoconfig"
	"github.com/bumperdev/bumper/internal/testgate"
	"github.com/bumperdev/bumper/sandbox"
	"github.com/bumperdev/bumper/sandbox/image"
	"github.com/bumperdev/bumper/sandbox/image/imagetest"
)

// The Go releases the test module asks for: both newer than Debian bookworm's golang-go
// (1.19), the second one what its go.mod is changed to.
const (
	goRelease     = "go1.25.14"
	goReleaseNext = "go1.26.8"
)

// goModule copies testdata/gotoolchain, a module that only builds with a Go newer than
// Debian's, into a new directory with go.mod's toolchain line set to release, and returns
// the directory and its environment as .github/bumper.yml declares it. The image cache is
// shared by every test on the machine and outlives them: run, a comment of this run's own
// in go.mod (an input), makes the environment's key new, so the first build really builds.
func goModule(t testing.TB, run, release string) (string, repoconfig.Environment) {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "gotoolchain"))); err != nil {
		t.Fatalf("failed to copy the test module: %v", err)
	}
	mod := filepath.Join(dir, "go.mod")
	data, err := os.ReadFile(mod)
	if err != nil {
		t.Fatal(err)
	}
	line := "toolchain " + goRelease + "\n"
	if !bytes.Contains(data, []byte(line)) {
		t.Fatalf("testdata/gotoolchain/go.mod has no line %q", line)
	}
	data = bytes.Replace(data, []byte(line), []byte("toolchain "+release+"\n"), 1)
	data = fmt.Appendf(data, "\n// bumper test run %s\n", run)
	if err := os.WriteFile(mod, data, 0o644); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, repoconfig.Path))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := repoconfig.Parse(raw)
	if err != nil || cfg.Environment == nil {
		t.Fatalf("testdata/gotoolchain's %s: %v (environment %v)", repoconfig.Path, err, cfg.Environment)
	}
	return dir, *cfg.Environment
}

// goOptions are TestBuild's options with a VM that compiles Go under TCG in minutes, not
// tens of minutes (two vCPUs, memory for the compiler and linker), and with what a
// runner host on this network would set (access).
func goOptions(t testing.TB, access proxyAccess, dir string, env repoconfig.Environment) Options {
	return Options{
		RepoDir: dir, Env: env, Resolve: access.resolve,
		Image: image.BuildConfig{CacheDir: imagetest.CacheDir(), AgentBinary: access.agent, CACerts: access.caCerts},
		VM: sandbox.Config{CPUs: 2, MemoryMB: 1024, Accel: sandbox.AccelTCG,
			StateDir: filepath.Join(os.TempDir(), "bumper-sandbox-test-state"), Timeout: 15 * time.Minute},
		Audit: filepath.Join(t.TempDir(), "setup-audit.jsonl"),
	}
}

// proxyAccess is what a runner host's admin would set for a setup to reach the Go module
// proxy from this host, and the guest agent binary.
type proxyAccess struct {
	// resolve pins the proxy's name to the address this host's resolver gives, when the
	// firewall would refuse that address (BUMPER_FIREWALL_RESOLVE).
	resolve map[string]string
	// caCerts is the host's CA bundle, when the host reaches the proxy only through TLS
	// inspection, which the guest must then trust too (BUMPER_CA_FILE).
	caCerts []string
	agent   string
}

// goProxy skips the test when this host cannot reach the Go module proxy, checks the
// proxy has the releases the test module names, and says what a setup needs to reach it
// from here (registryAccess).
func goProxy(t testing.TB, releases ...string) proxyAccess {
	t.Helper()
	urls := make([]string, len(releases))
	for i, r := range releases {
		urls[i] = fmt.Sprintf("https://proxy.golang.org/golang.org/toolchain/@v/v0.0.1-%s.linux-amd64.info", r)
	}
	return registryAccess(t, "proxy.golang.org", urls...)
}

// registryAccess skips the test when this host cannot reach a registry, checks that each
// of urls answers 200, and says what a setup needs to reach the registry from here. Where
// the host's resolver answers with an address the firewall refuses, or its TLS is
// inspected by a CA none of Debian's signed (a company's egress proxy; the machine this
// was written on), the setup gets what a runner host's admin sets there: a resolve pin
// and the host's CA bundle. Elsewhere it gets neither and reaches the registry as is.
func registryAccess(t testing.TB, host string, urls ...string) proxyAccess {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		t.Skipf("needs %s: it does not resolve (%v)", host, err)
	}
	var access proxyAccess
	if d := policy.NewAddrFilter(nil).Check(addrs[0]); !d.Allowed {
		access.resolve = map[string]string{host: addrs[0].String()}
		t.Logf("%s resolves to %s, which the firewall refuses (%s): the setup's firewall gets a resolve pin", host, addrs[0], d.Reason)
	}
	roots, err := debianRoots()
	if err != nil {
		t.Skipf("needs Debian's CA certificates (/usr/share/ca-certificates/mozilla; apt-get install ca-certificates) to tell what the guest trusts: %v", err)
	}
	for _, u := range urls {
		status, err := get(ctx, u, roots)
		var unknown x509.UnknownAuthorityError
		if errors.As(err, &unknown) {
			// Inspected: the host trusts the inspecting CA, so the guest must too.
			if status, err = get(ctx, u, nil); err == nil && access.caCerts == nil {
				access.caCerts = []string{hostCABundle}
				t.Logf("TLS to %s is inspected here (a certificate from %q): the image trusts %s", host, unknown.Cert.Issuer.CommonName, hostCABundle)
			}
		}
		if err != nil {
			t.Skipf("needs %s: %v", host, err)
		}
		if status != http.StatusOK {
			t.Fatalf("%s: %d; the test names what the registry does not have", u, status)
		}
	}
	access.agent = imagetest.AgentBinary(t)
	return access
}

// hostCABundle is the host's CA bundle (update-ca-certificates puts its own CAs there).
const hostCABundle = "/etc/ssl/certs/ca-certificates.crt"

// get fetches u trusting roots (nil: the host's) and returns its status.
func get(ctx context.Context, u string, roots *x509.CertPool) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// debianRoots are the CA certificates Debian's ca-certificates package ships, which the
// guest trusts; the host may trust more.
func debianRoots() (*x509.CertPool, error) {
	files, err := filepath.Glob("/usr/share/ca-certificates/mozilla/*.crt")
	if err != nil {
		return nil, fmt.Errorf("failed to list Debian's CA certificates: %w", err)
	}
	if len(files) == 0 {
		return nil, errors.New("no certificates in /usr/share/ca-certificates/mozilla")
	}
	pool := x509.NewCertPool()
	for _, f := range files {
		pem, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		pool.AppendCertsFromPEM(pem)
	}
	return pool, nil
}

// inImage runs each check's command, in order, in one VM of img as the agent user, with
// a copy of dir at /workspace/repo (where the setup ran) and no network: what a run's
// verification would see. A check passes when the command exits 0 and its output
// contains want; the test stops after the checks when one failed.
func inImage(t *testing.T, o Options, img *image.Image, dir string, checks []imageCheck) {
	t.Helper()
	ctx := context.Background()
	ws := t.TempDir()
	if err := copyTree(dir, filepath.Join(ws, "repo"), nil); err != nil {
		t.Fatal(err)
	}
	cfg := o.VM
	cfg.UseImage(sandbox.ImageFiles(img))
	s, err := sandbox.Open(ctx, sandbox.SessionSpec{Config: cfg})
	if err != nil {
		t.Fatalf("failed to open a VM of %s: %v", img.Dir(), err)
	}
	defer func() {
		if err := s.Close(ctx); err != nil {
			t.Errorf("failed to close the VM: %v", err)
		}
	}()
	if err := s.Start(ctx, ws); err != nil {
		t.Fatalf("failed to boot %s: %v", img.Dir(), err)
	}
	passed := true
	for _, c := range checks {
		passed = t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			start := time.Now()
			res, err := s.Run(ctx, []string{"sh", "-c", "cd /workspace/repo && " + c.cmd}, nil, &out, &out)
			if err != nil || res.ExitCode != 0 || res.Error != "" || !strings.Contains(out.String(), c.want) {
				t.Fatalf("%s: %v, %+v, want %q in its output:\n%s", c.cmd, err, res, c.want, out.String())
			}
			t.Logf("%s: %v\n%s", c.cmd, time.Since(start).Round(time.Millisecond), strings.TrimSpace(out.String()))
		}) && passed
	}
	if !passed {
		t.FailNow() // the builds after this one would take minutes to say nothing new
	}
}

type imageCheck struct{ name, cmd, want string }

// TestGoToolchain is issue #12's Go example for real: a module whose go.mod asks for a Go
// newer than Debian's gets an environment, built by its own setup from Debian's golang-go
// through the Go module proxy's toolchain downloads (verified against the checksum
// database the proxy serves), in which `go test ./...` passes as the agent user with no
// network; a second build finds it without running anything; a go.mod that asks for
// another release is another environment, not yet built.
func TestGoToolchain(t *testing.T) {
	testgate.RequiresRoot(t)
	testgate.RequiresQEMU(t)
	imagetest.SkipUnlessCanBuild(t)
	access := goProxy(t, goRelease)
	ctx := context.Background()
	run := fmt.Sprintf("%d", time.Now().UnixNano())
	dir, env := goModule(t, run, goRelease)

	var log bytes.Buffer
	o := goOptions(t, access, dir, env)
	o.Log = &log
	start := time.Now()
	first, err := Build(ctx, o)
	if err != nil {
		t.Fatalf("Build: %v\n%s", err, log.String())
	}
	// Derived images are a full root filesystem each: this run's go with it.
	t.Cleanup(func() { os.RemoveAll(first.Image.Dir()) })
	t.Logf("first build %v (setup session %v); the setup's output:\n%s", time.Since(start).Round(time.Millisecond), first.Setup.Round(time.Millisecond), log.String())
	if !first.Built || first.Image.Manifest().Derivation == nil || first.Image.Manifest().Derivation.Key != first.Key.Digest {
		t.Fatalf("first build: built %v, manifest %+v", first.Built, first.Image.Manifest())
	}

	sumdb := "$(go env GOMODCACHE)/cache/download/sumdb/sum.golang.org/lookup/golang.org/toolchain@v0.0.1-" + goRelease + ".linux-amd64"
	inImage(t, o, first.Image, dir, []imageCheck{
		{"as the agent user", "id -un", "agent"},
		{"Debian's go is older", "/usr/bin/go version", "go version go1.19"},
		{"go is the release in ~/bin", "command -v go && go version", "/home/agent/bin/go\ngo version " + goRelease + " linux/amd64"},
		{"the release was checked against the checksum database", "cat " + sumdb, "golang.org/toolchain v0.0.1-" + goRelease + ".linux-amd64 h1:"},
		// -count=1: the tests run here, not a result the setup's cache remembered.
		{"go test passes offline", "go test -count=1 ./...", "ok  \texample.com/newergo"},
		// The image keeps the root filesystem's headroom minus what the setup wrote.
		{"room left on / (at least 512 MiB)", "df -h / && test $(df -k --output=avail / | tail -n 1) -ge 524288", "Avail"},
	})

	start = time.Now()
	again, err := Build(ctx, goOptions(t, access, dir, env))
	if err != nil || again.Built || again.Image.Dir() != first.Image.Dir() || again.Key.Digest != first.Key.Digest {
		t.Fatalf("second build: %v, built %v, %s vs %s", err, again != nil && again.Built, imageDir(again), first.Image.Dir())
	}
	t.Logf("second build, found: %v", time.Since(start).Round(time.Millisecond))

	// Another release in go.mod is another environment: its key differs and nothing in
	// the cache answers to it, so a run would build it. Building it here as well would
	// run the same setup a second time (minutes under TCG) to show what the first build
	// showed: the setup installs the release go.mod's toolchain line names, which is not
	// its go line.
	next, nextEnv := goModule(t, run, goReleaseNext)
	nextKey, err := environment.Key(first.Base.Manifest().Digest, nextEnv, next)
	if err != nil {
		t.Fatal(err)
	}
	if nextKey.Digest == first.Key.Digest {
		t.Fatalf("go.mod asking for %s keeps the key of %s's environment: %s", goReleaseNext, goRelease, nextKey.Digest)
	}
	if img, ok := image.FindDerived(filepath.Dir(first.Base.Dir()), nextKey.Digest); ok {
		t.Fatalf("an environment for %s's go.mod is already there: %s", goReleaseNext, img.Dir())
	}
}

func imageDir(r *Result) string {
	if r == nil || r.Image == nil {
		return ""
	}
	return r.Image.Dir()
}
