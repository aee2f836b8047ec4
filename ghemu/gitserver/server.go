// Package gitserver is the git host of Bumper's GitHub emulator: real bare repositories
// served over smart HTTP by `git http-backend`, plus the repository plumbing the
// emulator's REST API needs (refs, commits, file contents).
//
// The package knows nothing of tokens, users or branch protection: the emulator answers
// those questions through the callbacks in Options. A request goes through, in order:
// path and name validation (404), Options.Authorize, the repository's existence (404),
// and for a push, Options.CheckPush on the parsed ref updates and Options.GuardPaths on
// the commits pushed; only then does git see it.
package gitserver

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/bumperdev/bumper/internal/pktline"
)

// Access is what a request wants to do with a repository.
type Access int

const (
	// Read is clone and fetch (git-upload-pack); it needs `contents: read`.
	Read Access = iota + 1
	// Write is push (git-receive-pack); it needs `contents: write`.
	Write
)

// String is "read" or "write".
func (a Access) String() string {
	switch a {
	case Read:
		return "read"
	case Write:
		return "write"
	}
	return fmt.Sprintf("Access(%d)", int(a))
}

// Options configures a Server.
type Options struct {
	// Root is the directory holding <owner>/<repo>.git bare repositories. It is created
	// if missing.
	Root string
	// Authorize decides whether the request may have access to owner/repo. It is
	// required. Returning an *AuthError answers with its status (401 prompts the client
	// for credentials); any other error answers 500 and refuses the request.
	Authorize func(r *http.Request, owner, repo string, access Access) error
	// CheckPush is asked before a push reaches git, with the ref updates the client
	// sent, after Authorize allowed Write. An error refuses the whole push: every ref is
	// reported "[remote rejected]" with the error's message as the reason, and the
	// message is also printed as "remote: error: ...". Nil allows every update. It
	// runs without the repository's lock: it may call the Server's methods.
	CheckPush func(r *http.Request, owner, repo string, updates []pktline.RefUpdate) error
	// GuardPaths is asked, after CheckPush allowed a push that moves a ref to a new
	// value, whether the pusher may not change some paths. A non-nil PathGuard makes
	// the server read the whole push, index its pack into a quarantine and look at the
	// commits it brings (reachable from the new values and from no existing ref, each
	// against its first parent); if one adds, changes or deletes a guarded path, the
	// whole push is refused like a CheckPush refusal, with PathGuard.Refuse's message,
	// before git receive-pack runs. Nil, or a nil result, guards nothing. It runs
	// without the repository's lock.
	GuardPaths func(r *http.Request, owner, repo string, updates []pktline.RefUpdate) *PathGuard
	// Pushed is told, after git finished a push, which of its updates took effect (in
	// the order sent). It is not called when none did. It runs on the request's
	// goroutine before the response ends (so when git push returns, Pushed has run),
	// without the repository's lock: it may call the Server's methods.
	Pushed func(r *http.Request, owner, repo string, updates []pktline.RefUpdate)
	// NotFound answers paths that are not git smart-HTTP endpoints, invalid names and
	// missing repositories. Nil answers GitHub's JSON 404.
	NotFound http.Handler
}

// Server serves and manages the repositories under Options.Root. It is safe for
// concurrent use: ref updates, through HTTP pushes or the methods, are serialized per
// repository.
type Server struct {
	opts        Options
	root        string
	gitPath     string
	backendPath string

	mu    sync.Mutex
	locks map[string]*sync.Mutex
	// createMu serializes CreateRepository, whose owner directory is shared by
	// repositories that have different locks.
	createMu sync.Mutex
}

// New checks that git and git http-backend are installed and prepares Root.
func New(opts Options) (*Server, error) {
	if opts.Authorize == nil {
		return nil, errors.New("gitserver: Options.Authorize is required: without it every request would be allowed")
	}
	if opts.Root == "" {
		return nil, errors.New("gitserver: Options.Root is required: the directory for the bare repositories")
	}
	root, err := filepath.Abs(opts.Root)
	if err != nil {
		return nil, fmt.Errorf("failed to make repository root %q absolute: %w", opts.Root, err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("failed to create repository root: %w", err)
	}
	gitPath, err := exec.LookPath("git")
	if err != nil {
		return nil, fmt.Errorf("failed to find git (install the git package): %w", err)
	}
	out, err := exec.Command(gitPath, "--exec-path").Output()
	if err != nil {
		return nil, fmt.Errorf("failed to ask git for its exec path: %w", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if fi, err := os.Stat(backend); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("failed to find an executable git-http-backend at %s (install the git package): %w", backend, err)
	}
	if opts.NotFound == nil {
		opts.NotFound = http.HandlerFunc(githubNotFound)
	}
	return &Server{
		opts:        opts,
		root:        root,
		gitPath:     gitPath,
		backendPath: backend,
		locks:       make(map[string]*sync.Mutex),
	}, nil
}

// githubNotFound is GitHub's 404 body.
func githubNotFound(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusNotFound)
	fmt.Fprint(w, `{"message":"Not Found","documentation_url":"https://docs.github.com/rest","status":"404"}`)
}

// lock serializes ref updates of one repository and returns the unlock function. The
// key is case-folded because repository names are (see openRepo).
func (s *Server) lock(owner, repo string) func() {
	key := strings.ToLower(owner + "/" + repo)
	s.mu.Lock()
	l, ok := s.locks[key]
	if !ok {
		l = &sync.Mutex{}
		s.locks[key] = l
	}
	s.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// repoDir validates the names and returns the directory a new repository of that
// name gets.
func (s *Server) repoDir(owner, repo string) (string, error) {
	if err := checkOwner(owner); err != nil {
		return "", err
	}
	if err := checkRepo(repo); err != nil {
		return "", err
	}
	return filepath.Join(s.root, owner, repo+".git"), nil
}

// openRepo returns the directory of an existing repository. Names match
// case-insensitively, as on GitHub, where Acme/Widgets and acme/widgets are one
// repository.
func (s *Server) openRepo(owner, repo string) (string, error) {
	dir, err := s.repoDir(owner, repo)
	if err != nil {
		return "", err
	}
	if isBareRepo(dir) {
		return dir, nil
	}
	if ownerDir, ok := findFold(s.root, owner); ok {
		if dir, ok := findFold(ownerDir, repo+".git"); ok && isBareRepo(dir) {
			return dir, nil
		}
	}
	return "", fmt.Errorf("%w: %s/%s", ErrRepositoryNotFound, owner, repo)
}

// findFold finds the directory in parent whose name equals name ignoring case.
func findFold(parent, name string) (string, bool) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return "", false
	}
	for _, e := range entries {
		if e.IsDir() && strings.EqualFold(e.Name(), name) {
			return filepath.Join(parent, e.Name()), true
		}
	}
	return "", false
}

// storedNames returns the owner and repository names of a repository directory, in the
// case they were created with.
func storedNames(dir string) (owner, repo string) {
	return filepath.Base(filepath.Dir(dir)), strings.TrimSuffix(filepath.Base(dir), ".git")
}

func isBareRepo(dir string) bool {
	for _, name := range []string{"HEAD", "objects", "refs"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return false
		}
	}
	return true
}
