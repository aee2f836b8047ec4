// Package workitem is the App's domain logic: what a label, a comment, an edit or a
// run's progress does to a work item. It works against the small GitHub interface
// below (app/ghclient adapts go-github to it) and keeps the ledger on the issue.
package workitem

import (
	"context"
	"errors"
	"time"

	"github.com/bumperdev/bumper/app/workitem/agentwords"
	"github.com/bumperdev/bumper/app/workitem/protectionnotice"
	"github.com/bumperdev/bumper/app/workitem/recordtrust"
	"github.com/bumperdev/bumper/app/workitem/verdictpost"
)

// Issue is what the App needs to know about an issue.
type Issue struct {
	Number int
	Title  string
	Body   string
	Labels []string
	// Comments is the comment count as a webhook payload gives it; -1 when unknown.
	// Zero lets the App skip listing comments: there can be no status comment.
	Comments int
	// Author is who opened the issue, when known ("" otherwise): an issue the App's bot
	// opened never becomes a work item, whoever labels it.
	Author string
}

// Comment is an issue comment.
type Comment = recordtrust.Comment

// Pull is what the App checks of a pull request before it takes it as a work item's.
type Pull struct {
	Number   int
	Author   string // who opened it
	HeadRepo string // owner/name of the head repository: a fork's differs from the base's
	HeadRef  string // branch name
	HeadSHA  string
	BaseRef  string
	State    string // open, closed
	Merged   bool
	// Mergeable is whether GitHub can merge the head into the base without conflicts;
	// nil while GitHub computes it (in the background, after either branch moved).
	Mergeable *bool
	// MergeableState is GitHub's mergeable_state: clean, dirty, behind, blocked,
	// unstable, has_hooks, draft or unknown.
	MergeableState string
}

// PullFile is one file a pull request changes, with its diff hunks as GitHub gives them
// (Patch is empty for a binary file or a diff too large to show).
type PullFile = verdictpost.File

// Review is a pull request review the App posts, with its inline comments
// (ReviewComment).
type Review = verdictpost.Review

// ReviewComment is an inline comment of a review, on one line of the diff.
type ReviewComment = verdictpost.Comment

// CheckRun is a check run as the App posts it (completed) or reads it.
type CheckRun struct {
	ID         int64
	Name       string
	HeadSHA    string
	Status     string
	Conclusion string
	Title      string
	Summary    string
	Text       string
	DetailsURL string
	// AppID is the App that made the check run (0 when GitHub names none).
	AppID int64
}

// RequiredCheck is a status check a branch's protection requires: by name from any
// source (AppID 0), or pinned to one App, whose check runs alone satisfy it.
type RequiredCheck = protectionnotice.RequiredCheck

// ReviewInfo is a pull request review as the App reads it.
type ReviewInfo = agentwords.Review

// PullComment is a pull request review comment: one on a line of the diff, in a review
// (ReviewID), maybe answering a thread's first comment (InReplyTo).
type PullComment = agentwords.PullComment

// Protection is what a branch's protection enforces, as far as the App checks it.
type Protection = protectionnotice.Protection

// ErrForbidden is returned by GitHub implementations when the App lacks the permission.
var ErrForbidden = errors.New("forbidden by GitHub (the App lacks a permission)")

// Repo names a repository and its default branch, as webhook payloads carry them.
type Repo struct {
	FullName      string // owner/name
	DefaultBranch string
}

// ErrUnprocessable is returned by GitHub implementations when GitHub refused what was
// sent (HTTP 422, such as a comment longer than it allows): sending it again gets the
// same answer.
var ErrUnprocessable = errors.New("refused by GitHub (HTTP 422)")

// ErrNotFound is returned by GitHub implementations when the object does not exist.
var ErrNotFound = errors.New("not found on GitHub")

// ErrConflict is a record write refused because another replica wrote the record since
// it was read: nothing was written, and the work is done again on the record as it is.
var ErrConflict = errors.New("the status comment changed since it was read (another replica wrote it); nothing was written")

