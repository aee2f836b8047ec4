package workitem

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/app/command"
	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/logkey"
)

// RebuildStats says what a rebuild found.
type RebuildStats struct {
	Repositories int
	Items        int
	Untrusted    int
}

// Rebuild fills the index from GitHub: every issue of every installed repository that
// carries a state label, with its status comment. A record that fails to parse or
// contradicts GitHub is put in the error state, and the bot says why.
func (s *Service) Rebuild(ctx context.Context) (RebuildStats, error) {
	var st RebuildStats
	all, err := s.opts.Connector.Repositories(ctx)
	if err != nil {
		return st, fmt.Errorf("failed to list the installed repositories: %w", err)
	}
	for inst, repos := range all {
		gh, err := s.opts.Connector.Installation(ctx, inst)
		if err != nil {
			return st, fmt.Errorf("failed to reach installation %d: %w", inst, err)
		}
		for _, repo := range repos {
			n, bad, err := s.RebuildRepository(ctx, gh, repo)
			if err != nil {
				return st, err
			}
			st.Repositories++
			st.Items += n
			st.Untrusted += bad
		}
	}
	return st, nil
}

// RebuildRepository indexes one repository's work items.
func (s *Service) RebuildRepository(ctx context.Context, gh GitHub, repo Repo) (items, untrusted int, err error) {
	seen := map[int]Issue{}
	for _, state := range ledger.States() {
		issues, err := gh.IssuesWithLabel(ctx, repo.FullName, state.Label())
		if err != nil {
			return 0, 0, fmt.Errorf("failed to list the %s issues of %s: %w", state.Label(), repo.FullName, err)
		}
		for _, is := range issues {
			seen[is.Number] = is
		}
	}
	for _, is := range seen {
		ok, err := s.rebuildItem(ctx, gh, repo, is)
		if err != nil {
			return items, untrusted, err
		}
		items++
		if !ok {
			untrusted++
		}
	}
	return items, untrusted, nil
}

// rebuildItem reads and checks one work item; ok is false when it was untrusted.
func (s *Service) rebuildItem(ctx context.Context, gh GitHub, repo Repo, is Issue) (bool, error) {
	id := ledger.ID(repo.FullName, is.Number)
	defer s.lock(id)()
	bot, err := s.botLogin(ctx)
	if err != nil {
		return false, err
	}
	comments, err := gh.Comments(ctx, repo.FullName, is.Number)
	if err != nil {
		return false, fmt.Errorf("failed to list the comments of %s: %w", id, err)
	}
	rec, commentID, cause := checkRecord(s.opts.Sealer, repo, is, comments, bot)
	if cause != nil {
		if rec != nil && rec.State == ledger.Error {
			// Already in the visible error state: keep it there, quietly.
			return false, s.idx.Put(rec, commentID)
		}
		return false, s.markUntrusted(ctx, gh, repo, is, commentID, cause, "")
	}
	if err := s.idx.Put(rec, commentID); err != nil {
		return false, err
	}
	// An edit made while serve was down (or whose delivery was lost) voids approvals now,
	// not only when a run asks for credentials.
	if !rec.State.Terminal() {
		it := &item{repo: repo, commentID: commentID, stored: rec, rec: rec.Clone()}
		if err := s.specChanged(ctx, gh, it, is, "", "title or body (edited while Bumper was not listening)", ""); err != nil {
			return false, err
		}
		rec = it.rec
	}
	if a := rec.CurrentAttempt(); a != nil && a.RunID != 0 {
		if err := s.idx.PutDispatch(ledger.Dispatch{Key: DispatchKey(rec.Issue, a.Revision, a.Number),
			ItemID: id, RunID: a.RunID}); err != nil {
			return false, err
		}
	}
	zerolog.Ctx(ctx).Debug().Str(logkey.WorkItem, id).Str(logkey.State, string(rec.State)).Msg("rebuilt work item")
	return true, nil
}

