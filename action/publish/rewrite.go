package publish

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/bumperdev/bumper/action/workspace"
	"github.com/bumperdev/bumper/internal/ghref"
	"github.com/bumperdev/bumper/internal/revision"
	"github.com/bumperdev/bumper/internal/textcut"
)

// VerifiedRef is where Rewrite keeps the head verification judged, as the agent made
// it, once refs/bumper/result names its rewrite.
const VerifiedRef = "refs/bumper/verified"

// MaxMessageBytes bounds a rewritten commit's message before the trailer: the agent's
// message past it is cut, saying so.
const MaxMessageBytes = 16 << 10

// ClaimedAuthorTrailer names the trailer that quotes the author the agent's commit
// claimed, when it is not the workspace's identity.
const ClaimedAuthorTrailer = "Agent-claimed-author"

// maxCommitObject bounds one commit object read from the agent's work.
const maxCommitObject = 1 << 20

// ErrRewrite: the agent's commits could not be rewritten as the App's exactly (a tree
// or a parent came out different); nothing is pushed.
var ErrRewrite = errors.New("failed to rewrite the agent's commits")

// Identity is a git author and committer.
type Identity struct {
	Name, Email string
}

func (id Identity) check() error {
	for _, v := range []string{id.Name, id.Email} {
		if v == "" || len(v) > 200 || strings.ContainsAny(v, "<>\n\r\x00") {
			return fmt.Errorf("identity %q <%q>: name and email must be non-empty, at most 200 bytes, without < > or line breaks", id.Name, id.Email)
		}
	}
	if !strings.Contains(id.Email, "@") {
		return fmt.Errorf("identity email %q has no @", id.Email)
	}
	return nil
}

