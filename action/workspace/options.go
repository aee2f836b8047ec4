package workspace

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/bumperdev/bumper/internal/revision"
)

// Defaults for the zero values of Options.
const (
	DefaultMaxFetchBytes    = 1 << 30
	DefaultMaxCheckoutBytes = 2 << 30
	DefaultMaxFiles         = 250000
	DefaultMaxTaskBytes     = 8 << 20
	DefaultMaxBundleBytes   = 256 << 20
	DefaultMaxCommits       = 1000
	DefaultMaxDiffBytes     = 16 << 20
)

// DefaultIdentity is the author and committer of the agent's commits unless Options
// says otherwise: no person's name, an address that can never be anyone's.
var DefaultIdentity = Identity{Name: "Bumper Agent", Email: "agent@bumper.invalid"}

// Identity is a git author.
type Identity struct {
	Name, Email string
}

func (id Identity) check() error {
	for _, v := range []string{id.Name, id.Email} {
		if v == "" || len(v) > 200 || strings.ContainsAny(v, "<>\"\\\n\r\x00") {
			return fmt.Errorf("identity %q <%q>: name and email must be non-empty, at most 200 bytes, without < > \" \\ or line breaks", id.Name, id.Email)
		}
	}
	if !strings.Contains(id.Email, "@") {
		return fmt.Errorf("identity email %q has no @", id.Email)
	}
	return nil
}

// Options says what to prepare.
type Options struct {
	// GitURL is the firewall's git gateway for the run's repository,
	// http://<firewall>/git/<owner>/<repo>.git: plain HTTP to a loopback or private
	// address, without credentials (the gateway adds the token).
	GitURL string
	// Base is the approved base commit, 40 hexadecimal digits.
	Base string
	// Issue and Attempt name the work branch, bumper/<issue>-<attempt>, unless Branch
	// names it.
	Issue, Attempt int
	// Branch is the work branch when it is not the attempt's own: a run on the pull
	// request (fix, review, revise, update) works on the pull request's branch,
	// bumper/<issue>-<n> of an earlier attempt.
	Branch string
	// Start is the commit the work branch starts at when it is not Base: a fix or
	// review run's pull request head (40 hexadecimal digits). The branch is then
	// fetched from the git host too, and must still be at Start (ErrBranchMoved); the
	// work comes back on top of Start.
	Start string
	// UpdateTo is, for an update run, the base branch's new head that the run merges
	// into the pull request's branch in the VM (MergeScript): fetched too (by its object
	// name, 40 hexadecimal digits), and left out of the work that comes back: the bundle
	// carries only what is on top of Start and UpdateTo, and Result requires a head
	// that keeps the merge (UpdateTo an ancestor) on Start's line (Start its first-parent
	// ancestor). Only with a Start other than Base.
	UpdateTo string
	// Review lays out a review run's workspace: the base commit's tree in base/ and
	// Start's in head/ (files only, no .git), and base/, head/ and the task directory
	// read-only in the VM (agentproto.ReadOnlyMarker), so that nothing run before the
	// reviewer (the repository's tests, which the pull request wrote) changes its
	// program or its inputs.
	Review bool
	// FullHistory fetches the base commit's whole history instead of the commit alone.
	FullHistory bool
	// Identity is the author and committer set for the agent's commits (default
	// DefaultIdentity).
	Identity Identity
	// Task is written into the task directory: file name to content (wire.Task.Files()).
	// Names are plain file names: letters, digits, '.', '_', '-', not starting with '.'.
	Task map[string][]byte
	// Dir is where the workspace's directory is made (default os.TempDir()).
	Dir string
	// Git is the git binary (default "git" from PATH).
	Git string
	// MaxFetchBytes bounds what the git host may send (default DefaultMaxFetchBytes).
	MaxFetchBytes int64
	// MaxCheckoutBytes and MaxFiles bound the base commit's tree before it is checked
	// out: a small pack can hold a file that inflates to gigabytes.
	MaxCheckoutBytes int64
	MaxFiles         int
	// MaxTaskBytes bounds the task files together (default DefaultMaxTaskBytes).
	MaxTaskBytes int64
	// MaxBundleBytes, MaxCommits and MaxDiffBytes bound what Result accepts from the
	// guest (defaults DefaultMaxBundleBytes, DefaultMaxCommits, DefaultMaxDiffBytes).
	MaxBundleBytes int64
	MaxCommits     int
	MaxDiffBytes   int64
}

func (o Options) withDefaults() Options {
	if o.Start == "" {
		o.Start = o.Base
	}
	if o.Branch == "" && o.Issue > 0 && o.Attempt > 0 {
		o.Branch = Branch(o.Issue, o.Attempt)
	}
	if o.Identity == (Identity{}) {
		o.Identity = DefaultIdentity
	}
	if o.Dir == "" {
		o.Dir = os.TempDir()
	}
	if o.Git == "" {
		o.Git = "git"
	}
	if o.MaxFetchBytes == 0 {
		o.MaxFetchBytes = DefaultMaxFetchBytes
	}
	if o.MaxCheckoutBytes == 0 {
		o.MaxCheckoutBytes = DefaultMaxCheckoutBytes
	}
	if o.MaxFiles == 0 {
		o.MaxFiles = DefaultMaxFiles
	}
	if o.MaxTaskBytes == 0 {
		o.MaxTaskBytes = DefaultMaxTaskBytes
	}
	if o.MaxBundleBytes == 0 {
		o.MaxBundleBytes = DefaultMaxBundleBytes
	}
	if o.MaxCommits == 0 {
		o.MaxCommits = DefaultMaxCommits
	}
	if o.MaxDiffBytes == 0 {
		o.MaxDiffBytes = DefaultMaxDiffBytes
	}
	return o
}

