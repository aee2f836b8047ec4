package gitserver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/bumperdev/bumper/internal/pktline"
)

// maxPushOptions bounds the push-option lines read ahead of a guarded push's pack.
const maxPushOptions = 1000

// PathGuard forbids a push to change paths below some directories, as GitHub forbids a
// GitHub App without `workflows: write` to touch .github/workflows/.
type PathGuard struct {
	// Dirs are repository paths ("a/b", no trailing slash); a file below one of them
	// is guarded.
	Dirs []string
	// Refuse is the error the push is refused with, given the first guarded path a
	// pushed commit adds, changes or deletes.
	Refuse func(path string) error
}

// guards reports whether path is below one of g's directories.
func (g *PathGuard) guards(path string) bool {
	for _, d := range g.Dirs {
		if strings.HasPrefix(path, strings.TrimSuffix(d, "/")+"/") {
			return true
		}
	}
	return false
}

// quarantine is a guarded push's request body spooled to disk and its pack indexed
// into an object directory of its own, so that its commits can be read before git
// receive-pack sees them and before any ref moves.
type quarantine struct {
	dir  string   // the object directory, below the repository's objects/
	body *os.File // everything after the command list, as the client sent it
	env  []string // git's environment to see the quarantined objects too
}

// close removes the quarantine.
func (q *quarantine) close() {
	if q.body != nil {
		_ = q.body.Close()
	}
	_ = os.RemoveAll(q.dir)
}

// rest is the spooled body from its start, for git receive-pack.
func (q *quarantine) rest() (io.Reader, error) {
	if _, err := q.body.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("failed to rewind the spooled push: %w", err)
	}
	return q.body, nil
}

// spool reads the rest of a push (push options, then the pack) into a quarantine in
// the bare repository dir and indexes the pack there, as git receive-pack's own
// quarantine does. The caller closes the quarantine.
func (s *Server) spool(ctx context.Context, dir string, cl *pktline.CommandList, body io.Reader) (*quarantine, error) {
	objects := filepath.Join(dir, "objects")
	qdir, err := os.MkdirTemp(objects, "tmp_objdir-guard-")
	if err != nil {
		return nil, fmt.Errorf("failed to create a quarantine for the push: %w", err)
	}
	q := &quarantine{dir: qdir, env: []string{
		"GIT_OBJECT_DIRECTORY=" + qdir,
		"GIT_ALTERNATE_OBJECT_DIRECTORIES=" + objects,
	}}
	if err := os.Mkdir(filepath.Join(qdir, "pack"), 0o755); err != nil {
		q.close()
		return nil, fmt.Errorf("failed to create a quarantine for the push: %w", err)
	}
	if q.body, err = os.CreateTemp(qdir, "push-"); err != nil {
		q.close()
		return nil, fmt.Errorf("failed to spool the push: %w", err)
	}
	tee := io.TeeReader(body, q.body)
	if cl.HasCapability("push-options") {
		for n := 0; ; n++ {
			if n > maxPushOptions {
				q.close()
				return nil, fmt.Errorf("a push has more than %d push options", maxPushOptions)
			}
			pkt, err := pktline.ReadPacket(tee)
			if err != nil {
				q.close()
				return nil, fmt.Errorf("failed to read the push options: %w", err)
			}
			if pkt.Kind == pktline.Flush {
				break
			}
		}
	}
	packAt, err := q.body.Seek(0, io.SeekCurrent)
	if err != nil {
		q.close()
		return nil, fmt.Errorf("failed to spool the push: %w", err)
	}
	end, err := io.Copy(q.body, body)
	if err != nil {
		q.close()
		return nil, fmt.Errorf("failed to read the pushed pack: %w", err)
	}
	if end == 0 {
		return q, nil // nothing to index: the client sent no pack
	}
	if _, err := q.body.Seek(packAt, io.SeekStart); err != nil {
		q.close()
		return nil, fmt.Errorf("failed to rewind the spooled pack: %w", err)
	}
	if _, err := s.runReader(ctx, dir, q.body, q.env, "index-pack", "--stdin", "--fix-thin"); err != nil {
		q.close()
		return nil, fmt.Errorf("failed to index the pushed pack: %w", err)
	}
	return q, nil
}

// guardedPath returns the first path below g's directories that a commit the push
// brings changes (added, modified or deleted), or "" when none does. The commits
// checked are those reachable from the updates' new values and from no existing ref;
// each is compared with its first parent (a root commit with the empty tree), so a
// merge is judged by what it brings to the branch it lands on.
func (s *Server) guardedPath(ctx context.Context, dir string, q *quarantine, updates []pktline.RefUpdate, g *PathGuard) (string, error) {
	var peel bytes.Buffer
	for _, u := range updates {
		if !u.IsDelete() {
			peel.WriteString(u.New + "^{}\n")
		}
	}
	if peel.Len() == 0 {
		return "", nil
	}
	out, err := s.runReader(ctx, dir, &peel, q.env, "cat-file", "--batch-check=%(objectname) %(objecttype)")
	if err != nil {
		return "", fmt.Errorf("failed to read the pushed tips: %w", err)
	}
	args := []string{"rev-list", "--parents"}
	tips := 0
	for line := range strings.SplitSeq(string(out), "\n") {
		// A missing object is git receive-pack's to refuse; only commits have history.
		if oid, ok := strings.CutSuffix(line, " commit"); ok {
			args = append(args, oid)
			tips++
		}
	}
	if tips == 0 {
		return "", nil
	}
	args = append(args, "--not", "--all")
	out, err = s.run(ctx, dir, nil, q.env, args...)
	if err != nil {
		return "", fmt.Errorf("failed to list the pushed commits: %w", err)
	}
	var pairs bytes.Buffer
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		switch len(f) {
		case 0:
		case 1:
			pairs.WriteString(f[0] + "\n")
		default:
			pairs.WriteString(f[0] + " " + f[1] + "\n")
		}
	}
	if pairs.Len() == 0 {
		return "", nil
	}
	diffArgs := []string{"diff-tree", "--stdin", "-r", "--root", "--no-commit-id", "--name-only", "-z", "--"}
	for _, d := range g.Dirs {
		diffArgs = append(diffArgs, strings.TrimSuffix(d, "/"))
	}
	out, err = s.runReader(ctx, dir, &pairs, q.env, diffArgs...)
	if err != nil {
		return "", fmt.Errorf("failed to list the paths the pushed commits change: %w", err)
	}
	for p := range strings.SplitSeq(string(out), "\x00") {
		if g.guards(p) {
			return p, nil
		}
	}
	return "", nil
}

// checkGuard spools and checks a push for g. When the push may go on, the quarantine
// holds its body for git receive-pack and the caller closes it; refused is g's refusal;
// err is a failure to check.
func (s *Server) checkGuard(ctx context.Context, dir string, cl *pktline.CommandList, body io.Reader, g *PathGuard) (q *quarantine, refused, err error) {
	q, err = s.spool(ctx, dir, cl, body)
	if err != nil {
		return nil, nil, err
	}
	p, err := s.guardedPath(ctx, dir, q, cl.Updates, g)
	if err != nil {
		q.close()
		return nil, nil, err
	}
	if p != "" {
		q.close()
		if refused = g.Refuse(p); refused == nil {
			refused = fmt.Errorf("refusing to change %s", p)
		}
		return nil, refused, nil
	}
	return q, nil, nil
}
