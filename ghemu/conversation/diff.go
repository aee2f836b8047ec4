package conversation

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bumperdev/bumper/ghemu/apierr"
	"github.com/bumperdev/bumper/ghemu/gitserver"
	"github.com/bumperdev/bumper/ghemu/state"
)

// A pull request's diff is GitHub's three-dot comparison, base...head: what the head
// branch changed since it left the base. The files route shows it, and review comments
// must land on one of its lines. It is computed from the git repository on demand, so it
// follows pushes to either branch without bookkeeping.

// MaxPullFiles is how many files GitHub lists for one pull request.
const MaxPullFiles = 3000

// PullDiff returns the changed files of pull request n between base and head. The base
// is the commit the pull request was last compared against (it follows the base branch
// while open and stays where it was at merge), so a merged pull request still lists its
// files.
func (s *Service) PullDiff(ctx context.Context, rp *state.Repo, n int, base, head string) ([]gitserver.FileDiff, error) {
	files, err := s.git.ThreeDotDiff(ctx, rp.Owner, rp.Name, base, head)
	if errors.Is(err, gitserver.ErrNoMergeBase) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("failed to diff pull request #%d: %w", n, err)
	}
	if len(files) > MaxPullFiles {
		files = files[:MaxPullFiles]
	}
	return files, nil
}

// CommentSpec is one inline comment asked for: a line (with side, and start_line and
// start_side for a range) or the older diff position.
type CommentSpec struct {
	Path      string `json:"path"`
	Body      string `json:"body"`
	Line      *int   `json:"line"`
	Side      string `json:"side"`
	StartLine *int   `json:"start_line"`
	StartSide string `json:"start_side"`
	Position  *int   `json:"position"`
}

// GitHub's refusals of a review comment that does not land in the diff, as the review
// route words them. The first two are what api.github.com answers today (2026, as
// quoted in warpdotdev/oz-for-oss#310 and max-sixty/tend#252); the range and position
// ones are its older "Pull request review thread …" wording (ubuntu/WSL#244,
// parkerbxyz/suggest-changes#28, github/github-mcp-server#133), the only one on record
// for those cases.
const (
	msgPathUnresolved  = "Path could not be resolved"
	msgLineUnresolved  = "Line could not be resolved"
	msgStartPrecedes   = "Pull request review thread start line must precede the end line."
	msgStartSameHunk   = "Pull request review thread start line must be part of the same hunk as the line."
	msgPositionInvalid = "Pull request review thread position is invalid"
	msgSideInvalid     = "Pull request review thread side is invalid"
	sideRight          = "RIGHT"
	sideLeft           = "LEFT"
)

// anchorError is a comment that does not land in the diff. GitHub words it two ways:
// the review route as a plain string ("Line could not be resolved"), the single
// comment route as a validation error on the thread's field
// ({"field": "pull_request_review_thread.line", "message": "could not be resolved"},
// as api.github.com answers it today).
type anchorError struct {
	review string // the review route's words
	field  string // the thread's field the comment route names
	detail string // the comment route's words
}

func (e *anchorError) Error() string { return e.review }

// forReview is the review route's 422.
func (e *anchorError) forReview() error { return apierr.UnprocessableList(e.review) }

// forComment is the single comment route's 422.
func (e *anchorError) forComment() error {
	return apierr.Validation("PullRequestReviewComment", "pull_request_review_thread."+e.field, "custom", e.detail)
}

var (
	errPath     = &anchorError{msgPathUnresolved, "path", "could not be resolved"}
	errLine     = &anchorError{msgLineUnresolved, "line", "could not be resolved"}
	errPrecedes = &anchorError{msgStartPrecedes, "start_line", "must precede the end line"}
	errSameHunk = &anchorError{msgStartSameHunk, "start_line", "must be part of the same hunk as the line"}
	errPosition = &anchorError{msgPositionInvalid, "position", "is invalid"}
	errSide     = &anchorError{msgSideInvalid, "side", "is invalid"}
)

// resolveComment anchors one requested comment on a line of the diff, or says why it
// cannot be.
func resolveComment(files []gitserver.FileDiff, cr CommentSpec) (*state.ReviewComment, *anchorError) {
	var lines []gitserver.PatchLine
	found := false
	for _, f := range files {
		if f.Path == cr.Path {
			lines, found = gitserver.ParsePatch(f.Patch), true
			break
		}
	}
	if !found || cr.Path == "" {
		return nil, errPath
	}
	rc := &state.ReviewComment{Path: cr.Path, Body: cr.Body}
	var idx int
	switch {
	case cr.Line == nil && cr.Position != nil:
		// The position form names a line of the diff itself; hunk headers and git's
		// "\ No newline" markers are not lines one can comment on.
		idx = *cr.Position
		if idx < 1 || idx >= len(lines) || lines[idx].Kind == '@' || lines[idx].Kind == '\\' {
			return nil, errPosition
		}
		rc.Side, rc.Line = sideRight, lines[idx].New
		if lines[idx].Kind == '-' {
			rc.Side, rc.Line = sideLeft, lines[idx].Old
		}
	case cr.Line == nil:
		return nil, errLine
	default:
		rc.Side = cr.Side
		if rc.Side == "" {
			rc.Side = sideRight
		}
		if rc.Side != sideRight && rc.Side != sideLeft {
			return nil, errSide
		}
		rc.Line = *cr.Line
		if idx = findLine(lines, rc.Side, rc.Line); idx < 0 {
			return nil, errLine
		}
	}
	if cr.StartLine != nil {
		rc.StartLine, rc.StartSide = *cr.StartLine, cr.StartSide
		if rc.StartSide == "" {
			rc.StartSide = rc.Side
		}
		if rc.StartSide != sideRight && rc.StartSide != sideLeft {
			return nil, errSide
		}
		start := findLine(lines, rc.StartSide, rc.StartLine)
		switch {
		case start < 0:
			return nil, errLine
		case start >= idx:
			return nil, errPrecedes
		case lines[start].Hunk != lines[idx].Hunk:
			return nil, errSameHunk
		}
	}
	rc.Position, rc.DiffHunk = idx, diffHunk(lines, idx)
	return rc, nil
}

// findLine returns the index of the patch line a comment on (side, line) lands on:
// on RIGHT an added or context line of the new file, on LEFT a removed or context line
// of the old one. -1 when no hunk holds it.
func findLine(lines []gitserver.PatchLine, side string, line int) int {
	for i, pl := range lines {
		switch {
		case side == sideRight && (pl.Kind == '+' || pl.Kind == ' ') && pl.New == line:
			return i
		case side == sideLeft && (pl.Kind == '-' || pl.Kind == ' ') && pl.Old == line:
			return i
		}
	}
	return -1
}

// diffHunk is what GitHub stores with a review comment: the hunk's header and its lines
// down to the commented one.
func diffHunk(lines []gitserver.PatchLine, idx int) string {
	start := idx
	for start > 0 && lines[start].Kind != '@' {
		start--
	}
	texts := make([]string, 0, idx-start+1)
	for _, pl := range lines[start : idx+1] {
		texts = append(texts, pl.Text)
	}
	return strings.Join(texts, "\n")
}