var (
	gitPathRE  = regexp.MustCompile(`^/git/([A-Za-z0-9_.-]{1,100})/([A-Za-z0-9_.-]{1,100})\.git$`)
	taskNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)
)

// Branch is the work branch of an attempt: bumper/<issue>-<attempt>, the one ref the
// firewall lets the run push.
func Branch(issue, attempt int) string {
	return "bumper/" + strconv.Itoa(issue) + "-" + strconv.Itoa(attempt)
}

// BranchAttempt reads the attempt out of a work branch of issue,
// bumper/<issue>-<attempt>, written exactly as Branch writes it; ok is false for any
// other name.
func BranchAttempt(branch string, issue int) (attempt int, ok bool) {
	rest, found := strings.CutPrefix(branch, "bumper/"+strconv.Itoa(issue)+"-")
	if !found || issue < 1 {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 1 || strconv.Itoa(n) != rest {
		return 0, false
	}
	return n, true
}

// ParseGitURL checks a git gateway URL and returns it with the repository it names
// (owner/name).
func ParseGitURL(raw string) (*url.URL, string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, "", fmt.Errorf("%w: GitURL %q: %w", ErrInvalidOptions, raw, err)
	}
	bad := func(why string) (*url.URL, string, error) {
		return nil, "", fmt.Errorf("%w: GitURL %q %s; use the firewall's git gateway, http://<firewall address>/git/<owner>/<repo>.git", ErrInvalidOptions, raw, why)
	}
	switch {
	case u.Scheme != "http":
		return bad("is not plain http (the gateway is on loopback or the VM's private link; it speaks TLS upstream)")
	case u.User != nil:
		return bad("carries credentials; the gateway adds the token, the runner never holds it in a URL")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.Opaque != "":
		return bad("has a query or fragment")
	}
	addr, err := netip.ParseAddr(u.Hostname())
	if err != nil || addr.Zone() != "" {
		return bad("does not name the firewall by an IP address")
	}
	if addr = addr.Unmap(); !addr.IsLoopback() && !addr.IsPrivate() {
		return bad("is not a loopback or private address")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return bad("has an invalid port")
		}
	}
	m := gitPathRE.FindStringSubmatch(u.Path)
	if m == nil || u.RawPath != "" || m[1] == "." || m[1] == ".." || m[2] == "." || m[2] == ".." {
		return bad("does not have the path /git/<owner>/<repo>.git")
	}
	return u, m[1] + "/" + m[2], nil
}

func (o Options) validate() (*url.URL, string, error) {
	u, repo, err := ParseGitURL(o.GitURL)
	if err != nil {
		return nil, "", err
	}
	var errs []error
	if !revision.IsCommitID(o.Base) {
		errs = append(errs, fmt.Errorf("base commit %q is not a full lowercase SHA-1 (40 hexadecimal digits)", o.Base))
	}
	if o.Issue < 1 || o.Attempt < 1 {
		errs = append(errs, fmt.Errorf("issue %d and attempt %d must be positive", o.Issue, o.Attempt))
	} else if n, ok := BranchAttempt(o.Branch, o.Issue); !ok || (o.Start == o.Base && n != o.Attempt) {
		errs = append(errs, fmt.Errorf("work branch %q: want bumper/%d-<attempt> (this attempt's own, unless the run starts at a pull request's head)", o.Branch, o.Issue))
	}
	if !revision.IsCommitID(o.Start) {
		errs = append(errs, fmt.Errorf("start commit %q is not a full lowercase SHA-1 (40 hexadecimal digits)", o.Start))
	}
	switch {
	case o.UpdateTo == "":
	case !revision.IsCommitID(o.UpdateTo):
		errs = append(errs, fmt.Errorf("update-to commit %q is not a full lowercase SHA-1 (40 hexadecimal digits)", o.UpdateTo))
	case o.Start == o.Base || o.UpdateTo == o.Start || o.Review:
		errs = append(errs, fmt.Errorf("update-to commit %s: only an update run, which starts at a pull request's head other than it, merges one", o.UpdateTo))
	}
	if err := o.Identity.check(); err != nil {
		errs = append(errs, err)
	}
	var total int64
	for name, data := range o.Task {
		if !taskNameRE.MatchString(name) {
			errs = append(errs, fmt.Errorf("task file name %q: use letters, digits, '.', '_', '-', not starting with '.'", name))
		}
		total += int64(len(data))
	}
	if len(o.Task) > 64 || total > o.MaxTaskBytes {
		errs = append(errs, fmt.Errorf("task files: %d files, %d bytes; at most 64 files and %d bytes", len(o.Task), total, o.MaxTaskBytes))
	}
	if o.MaxFetchBytes < 0 || o.MaxCheckoutBytes < 0 || o.MaxFiles < 0 || o.MaxBundleBytes < 0 || o.MaxCommits < 0 || o.MaxDiffBytes < 0 {
		errs = append(errs, errors.New("limits must not be negative"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	return u, repo, nil
}
