// Package dockerfiletest checks the repository's Dockerfile with BuildKit's own parser,
// as far as that is possible without a container engine: it parses without warnings, its
// targets exist, what it copies from the build context exists and is not ignored, and
// each target runs as the user and stops on the signal the docs promise.
package dockerfiletest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// repoRoot is the build context: the Dockerfile is built from the repository's root.
const repoRoot = "../.."

// parse reads the Dockerfile into stages, failing on any warning of BuildKit's parser or
// of its linter (the rules `docker build --check` applies at parse time).
func parse(t *testing.T) []instructions.Stage {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatalf("failed to open the Dockerfile: %v", err)
	}
	defer f.Close()
	res, err := parser.Parse(f)
	if err != nil {
		t.Fatalf("failed to parse the Dockerfile: %v", err)
	}
	for _, w := range res.Warnings {
		t.Errorf("parser warning: %s", w.Short)
	}
	lint := linter.New(&linter.Config{Warn: func(rule, desc, url, msg string, loc []parser.Range) {
		t.Errorf("lint %s: %s (%s)", rule, msg, url)
	}})
	stages, _, err := instructions.Parse(res.AST, lint)
	if err != nil {
		t.Fatalf("failed to read the Dockerfile's instructions: %v", err)
	}
	return stages
}

