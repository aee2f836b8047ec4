package action_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"text/template"

	"github.com/bumperdev/bumper/internal/testgate"
	"gopkg.in/yaml.v3"
)

// scriptTools are the programs get-bumper.sh runs; a test's PATH holds only these (and
// whatever it adds), so that "Go is not installed" is true whatever the machine has.
var scriptTools = []string{"env", "bash", "dirname", "basename", "uname", "mktemp", "rm", "mkdir", "head",
	"awk", "sha256sum", "cut", "tar", "gzip", "install", "cat"}

// toolDir makes a directory of links to scriptTools and extra, for PATH.
func toolDir(t *testing.T, extra ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range append(slicesClone(scriptTools), extra...) {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Skipf("get-bumper.sh needs %s: %v", name, err)
		}
		if err := os.Symlink(p, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

// failingCurl is a curl that cannot reach anything, as on a runner without a network
// path to the release.
const failingCurl = "#!/bin/sh\necho 'curl: (7) Failed to connect to github.com port 443 after 3 ms: Could not connect to server' >&2\nexit 7\n"

type scriptRun struct {
	out     string
	err     error
	outputs map[string]string
	bin     string
}

// runGetBumper runs action/get-bumper.sh DEST with the given PATH directories and
// environment, in a temporary directory.
func runGetBumper(t *testing.T, path []string, env map[string]string) scriptRun {
	t.Helper()
	dir := t.TempDir()
	dest := filepath.Join(dir, "bumper-bin")
	outFile := filepath.Join(dir, "github_output")
	script, err := filepath.Abs("get-bumper.sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(script, dest)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + strings.Join(path, ":"), "HOME=" + os.Getenv("HOME"), "GITHUB_OUTPUT=" + outFile, "TMPDIR=" + dir}
	for _, k := range []string{"GOCACHE", "GOPATH", "GOMODCACHE", "GOFLAGS", "GOPROXY", "GOTOOLCHAIN"} {
		if v, ok := os.LookupEnv(k); ok {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	r := scriptRun{out: string(out), err: err, outputs: map[string]string{}, bin: filepath.Join(dest, "bumper")}
	raw, _ := os.ReadFile(outFile)
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			r.outputs[k] = v
		}
	}
	return r
}

// release is a fake GitHub release of bumperdev/bumper: a GoReleaser-style tarball
// whose bumper prints a version line, and a checksums file.
type release struct {
	tag, checksumsName string
	sums               string // the checksums file; "" computes the right one
	noChecksums        bool
}

func goreleaserArch() string { return runtime.GOARCH }

func (rel *release) asset() string {
	return fmt.Sprintf("bumper_%s_linux_%s.tar.gz", strings.TrimPrefix(rel.tag, "v"), goreleaserArch())
}

func tarball(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// serve starts the release on an httptest server, as github.com serves
// /OWNER/NAME/releases/download/TAG/FILE.
func (rel *release) serve(t *testing.T) string {
	t.Helper()
	tgz := tarball(t, map[string]string{
		"bumper":    "#!/bin/sh\necho \"bumper " + rel.tag + " (release asset) go1.26 linux/amd64\"\n",
		"README.md": "# bumper\n",
	})
	sum := sha256.Sum256(tgz)
	sums := rel.sums
	if sums == "" {
		sums = fmt.Sprintf("%s  bumper_%s_linux_arm64.tar.gz\n%s  %s\n", strings.Repeat("0", 64), strings.TrimPrefix(rel.tag, "v"), hex.EncodeToString(sum[:]), rel.asset())
	}
	base := "/bumperdev/bumper/releases/download/" + rel.tag + "/"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			t.Errorf("a token was sent to the release server: %s", r.Header.Get("Authorization"))
		}
		switch r.URL.Path {
		case base + rel.asset():
			_, _ = w.Write(tgz)
		case base + rel.checksumsName:
			if !rel.noChecksums {
				_, _ = w.Write([]byte(sums))
				return
			}
			http.NotFound(w, r)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestGetBumperFromRelease: with a release for the version, the asset is downloaded,
// checked against the checksums file (GoReleaser's default name, or checksums.txt) and
// installed; no Go is needed and no token is sent.
func TestGetBumperFromRelease(t *testing.T) {
	for _, sumsName := range []string{"bumper_1.2.3_checksums.txt", "checksums.txt"} {
		t.Run(sumsName, func(t *testing.T) {
			rel := &release{tag: "v1.2.3", checksumsName: sumsName}
			url := rel.serve(t)
			r := runGetBumper(t, []string{toolDir(t, "curl")}, map[string]string{
				"BUMPER_VERSION": "v1.2.3", "BUMPER_REPOSITORY": "bumperdev/bumper", "GITHUB_SERVER_URL": url})
			if r.err != nil {
				t.Fatalf("%v\n%s", r.err, r.out)
			}
			if !strings.Contains(r.out, "using the release asset "+rel.asset()+" of bumperdev/bumper v1.2.3") ||
				!strings.Contains(r.out, "checked against "+sumsName) || !strings.Contains(r.out, "bumper v1.2.3 (release asset)") {
				t.Errorf("the script does not say what it did:\n%s", r.out)
			}
			if r.outputs["source"] != "release" || r.outputs["path"] != r.bin {
				t.Errorf("outputs %v", r.outputs)
			}
			if out, err := exec.Command(r.bin, "version").CombinedOutput(); err != nil || !strings.Contains(string(out), "bumper v1.2.3") {
				t.Errorf("the installed binary: %v %s", err, out)
			}
		})
	}
}

// TestGetBumperRepositoryFromActionPath: on GitHub the action is checked out into
// _actions/OWNER/NAME/REF, and the releases are OWNER/NAME's.
func TestGetBumperRepositoryFromActionPath(t *testing.T) {
	rel := &release{tag: "v1.2.3", checksumsName: "checksums.txt"}
	url := rel.serve(t)
	actionPath := filepath.Join(t.TempDir(), "_work", "_actions", "bumperdev", "bumper", "v1.2.3")
	if err := os.MkdirAll(actionPath, 0o755); err != nil {
		t.Fatal(err)
	}
	r := runGetBumper(t, []string{toolDir(t, "curl")}, map[string]string{
		"BUMPER_VERSION": "v1.2.3", "BUMPER_ACTION_PATH": actionPath, "GITHUB_SERVER_URL": url})
	if r.err != nil || r.outputs["source"] != "release" {
		t.Fatalf("%v %v\n%s", r.err, r.outputs, r.out)
	}
}

// TestGetBumperRefuses: an asset whose checksum does not match, or that the checksums
// file does not list, is refused outright (not replaced by a build: it may have been
// tampered with), and nothing is installed.
func TestGetBumperRefuses(t *testing.T) {
	asset := (&release{tag: "v1.2.3"}).asset()
	tests := []struct{ name, sums, want string }{
		{"wrong checksum", strings.Repeat("ab", 32) + "  " + asset + "\n", "refusing " + asset + ": its SHA-256 is "},
		{"not listed", strings.Repeat("ab", 32) + "  bumper_1.2.3_darwin_amd64.tar.gz\n", "refusing " + asset + ": checksums.txt of release v1.2.3 does not list it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rel := &release{tag: "v1.2.3", checksumsName: "checksums.txt", sums: tt.sums}
			url := rel.serve(t)
			// Go is on PATH: a refusal must not fall back to building.
			r := runGetBumper(t, []string{toolDir(t, "curl", "go")}, map[string]string{
				"BUMPER_VERSION": "v1.2.3", "BUMPER_REPOSITORY": "bumperdev/bumper", "GITHUB_SERVER_URL": url})
			if r.err == nil || !strings.Contains(r.out, "::error title=bumper binary::"+tt.want) {
				t.Fatalf("not refused as %q: %v\n%s", tt.want, r.err, r.out)
			}
			if strings.Contains(r.out, "building bumper from source") {
				t.Error("a refused download fell back to a build")
			}
			if _, err := os.Stat(r.bin); err == nil {
				t.Error("a refused binary was installed")
			}
		})
	}
}

// TestGetBumperNeitherWorks: without a usable release and without Go the step fails
// saying both reasons and what to do.
func TestGetBumperNeitherWorks(t *testing.T) {
	fake := t.TempDir()
	if err := os.WriteFile(filepath.Join(fake, "curl"), []byte(failingCurl), 0o755); err != nil {
		t.Fatal(err)
	}
	rel := &release{tag: "v1.2.3", checksumsName: "checksums.txt", noChecksums: true}
	url := rel.serve(t)
	tests := []struct {
		name string
		path []string
		env  map[string]string
		want string
	}{
		{"major tag", []string{toolDir(t, "curl")}, map[string]string{"BUMPER_VERSION": "v0", "BUMPER_REPOSITORY": "bumperdev/bumper"},
			"version 'v0' names no release (releases are tagged like v1.2.3; a major tag such as v0 moves); and Go is not installed on the runner"},
		{"no checksums", []string{toolDir(t, "curl")}, map[string]string{"BUMPER_VERSION": "v1.2.3", "BUMPER_REPOSITORY": "bumperdev/bumper", "GITHUB_SERVER_URL": url},
			"has no bumper_1.2.3_checksums.txt or checksums.txt, and an unverified binary is not used; and Go is not installed"},
		{"no release", []string{toolDir(t, "curl")}, map[string]string{"BUMPER_VERSION": "v9.9.9", "BUMPER_REPOSITORY": "bumperdev/bumper", "GITHUB_SERVER_URL": url},
			"the release v9.9.9 of bumperdev/bumper has no asset bumper_9.9.9_linux_"},
		{"unreachable", []string{fake, toolDir(t)}, map[string]string{"BUMPER_VERSION": "v1.2.3", "BUMPER_REPOSITORY": "bumperdev/bumper"},
			"downloading https://github.com/bumperdev/bumper/releases/download/v1.2.3/"},
		{"no repository", []string{toolDir(t, "curl")}, map[string]string{"BUMPER_VERSION": "v1.2.3"},
			"the action's repository is not known"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runGetBumper(t, tt.path, tt.env)
			if r.err == nil {
				t.Fatalf("succeeded:\n%s", r.out)
			}
			if !strings.Contains(r.out, "::error title=bumper binary::cannot get bumper: ") || !strings.Contains(r.out, tt.want) ||
				!strings.Contains(r.out, "install Go on the runner") {
				t.Errorf("the failure does not say %q and what to do:\n%s", tt.want, r.out)
			}
		})
	}
}

// TestGetBumperBuildsFromSource: with no release to download (curl fails), the script
// builds this module's cmd/bumper with the Go on PATH, static, stamped with the version,
// and the result runs.
func TestGetBumperBuildsFromSource(t *testing.T) {
	testgate.Slow(t, "a go build of cmd/bumper: up to a minute with an empty build cache")
	fake := t.TempDir()
	if err := os.WriteFile(filepath.Join(fake, "curl"), []byte(failingCurl), 0o755); err != nil {
		t.Fatal(err)
	}
	r := runGetBumper(t, []string{fake, toolDir(t, "go")}, map[string]string{
		"BUMPER_VERSION": "v9.9.9", "BUMPER_REPOSITORY": "bumperdev/bumper"})
	if r.err != nil {
		t.Fatalf("%v\n%s", r.err, r.out)
	}
	for _, want := range []string{"no release binary: downloading https://github.com/bumperdev/bumper/releases/download/v9.9.9/bumper_9.9.9_linux_",
		"Failed to connect", "building bumper from source in ", "built from source", "bumper v9.9.9"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("the script's output lacks %q:\n%s", want, r.out)
		}
	}
	if r.outputs["source"] != "source" || r.outputs["path"] != r.bin {
		t.Errorf("outputs %v", r.outputs)
	}
	out, err := exec.Command(r.bin, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "bumper v9.9.9 ") {
		t.Fatalf("bumper version: %v %s", err, out)
	}
	// The guest agent inside the VM images is this same binary: it must be static.
	if file, err := exec.LookPath("file"); err == nil {
		if info, _ := exec.Command(file, r.bin).CombinedOutput(); !strings.Contains(string(info), "statically linked") {
			t.Errorf("the built binary is not static: %s", info)
		}
	}
}

// TestGetStep runs action.yml's get step as GitHub would for `uses:
// bumperdev/bumper@v1.2.3`: the action checked out in _actions/bumperdev/bumper/v1.2.3,
// version defaulting to that ref; the release of bumperdev/bumper is found and used.
func TestGetStep(t *testing.T) {
	_, _, _, steps := loadAction(t)
	rel := &release{tag: "v1.2.3", checksumsName: "bumper_1.2.3_checksums.txt"}
	url := rel.serve(t)
	actionPath := filepath.Join(t.TempDir(), "_work", "_actions", "bumperdev", "bumper", "v1.2.3")
	if err := os.MkdirAll(filepath.Join(actionPath, "action"), 0o755); err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile("get-bumper.sh")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(actionPath, "action", "get-bumper.sh"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	temp, outFile := t.TempDir(), filepath.Join(t.TempDir(), "output")
	env := evalEnv(t, steps["get"], map[string]string{"inputs.version": "v1.2.3", "github.action_path": actionPath})
	env = append(env, "RUNNER_TEMP="+temp, "GITHUB_SERVER_URL="+url, "GITHUB_OUTPUT="+outFile, "PATH="+toolDir(t, "curl"))
	out := runStep(t, steps["get"], env)
	raw, _ := os.ReadFile(outFile)
	if !strings.Contains(string(raw), "source=release") || !strings.Contains(string(out), "bumper v1.2.3 (release asset)") {
		t.Fatalf("outputs %q, log:\n%s", raw, out)
	}
	if _, err := os.Stat(filepath.Join(temp, "bumper-bin", "bumper")); err != nil {
		t.Fatalf("the run step's binary is not where it looks: %v", err)
	}
}

// goreleaserConfig is the part of .goreleaser.yaml that get-bumper.sh depends on.
type goreleaserConfig struct {
	Builds []struct {
		Env     []string `yaml:"env"`
		Goos    []string `yaml:"goos"`
		Goarch  []string `yaml:"goarch"`
		Ldflags []string `yaml:"ldflags"`
	} `yaml:"builds"`
	Archives []struct {
		Formats         []string `yaml:"formats"`
		NameTemplate    string   `yaml:"name_template"`
		WrapInDirectory bool     `yaml:"wrap_in_directory"`
	} `yaml:"archives"`
	Checksum struct {
		NameTemplate string `yaml:"name_template"`
	} `yaml:"checksum"`
	Release struct {
		GitHub struct{ Owner, Name string } `yaml:"github"`
	} `yaml:"release"`
}

// goreleaserName renders one of the config's name templates as GoReleaser would for
// the tag v1.2.3 (its .Version drops the v), using only the fields a name may use here.
func goreleaserName(t *testing.T, tmpl, arch string) string {
	t.Helper()
	tp, err := template.New("name").Option("missingkey=error").Parse(tmpl)
	if err != nil {
		t.Fatalf("failed to parse the name template %q: %v", tmpl, err)
	}
	var b strings.Builder
	err = tp.Execute(&b, map[string]string{"ProjectName": "bumper", "Version": "1.2.3", "Tag": "v1.2.3", "Os": "linux", "Arch": arch})
	if err != nil {
		t.Fatalf("failed to render the name template %q: %v", tmpl, err)
	}
	return b.String()
}

// TestGoReleaserMakesWhatGetBumperTakes: the release that .goreleaser.yaml makes is the
// one get-bumper.sh looks for: the archive's and the checksums file's names, a tarball
// with bumper at its top, a static binary for both architectures the script maps
// uname -m to, stamped with its version, on the action's repository's releases.
func TestGoReleaserMakesWhatGetBumperTakes(t *testing.T) {
	raw, err := os.ReadFile("../.goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg goreleaserConfig
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf("failed to parse .goreleaser.yaml: %v", err)
	}
	if len(cfg.Builds) != 1 || len(cfg.Archives) != 1 {
		t.Fatalf("%d builds and %d archives, want one of each: get-bumper.sh takes one asset per architecture", len(cfg.Builds), len(cfg.Archives))
	}
	b, a := cfg.Builds[0], cfg.Archives[0]
	script, err := os.ReadFile("get-bumper.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, arch := range []string{"amd64", "arm64"} {
		t.Run(arch, func(t *testing.T) {
			if !slices.Contains(b.Goarch, arch) || !slices.Equal(b.Goos, []string{"linux"}) {
				t.Errorf("goos %v goarch %v: no linux/%s binary", b.Goos, b.Goarch, arch)
			}
			rel := release{tag: "v1.2.3"}
			want := strings.Replace(rel.asset(), "_"+goreleaserArch()+".", "_"+arch+".", 1)
			if got := goreleaserName(t, a.NameTemplate, arch) + ".tar.gz"; got != want {
				t.Errorf("GoReleaser names the archive %s; get-bumper.sh downloads %s", got, want)
			}
		})
	}
	if !slices.Equal(a.Formats, []string{"tar.gz"}) || a.WrapInDirectory {
		t.Errorf("archive formats %v, wrapped %v: get-bumper.sh unpacks bumper from the top of a tar.gz", a.Formats, a.WrapInDirectory)
	}
	if sums := goreleaserName(t, cfg.Checksum.NameTemplate, ""); !strings.Contains(string(script), " "+sums) {
		t.Errorf("GoReleaser writes %s, which get-bumper.sh does not look for", sums)
	}
	if !slices.Contains(b.Env, "CGO_ENABLED=0") {
		t.Errorf("env %v: the binary is not static, and the VM image refuses it as the guest agent", b.Env)
	}
	if !strings.Contains(strings.Join(b.Ldflags, " "), "-X github.com/bumperdev/bumper/internal/buildinfo.Version={{ .Tag }}") {
		t.Errorf("ldflags %v do not stamp buildinfo.Version with the tag, as make build does", b.Ldflags)
	}
	if got := cfg.Release.GitHub.Owner + "/" + cfg.Release.GitHub.Name; got != "bumperdev/bumper" {
		t.Errorf("releases go to %s; the action (bumperdev/bumper) downloads from its own", got)
	}
}