// AppIdentity is the App's git identity on GitHub: its bot login ("slug[bot]") as the
// name, and GitHub's noreply address for it, "<id>+<login>@users.noreply.<host>" with
// the bot user's ID (GET /users/<login>), which GitHub shows as the App. With no ID
// (0: the lookup failed) it is "<login>@users.noreply.<host>", still the App's login
// and no one's mailbox. The host is serverURL's (GITHUB_SERVER_URL; github.com's
// noreply domain is users.noreply.github.com).
func AppIdentity(botLogin string, botID int64, serverURL string) (Identity, error) {
	slug, ok := strings.CutSuffix(botLogin, "[bot]")
	if !ok || slug == "" || strings.ContainsAny(slug, " <>@\n") {
		return Identity{}, fmt.Errorf("%w: bot login %q is not an App's (slug[bot])", ErrInvalidOptions, botLogin)
	}
	u, err := url.Parse(serverURL)
	if err != nil || u.Hostname() == "" {
		return Identity{}, fmt.Errorf("%w: server URL %q has no host", ErrInvalidOptions, serverURL)
	}
	host := strings.TrimPrefix(strings.ToLower(u.Hostname()), "www.")
	email := botLogin + "@users.noreply." + host
	if botID > 0 {
		email = strconv.FormatInt(botID, 10) + "+" + email
	}
	id := Identity{Name: botLogin, Email: email}
	if err := id.check(); err != nil {
		return Identity{}, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	return id, nil
}

// RewriteOptions says what to rewrite.
type RewriteOptions struct {
	// Workspace is the run's workspace, after a successful Result.
	Workspace *workspace.Workspace
	// Head is the commit Result returned; refs/bumper/result must name it.
	Head string
	// Identity is the author and committer of every rewritten commit (AppIdentity).
	Identity Identity
	// AgentIdentity is the identity the workspace gave the agent (default
	// workspace.DefaultIdentity): a commit claiming it needs no trailer.
	AgentIdentity workspace.Identity
	// Now is the author and committer date of every rewritten commit.
	Now time.Time
}

// Rewritten is the result of Rewrite.
type Rewritten struct {
	// Head is the rewritten head, which refs/bumper/result now names; Verified the head
	// as the agent made it and verification judged it (refs/bumper/verified).
	Head, Verified string
	// Commits is the number of commits rewritten.
	Commits int
}

// Rewrite makes the agent's commits, from the workspace's start (the base commit, or a
// pull request's head) to Head, and for an update run not the base branch's head's
// (workspace.Own), into the App's: the same trees and the same
// shape of history (merges keep their parents, mapped to their rewrites), author and
// committer Identity at Now, each message neutralized (ghref.Neutralize; co-author
// trailers renamed, so GitHub credits no one the agent named) with the author the agent
// claimed quoted in an Agent-claimed-author trailer. It runs git plumbing on the host
// (cat-file, hash-object: no hook, no configuration of the repository's, nothing of
// the VM), checks that every rewritten commit has the tree and parents it must, and
// only then moves refs/bumper/result to the new head, keeping the verified one in
// refs/bumper/verified. On any failure refs/bumper/result is left as it was.
func Rewrite(ctx context.Context, o RewriteOptions) (*Rewritten, error) {
	w := o.Workspace
	if w == nil {
		return nil, fmt.Errorf("%w: no workspace", ErrInvalidOptions)
	}
	if err := o.Identity.check(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	if o.AgentIdentity == (workspace.Identity{}) {
		o.AgentIdentity = workspace.DefaultIdentity
	}
	out, err := w.Git(ctx, nil, 1<<10, "rev-parse", "--verify", "--quiet", workspace.ResultRef+"^{commit}")
	if head := strings.TrimSpace(string(out)); err != nil || !revision.IsCommitID(head) {
		return nil, fmt.Errorf("%w (call workspace.Result first)", ErrNoResult)
	} else if head != o.Head {
		return nil, fmt.Errorf("%w: %s names %s, not the verified head %s", ErrInvalidOptions, workspace.ResultRef, head, o.Head)
	}
	// Only the run's own commits: never one reachable from the start (the base, or the
	// pull request's head with a person's commits in it) or from the base branch's head
	// an update run merged (main's commits, people's): those keep their ids, and the
	// rewritten commits keep them as parents.
	list, err := w.Git(ctx, nil, 8<<20, append(append([]string{"rev-list", "--reverse", "--topo-order", "--parents"}, w.Own(o.Head)...), "--")...)
	if err != nil {
		return nil, fmt.Errorf("%w: listing them: %w", ErrRewrite, err)
	}
	tmp, err := os.CreateTemp(w.Root, "commit-*")
	if err != nil {
		return nil, fmt.Errorf("failed to create a file for the rewritten commits: %w", err)
	}
	defer os.Remove(tmp.Name())
	tmp.Close()
	// git runs in the work tree: the object's file by its absolute name.
	objFile, err := filepath.Abs(tmp.Name())
	if err != nil {
		return nil, fmt.Errorf("failed to name the file for the rewritten commits: %w", err)
	}

	// mapped is each rewritten commit's new name; want what its new object must say.
	mapped := map[string]string{}
	want := map[string]string{}
	when := o.Now.UTC().Unix()
	ident := fmt.Sprintf("%s <%s> %d +0000", o.Identity.Name, o.Identity.Email, when)
	// Each line is a commit and its parents, parents first.
	var order [][]string
	for _, line := range strings.Split(string(list), "\n") {
		if ids := strings.Fields(line); len(ids) > 0 {
			order = append(order, ids)
		}
	}
	last := ""
	for _, ids := range order {
		old := ids[0]
		raw, err := w.Git(ctx, nil, maxCommitObject, "cat-file", "commit", old)
		if err != nil {
			return nil, fmt.Errorf("%w: reading %s: %w", ErrRewrite, old, err)
		}
		c, err := parseCommit(raw)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrRewrite, old, err)
		}
		if strings.Join(c.parents, " ") != strings.Join(ids[1:], " ") {
			return nil, fmt.Errorf("%w: %s's parents are not what rev-list says", ErrRewrite, old)
		}
		var obj bytes.Buffer
		fmt.Fprintf(&obj, "tree %s\n", c.tree)
		parents := make([]string, 0, len(c.parents))
		for _, p := range c.parents {
			if n, ok := mapped[p]; ok {
				p = n
			}
			parents = append(parents, p)
			fmt.Fprintf(&obj, "parent %s\n", p)
		}
		fmt.Fprintf(&obj, "author %s\ncommitter %s\n\n", ident, ident)
		obj.WriteString(rewriteMessage(c.message, c.author, o.AgentIdentity))
		if err := os.WriteFile(objFile, obj.Bytes(), 0o600); err != nil {
			return nil, fmt.Errorf("failed to write a rewritten commit: %w", err)
		}
		out, err := w.Git(ctx, nil, 1<<10, "hash-object", "-t", "commit", "-w", "--", objFile)
		id := strings.TrimSpace(string(out))
		if err != nil || !revision.IsCommitID(id) {
			return nil, fmt.Errorf("%w: writing %s's rewrite: %w", ErrRewrite, old, err)
		}
		mapped[old], want[id] = id, c.tree+" "+strings.Join(parents, " ")
		last = id
	}
	if len(order) == 0 || mapped[o.Head] != last {
		return nil, fmt.Errorf("%w: %s is not the last of the %d commits from %s", ErrRewrite, o.Head, len(order), w.Start)
	}
	if err := checkRewrite(ctx, w, last, want); err != nil {
		return nil, err
	}
	if _, err := w.Git(ctx, nil, 1<<10, "update-ref", VerifiedRef, o.Head); err != nil {
		return nil, fmt.Errorf("failed to keep the verified head: %w", err)
	}
	if _, err := w.Git(ctx, nil, 1<<10, "update-ref", workspace.ResultRef, last, o.Head); err != nil {
		return nil, fmt.Errorf("failed to move %s to the rewritten head: %w", workspace.ResultRef, err)
	}
	return &Rewritten{Head: last, Verified: o.Head, Commits: len(order)}, nil
}