// checkRecord finds the status comment and checks the record against GitHub: exactly one
// state label matching the record, the bot as the comment's author, and approvals that
// point at comments their approvers wrote. commentID is the status comment's, when
// there is one: the error state is written there.
func checkRecord(sealer *ledger.Sealer, repo Repo, is Issue, comments []Comment, bot string) (rec *ledger.Record, commentID int64, err error) {
	var labels []string
	for _, l := range is.Labels {
		if strings.HasPrefix(l, ledger.LabelPrefix) {
			labels = append(labels, l)
		}
	}
	var status []Comment
	for _, c := range comments {
		if ledger.IsStatusComment(c.Body) {
			status = append(status, c)
		}
	}
	var mine []Comment
	for _, c := range status {
		if strings.EqualFold(c.Author, bot) {
			mine = append(mine, c)
		}
	}
	switch {
	case len(mine) == 0 && len(status) > 0:
		return nil, 0, fmt.Errorf("the status comment was written by @%s, not by Bumper", status[0].Author)
	case len(mine) == 0:
		return nil, 0, errors.New("the issue carries a state label but has no status comment")
	case len(mine) > 1:
		return nil, mine[0].ID, fmt.Errorf("the issue has %d status comments; there must be one", len(mine))
	}
	commentID = mine[0].ID
	rec, err = trustedRecord(sealer, ledger.ID(repo.FullName, is.Number), mine[0], comments)
	if err != nil {
		return rec, commentID, err
	}
	if len(labels) != 1 || !strings.EqualFold(labels[0], rec.State.Label()) {
		return rec, commentID, fmt.Errorf("the record says %s but the issue's state labels are %v", rec.State, labels)
	}
	return rec, commentID, nil
}

// trustedRecord reads the record out of the bot's status comment c and checks
// everything GitHub can confirm: the signature, the issue it names, the approvals
// against the issue's comments, and that the comment was not edited after the record was
// written. The record comes back with the error when it decoded, so the caller can tell
// an item already in the error state.
func trustedRecord(sealer *ledger.Sealer, id string, c Comment, comments []Comment) (*ledger.Record, error) {
	rec, err := sealer.Decode(c.Body)
	if err != nil {
		return nil, err
	}
	if rec.ID() != id {
		return nil, fmt.Errorf("the record names %s, not this issue", rec.ID())
	}
	if err := approvalsHold(rec, comments); err != nil {
		return rec, err
	}
	if err := notEditedSince(rec, c); err != nil {
		return rec, err
	}
	return rec, nil
}

// maxClockSkew bounds how much later than the record's own time GitHub may stamp the
// comment's last edit. GitHub App authentication already fails beyond a minute of skew.
const maxClockSkew = 5 * time.Minute

// notEditedSince refuses a status comment edited after Bumper wrote its record: an
// older, validly signed record written back (a replay, which could undo a /stop) shows
// as a comment edited long after the time the record carries.
func notEditedSince(rec *ledger.Record, c Comment) error {
	if !c.UpdatedAt.IsZero() && c.UpdatedAt.After(rec.UpdatedAt.Add(maxClockSkew)) {
		return fmt.Errorf("the status comment was edited at %s, after Bumper wrote its record (%s): an older record was written back",
			c.UpdatedAt.UTC().Format(time.RFC3339), rec.UpdatedAt.UTC().Format(time.RFC3339))
	}
	return nil
}

// approvalsHold checks that every approval that still holds points at a comment its
// approver wrote, which gives /approve. Every approval is one (comment_id 0 is refused
// when the record is decoded); a voided one may point at a comment since deleted.
func approvalsHold(rec *ledger.Record, comments []Comment) error {
	byID := make(map[int64]Comment, len(comments))
	for _, c := range comments {
		byID[c.ID] = c
	}
	for _, a := range rec.Approvals {
		if a.Voided != "" {
			continue
		}
		c, ok := byID[a.CommentID]
		if !ok || !strings.EqualFold(c.Author, a.By) {
			return fmt.Errorf("the approval by @%s points at comment %d, which @%s did not write", a.By, a.CommentID, a.By)
		}
		if cmd, ok := command.Parse(c.Body); !ok || cmd.Kind != command.Approve {
			return fmt.Errorf("the approval by @%s points at comment %d, which does not say /approve", a.By, a.CommentID)
		}
	}
	return nil
}

// ForgetRepository drops a repository's work items from the index (the App was
// uninstalled from it); GitHub keeps their records.
func (s *Service) ForgetRepository(repo string) int {
	recs := s.idx.ByRepository(repo)
	for _, r := range recs {
		s.idx.Delete(r.ID())
	}
	return len(recs)
}
