package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// maxGitStderr is how much of git's stderr is kept for error messages.
const maxGitStderr = 16 << 10

// lockedConfig is the configuration every git command runs with, on top of an
// environment that reads no system, global or user configuration. A repository can
// change none of it: it travels in objects, never in configuration. Nothing here is
// written into the repository's .git/config.
var lockedConfig = []string{
	// No transport at all unless a command allows one (fetchConfig).
	"protocol.allow=never",
	"http.followRedirects=false",
	"http.proxy=",
	// No credential helper (the empty value clears the list), askpass or prompt: the
	// gateway adds the token.
	"credential.helper=",
	// No hooks, whatever .git/hooks or the tree holds; no fsmonitor daemon.
	"core.hooksPath=/dev/null",
	"core.fsmonitor=false",
	// Objects are checked on the way in (.gitmodules URLs, .git paths, bad trees).
	"transfer.fsckObjects=true",
	"fetch.fsckObjects=true",
	// Paths that are only warnings to fsck are errors here: no tree entry may be
	// named .git, ., .., empty, or hold a slash.
	"fetch.fsck.hasDotgit=error",
	"fetch.fsck.hasDot=error",
	"fetch.fsck.hasDotdot=error",
	"fetch.fsck.emptyName=error",
	"fetch.fsck.fullPathname=error",
	// Paths that mean .git on other file systems are refused too.
	"core.protectNTFS=true",
	"core.protectHFS=true",
	// Submodules are never fetched, checked out or updated.
	"fetch.recurseSubmodules=false",
	"submodule.recurse=false",
	// Nothing in the background, nothing kept beyond what was asked.
	"gc.auto=0",
	"maintenance.auto=false",
	"fetch.writeCommitGraph=false",
	// Keep the received pack as it is, even for a handful of objects: unpacking it into
	// loose objects recompresses every object.
	"fetch.unpackLimit=1",
	"core.pager=cat",
	"color.ui=false",
	"advice.detachedHead=false",
}

// fetchConfig allows HTTP for the one fetch from the relay, and protocol v2 (which lets
// the client ask for a commit by its object name).
var fetchConfig = []string{"protocol.http.allow=always", "protocol.version=2"}

// gitRunner runs git in one repository with a clean, controlled environment.
type gitRunner struct {
	bin      string
	home     string // an empty directory: HOME, XDG_CONFIG_HOME
	gitDir   string
	workTree string
	ident    Identity
	// indexFile, when set, is the index git uses instead of the repository's.
	indexFile string
}

// env is the whole environment of a git command: nothing of the caller's environment
// but PATH, so GIT_CONFIG_PARAMETERS, GIT_DIR, proxies and the like cannot come in.
func (g *gitRunner) env() []string {
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	env := []string{
		"PATH=" + path,
		"HOME=" + g.home,
		"XDG_CONFIG_HOME=" + g.home,
		"LANG=C", "LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_ASKPASS=", "SSH_ASKPASS=", // empty: no askpass program
		"GIT_NO_REPLACE_OBJECTS=1",
		"GIT_NO_LAZY_FETCH=1",
		"GIT_OPTIONAL_LOCKS=0",
		"GIT_PROTOCOL_FROM_USER=0",
		"GIT_CEILING_DIRECTORIES=" + g.home,
		"GIT_AUTHOR_NAME=" + g.ident.Name, "GIT_AUTHOR_EMAIL=" + g.ident.Email,
		"GIT_COMMITTER_NAME=" + g.ident.Name, "GIT_COMMITTER_EMAIL=" + g.ident.Email,
	}
	if g.gitDir != "" {
		env = append(env, "GIT_DIR="+g.gitDir)
	}
	if g.workTree != "" {
		env = append(env, "GIT_WORK_TREE="+g.workTree)
	}
	if g.indexFile != "" {
		env = append(env, "GIT_INDEX_FILE="+g.indexFile)
	}
	return env
}

// run runs git with the locked configuration, extra configuration and args, and returns
// its stdout, at most maxOut bytes (more is an error).
func (g *gitRunner) run(ctx context.Context, extra []string, maxOut int64, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, g.bin, g.args(extra, args...)...)
	cmd.Env = g.env()
	cmd.Dir = g.home
	if g.workTree != "" {
		cmd.Dir = g.workTree
	}
	out := &limitedBuffer{max: maxOut}
	errBuf := &limitedBuffer{max: maxGitStderr, truncate: true}
	cmd.Stdout, cmd.Stderr = out, errBuf
	cmd.Stdin = nil
	err := cmd.Run()
	if out.over {
		return nil, fmt.Errorf("git %s wrote more than %d bytes; refused", args[0], maxOut)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("git %s: %w", args[0], ctx.Err())
		}
		return out.Bytes(), &GitError{Args: args, Err: err, Stderr: strings.TrimSpace(errBuf.String())}
	}
	return out.Bytes(), nil
}

// Git runs git in the workspace's host-side repository with the locked-down
// environment and configuration of Prepare and Result, plus config ("key=value", each
// given as -c), and returns its stdout, at most maxOut bytes (more is an error). A
// failed command is a *GitError with git's stderr (its first 16 KiB); its stdout is
// returned too. Nothing of config is written into the repository.
func (w *Workspace) Git(ctx context.Context, config []string, maxOut int64, args ...string) ([]byte, error) {
	if w == nil || w.git == nil {
		return nil, errors.New("git: the workspace was not made by Prepare")
	}
	if len(args) == 0 {
		return nil, errors.New("git: no command")
	}
	return w.git.run(ctx, config, maxOut, args...)
}

// args is the argument list of a git command with the locked configuration.
func (g *gitRunner) args(extra []string, args ...string) []string {
	argv := make([]string, 0, 2*(len(lockedConfig)+len(extra))+len(args))
	for _, c := range lockedConfig {
		argv = append(argv, "-c", c)
	}
	for _, c := range extra {
		argv = append(argv, "-c", c)
	}
	return append(argv, args...)
}

// line runs git and returns its output's first line, trimmed.
func (g *gitRunner) line(ctx context.Context, args ...string) (string, error) {
	out, err := g.run(ctx, nil, 64<<10, args...)
	if err != nil {
		return "", err
	}
	s, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(s), nil
}

// GitError is a git command that failed, with what it said.
type GitError struct {
	Args   []string
	Err    error
	Stderr string
}

func (e *GitError) Error() string {
	name := e.Args[0]
	if name == "bundle" && len(e.Args) > 1 {
		name += " " + e.Args[1]
	}
	msg := fmt.Sprintf("git %s failed: %v", name, e.Err)
	if e.Stderr != "" {
		msg += ": " + e.Stderr
	}
	return msg
}

func (e *GitError) Unwrap() error { return e.Err }

// noFollow makes an open fail on a symbolic link instead of following it.
const noFollow = syscall.O_NOFOLLOW

// limitedBuffer keeps at most max bytes: with truncate the rest is dropped quietly,
// otherwise the writer fails and over is set.
type limitedBuffer struct {
	bytes.Buffer
	max      int64
	truncate bool
	over     bool
}

var errTooMuchOutput = errors.New("too much output")

func (b *limitedBuffer) Write(p []byte) (int, error) {
	room := b.max - int64(b.Len())
	if int64(len(p)) <= room {
		return b.Buffer.Write(p)
	}
	if room > 0 {
		b.Buffer.Write(p[:room])
	}
	if b.truncate {
		return len(p), nil
	}
	b.over = true
	return 0, errTooMuchOutput
}
