package gitserver

import (
	"errors"
	"fmt"
	"net/http"
)

// Errors of the repository-management methods. They are wrapped with details, so test
// them with errors.Is. The emulator maps them to GitHub's statuses: not-found errors
// to 404, the others to 422.
var (
	// ErrInvalidName: an owner, repository, ref, branch or path is malformed.
	ErrInvalidName = errors.New("invalid name")
	// ErrRepositoryNotFound: no repository of that name.
	ErrRepositoryNotFound = errors.New("repository not found")
	// ErrRepositoryExists: CreateRepository was asked for a name already taken.
	ErrRepositoryExists = errors.New("repository already exists")
	// ErrRefNotFound: the ref does not exist.
	ErrRefNotFound = errors.New("reference does not exist")
	// ErrRefExists: a create found the ref already there (GitHub: "Reference already exists").
	ErrRefExists = errors.New("reference already exists")
	// ErrRefMismatch: a compare-and-swap found the ref at another commit than expected.
	ErrRefMismatch = errors.New("reference is not at the expected commit")
	// ErrRefConflict: the ref cannot exist beside another one (refs/heads/a and refs/heads/a/b).
	ErrRefConflict = errors.New("reference conflicts with an existing reference")
	// ErrNotFastForward: a non-forced move would lose commits.
	ErrNotFastForward = errors.New("update is not a fast forward")
	// ErrObjectNotFound: the object (or the commit a revision names) does not exist.
	ErrObjectNotFound = errors.New("object does not exist")
	// ErrFileNotFound: no file at that path in that revision.
	ErrFileNotFound = errors.New("file not found")
	// ErrNotAFile: the path names a directory or a submodule, not a file.
	ErrNotAFile = errors.New("path is not a file")
	// ErrNoMergeBase: the two commits share no history.
	ErrNoMergeBase = errors.New("no common ancestor")
)

// AuthError is what Options.Authorize returns to refuse a request. The git client sees
// Status: 401 makes it ask for credentials (the response carries
// WWW-Authenticate: Basic realm="GitHub"), 403 says it is forbidden, 404 hides that the
// repository exists, as GitHub does for repositories the caller may not see.
type AuthError struct {
	// Status is the HTTP status to answer with, a 4xx code.
	Status int
	// Message is the response body; the git client prints it for some statuses.
	Message string
}

// Error describes the refusal for logs.
func (e *AuthError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("access refused: %d %s", e.Status, http.StatusText(e.Status))
	}
	return fmt.Sprintf("access refused: %d %s", e.Status, e.Message)
}