func stage(t *testing.T, stages []instructions.Stage, name string) instructions.Stage {
	t.Helper()
	for _, s := range stages {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("the Dockerfile has no target %q", name)
	return instructions.Stage{}
}

func commands[T instructions.Command](s instructions.Stage) []T {
	var out []T
	for _, c := range s.Commands {
		if v, ok := c.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

// finalUser is the user a target's container starts as: its last USER, or root when
// the stage sets none (the base image's own USER is not visible here).
func finalUser(s instructions.Stage) string {
	users := commands[*instructions.UserCommand](s)
	if len(users) == 0 {
		return ""
	}
	return users[len(users)-1].User
}

func stopSignal(s instructions.Stage) string {
	sigs := commands[*instructions.StopSignalCommand](s)
	if len(sigs) == 0 {
		return ""
	}
	return sigs[len(sigs)-1].Signal
}

func TestTargets(t *testing.T) {
	stages := parse(t)
	tests := []struct {
		target string
		// base is the start of the FROM image name the target needs.
		base string
		// uid is the numeric user the container runs as ("0" for root).
		uid string
		// entrypoint is the program the container starts.
		entrypoint string
	}{
		// Distroless static: CA certificates, no shell, no libc.
		{target: "serve", base: "gcr.io/distroless/static-debian12", uid: "65532", entrypoint: "/usr/local/bin/bumper"},
		{target: "emulator", base: "debian:bookworm", uid: "10001", entrypoint: "/usr/local/bin/bumper"},
		// Debian 12: the image builder reads the host's apt sources for the kernel, busybox
		// and the debootstrap mirror (sandbox/image.DefaultSuite is bookworm).
		{target: "runner", base: "debian:bookworm", uid: "0", entrypoint: ""},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			s := stage(t, stages, tt.target)
			if !strings.HasPrefix(s.BaseName, tt.base) {
				t.Errorf("FROM %s, want %s…", s.BaseName, tt.base)
			}
			user := finalUser(s)
			uid, _, _ := strings.Cut(user, ":")
			switch {
			case tt.uid == "0" && uid != "" && uid != "root" && uid != "0":
				t.Errorf("USER %s, want root", user)
			case tt.uid != "0" && uid != tt.uid:
				// Numeric, so that Kubernetes' runAsNonRoot can verify it without /etc/passwd.
				t.Errorf("USER %q, want the numeric non-root user %s", user, tt.uid)
			}
			if got := stopSignal(s); got != "SIGTERM" {
				t.Errorf("STOPSIGNAL %q, want SIGTERM: serve drains its queue on it, the runner ends its job", got)
			}
			if tt.entrypoint != "" {
				eps := commands[*instructions.EntrypointCommand](s)
				if len(eps) == 0 {
					t.Fatal("no ENTRYPOINT")
				}
				ep := eps[len(eps)-1]
				// Exec form: a shell form would make /bin/sh PID 1, which does not pass SIGTERM on.
				if ep.PrependShell || len(ep.CmdLine) == 0 || ep.CmdLine[0] != tt.entrypoint {
					t.Errorf("ENTRYPOINT %q (shell form %v), want the exec form of %s", ep.CmdLine, ep.PrependShell, tt.entrypoint)
				}
			}
		})
	}
}

// TestServeHasNoShell: serve's base has no shell, so a RUN there could not even build,
// and git or a package manager in serve's image would only widen what an attacker in it
// can use.
func TestServeHasNoShell(t *testing.T) {
	s := stage(t, parse(t), "serve")
	for _, r := range commands[*instructions.RunCommand](s) {
		t.Errorf("serve runs %q at build time; its distroless base has no shell", r.CmdLine)
	}
	cmds := commands[*instructions.CmdCommand](s)
	if len(cmds) == 0 || !slices.Equal(cmds[len(cmds)-1].CmdLine[:1], []string{"serve"}) {
		t.Errorf("serve's CMD is %v, want bumper serve", cmds)
	}
}

// TestRunnerPackages: the runner target has every program a run and an image build use
// (docs/runner-host.md, "The self-hosted runner"; scripts/install-deps.sh).
func TestRunnerPackages(t *testing.T) {
	s := stage(t, parse(t), "runner")
	var installed []string
	for _, r := range commands[*instructions.RunCommand](s) {
		for _, line := range r.CmdLine {
			if i := strings.Index(line, "apt-get install"); i >= 0 {
				installed = append(installed, strings.Fields(line[i:])...)
			}
		}
	}
	for _, tt := range []struct{ pkg, why string }{
		{"qemu-system-x86", "the microVM"},
		{"qemu-utils", "qemu-img: the run's copy-on-write disk"},
		{"e2fsprogs", "mkfs.ext4: workspace, output and root disks"},
		{"nftables", "the run's default-deny rules"},
		{"iproute2", "the run's network namespace"},
		{"git", "the workspace, fetched on the host"},
		{"curl", "the action's download of the release binary"},
		{"debootstrap", "the VM image's rootfs"},
		{"busybox-static", "the VM image's initramfs"},
		{"kmod", "depmod for the guest's modules"},
		{"xz-utils", "the kernel package's payload"},
		{"ca-certificates", "TLS to GitHub and the mirror"},
	} {
		t.Run(tt.pkg, func(t *testing.T) {
			if !slices.Contains(installed, tt.pkg) {
				t.Errorf("the runner target does not install %s (%s)", tt.pkg, tt.why)
			}
		})
	}
}

// TestCopySources: every COPY or ADD from the build context names a path that exists in
// the repository and that .dockerignore does not drop, and every COPY --from names a
// stage defined before it or an image.
func TestCopySources(t *testing.T) {
	stages := parse(t)
	ignore := dockerignore(t)
	var defined []string
	for _, s := range stages {
		for _, c := range commands[*instructions.CopyCommand](s) {
			if c.From != "" {
				if strings.Contains(c.From, "/") || strings.Contains(c.From, ":") {
					continue // an image reference: nothing to check without a registry
				}
				if !slices.Contains(defined, c.From) {
					t.Errorf("stage %s: COPY --from=%s names no earlier stage", s.Name, c.From)
				}
				continue
			}
			checkContextPaths(t, s.Name, c.SourcePaths, ignore)
		}
		for _, a := range commands[*instructions.AddCommand](s) {
			checkContextPaths(t, s.Name, a.SourcePaths, ignore)
		}
		if s.Name != "" {
			defined = append(defined, s.Name)
		}
	}
}

func checkContextPaths(t *testing.T, stage string, paths []string, ignore *patternmatcher.PatternMatcher) {
	t.Helper()
	for _, p := range paths {
		t.Run(stage+"/"+p, func(t *testing.T) {
			matches, err := filepath.Glob(filepath.Join(repoRoot, p))
			if err != nil {
				t.Fatalf("bad COPY source %q: %v", p, err)
			}
			if len(matches) == 0 {
				t.Fatalf("stage %s copies %q, which is not in the repository", stage, p)
			}
			if p == "." {
				return
			}
			for _, m := range matches {
				rel, err := filepath.Rel(repoRoot, m)
				if err != nil {
					t.Fatal(err)
				}
				if ignored, err := ignore.MatchesOrParentMatches(filepath.ToSlash(rel)); err != nil {
					t.Fatal(err)
				} else if ignored {
					t.Errorf("stage %s copies %s, which .dockerignore leaves out of the build context", stage, rel)
				}
			}
		})
	}
}

func dockerignore(t *testing.T) *patternmatcher.PatternMatcher {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot, ".dockerignore"))
	if err != nil {
		t.Fatalf("failed to open .dockerignore: %v", err)
	}
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	if err != nil {
		t.Fatalf("failed to read .dockerignore: %v", err)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatalf("failed to compile .dockerignore: %v", err)
	}
	return pm
}

// TestContextKeepsSource: the build stage's `go build ./cmd/bumper` needs the module's
// source in the context; .dockerignore must not drop it.
func TestContextKeepsSource(t *testing.T) {
	ignore := dockerignore(t)
	for _, p := range []string{"go.mod", "go.sum", "cmd/bumper/main.go", "internal/buildinfo", "app", "sandbox/guest"} {
		t.Run(p, func(t *testing.T) {
			if _, err := os.Stat(filepath.Join(repoRoot, p)); err != nil {
				t.Fatalf("%s is not in the repository: %v", p, err)
			}
			if ignored, err := ignore.MatchesOrParentMatches(p); err != nil {
				t.Fatal(err)
			} else if ignored {
				t.Errorf(".dockerignore leaves %s out of the build context", p)
			}
		})
	}
}