// checkRewrite reads the rewritten history back: from head down to the workspace's
// start (and an update run's base branch head), exactly the commits written, each with the tree and parents it must have, and
// head's tree the verified head's. What verification judged is what is pushed.
func checkRewrite(ctx context.Context, w *workspace.Workspace, head string, want map[string]string) error {
	out, err := w.Git(ctx, nil, 8<<20, append(append([]string{"log", "--format=%H %T %P"}, w.Own(head)...), "--")...)
	if err != nil {
		return fmt.Errorf("%w: reading the rewrite back: %w", ErrRewrite, err)
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		id, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
		if exp, ok := want[id]; !ok || strings.TrimSpace(exp) != strings.TrimSpace(rest) {
			return fmt.Errorf("%w: commit %s reads back as %q, want %q", ErrRewrite, id, rest, want[id])
		}
		seen++
	}
	if seen != len(want) {
		return fmt.Errorf("%w: %d commits read back, %d written", ErrRewrite, seen, len(want))
	}
	return nil
}

// commit is what Rewrite reads of a commit object.
type commit struct {
	tree    string
	parents []string
	author  string // "Name <email>" as claimed, without the date
	message string
}

// parseCommit reads git's commit object format: header lines (continuations of a
// multi-line header, such as a signature, start with a space), a blank line, the
// message. Headers other than tree, parent and author are dropped with the commit.
func parseCommit(raw []byte) (*commit, error) {
	header, message, _ := bytes.Cut(raw, []byte("\n\n"))
	c := &commit{message: string(message)}
	for _, line := range strings.Split(string(header), "\n") {
		key, value, _ := strings.Cut(line, " ")
		switch key {
		case "tree":
			c.tree = value
		case "parent":
			c.parents = append(c.parents, value)
		case "author":
			c.author = value
			if i := strings.LastIndexByte(value, '>'); i >= 0 {
				c.author = value[:i+1]
			}
		}
	}
	if !revision.IsCommitID(c.tree) {
		return nil, fmt.Errorf("no tree line")
	}
	return c, nil
}

// coAuthorRE finds the trailers GitHub credits an account for (co-authors, and the
// organization a commit is made on behalf of), wherever they are.
var coAuthorRE = regexp.MustCompile(`(?i)(co-authored-by|on-behalf-of)[ \t]*:`)

// rewriteMessage is a rewritten commit's message: the agent's, valid UTF-8 with "\n"
// line ends, cut at MaxMessageBytes, credit trailers renamed, neutralized; then the
// author the agent claimed, quoted, unless it is the workspace's identity.
func rewriteMessage(msg, claimed string, agent workspace.Identity) string {
	msg = strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(strings.ToValidUTF8(msg, "\uFFFD"))
	msg = strings.TrimRight(msg, " \t\n")
	if len(msg) > MaxMessageBytes {
		kept := textcut.Bytes(msg, MaxMessageBytes)
		msg = kept + fmt.Sprintf("\n\n(message cut at %d of %d bytes)", len(kept), len(msg))
	}
	msg = coAuthorRE.ReplaceAllStringFunc(msg, func(m string) string {
		k := strings.ToLower(strings.TrimRight(m, " \t:"))
		return "Agent-claimed " + strings.ReplaceAll(k, "-", " ") + ":"
	})
	msg = ghref.Neutralize(msg)
	if strings.TrimSpace(msg) == "" {
		msg = "(no message)"
	}
	if claimed != fmt.Sprintf("%s <%s>", agent.Name, agent.Email) {
		msg += "\n\n" + ClaimedAuthorTrailer + ": " + strconv.Quote(ghref.Neutralize(claimed))
	}
	return msg + "\n"
}