// GitHub is the part of GitHub's API one installation gives the App. Every method names
// the repository as "owner/name".
type GitHub interface {
	// Permission is the user's level on the repository (admin, maintain, write, triage,
	// read, none).
	Permission(ctx context.Context, repo, user string) (string, error)
	// File reads a file at ref (a commit or branch; "" for the default branch);
	// ErrNotFound when absent.
	File(ctx context.Context, repo, path, ref string) ([]byte, error)
	// BranchHead is the commit a branch points at.
	BranchHead(ctx context.Context, repo, branch string) (string, error)
	// IssuesWithLabel lists every issue (open or closed) carrying the label.
	IssuesWithLabel(ctx context.Context, repo, label string) ([]Issue, error)
	// Issue reads one issue as it is now; ErrNotFound when absent.
	Issue(ctx context.Context, repo string, number int) (Issue, error)
	Comments(ctx context.Context, repo string, issue int) ([]Comment, error)
	// Comment reads one issue comment; ErrNotFound when it was deleted.
	Comment(ctx context.Context, repo string, id int64) (Comment, error)
	// PullRequest reads one pull request; ErrNotFound when absent.
	PullRequest(ctx context.Context, repo string, number int) (Pull, error)
	// OpenPulls lists the open pull requests into base, every page, without their
	// mergeability (GitHub's list does not compute it).
	OpenPulls(ctx context.Context, repo, base string) ([]Pull, error)
	CreateComment(ctx context.Context, repo string, issue int, body string) (int64, error)
	EditComment(ctx context.Context, repo string, id int64, body string) error
	AddLabel(ctx context.Context, repo string, issue int, label string) error
	// RemoveLabel succeeds when the label is already absent.
	RemoveLabel(ctx context.Context, repo string, issue int, label string) error
	// CreateRef creates a ref at sha and reports false, without error, when it already
	// exists: GitHub's one atomic create-if-absent.
	CreateRef(ctx context.Context, repo, ref, sha string) (bool, error)
	// RefExists reports whether a ref exists.
	RefExists(ctx context.Context, repo, ref string) (bool, error)
	// Dispatch starts a workflow_dispatch run and returns its run ID.
	Dispatch(ctx context.Context, repo, workflow, ref string, inputs map[string]string) (int64, error)
	// RunByTitle finds the newest workflow_dispatch run created at or after since, by
	// actor (the App's bot: a writer can dispatch the workflow too), whose title
	// (display_title: the runner workflow's run-name, wire.RunName) is title, and returns
	// its ID; 0 when there is none.
	RunByTitle(ctx context.Context, repo, title, actor string, since time.Time) (int64, error)
	// PullFiles lists the files a pull request changes, with their patches.
	PullFiles(ctx context.Context, repo string, number int) ([]PullFile, error)
	// CreateReview posts a pull request review and returns its ID.
	CreateReview(ctx context.Context, repo string, number int, r Review) (int64, error)
	// CreateCheckRun posts a completed check run and returns its ID.
	CreateCheckRun(ctx context.Context, repo string, cr CheckRun) (int64, error)
	// CheckRuns lists the check runs on a commit, newest first for each name.
	CheckRuns(ctx context.Context, repo, sha string) ([]CheckRun, error)
	// RequiredChecks are the status checks a branch's protection requires, as anyone
	// who can read the repository sees them; none when it is unprotected.
	RequiredChecks(ctx context.Context, repo, branch string) ([]RequiredCheck, error)
	// Reviews lists a pull request's reviews.
	Reviews(ctx context.Context, repo string, number int) ([]ReviewInfo, error)
	// Review reads one review of a pull request; ErrNotFound when absent.
	Review(ctx context.Context, repo string, number int, id int64) (ReviewInfo, error)
	// PullComments lists a pull request's review comments, every review's, oldest
	// first.
	PullComments(ctx context.Context, repo string, number int) ([]PullComment, error)
	// UpdateBranch asks GitHub to merge the base branch's head into the pull request's
	// branch (update-branch), if its head is still expectedHead; GitHub answers at once
	// and merges in the background, and the push comes back as a synchronize webhook.
	// ErrUnprocessable when the head moved or there is nothing to merge.
	UpdateBranch(ctx context.Context, repo string, number int, expectedHead string) error
	// UpToDateRequired says whether a branch's protection requires a pull request's
	// branch to be up to date with it before a merge (strict status checks), as anyone
	// who can read the repository sees it.
	UpToDateRequired(ctx context.Context, repo, branch string) (bool, error)
	// BranchProtection reads a branch's protection; ErrNotFound when it has none,
	// ErrForbidden when the App may not read it.
	BranchProtection(ctx context.Context, repo, branch string) (Protection, error)
	// RepoToken mints an installation token limited to one repository and permissions.
	RepoToken(ctx context.Context, repo string, permissions map[string]string) (string, time.Time, error)
	// ReadToken mints an installation token of contents: read limited to repos, every one
	// of the installation's account; ErrUnprocessable when one is not in the
	// installation (GitHub's 422).
	ReadToken(ctx context.Context, repos []string) (string, time.Time, error)
}

// Connector gives the GitHub of an installation, or of the installation that holds a
// repository.
type Connector interface {
	Installation(ctx context.Context, installationID int64) (GitHub, error)
	ForRepository(ctx context.Context, repo string) (GitHub, error)
	// Repositories lists every repository of every installation, for the rebuild.
	Repositories(ctx context.Context) (map[int64][]Repo, error)
	// BotLogin is the App's own login ("slug[bot]").
	BotLogin(ctx context.Context) (string, error)
}
