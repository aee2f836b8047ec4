package workitem

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/logkey"
	"github.com/bumperdev/bumper/app/workitem/recordtrust"
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
		if errors.Is(err, errGone) {
			continue
		}
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

// rebuildItem reads and checks one work item; ok is false when it was untrusted. Another
// replica may move the item between the listing and this read (a /retry: a stopped label,
// a record awaiting approval), so a mismatch is judged on the issue read again (after a
// moment when the record is seconds old: that replica may be moving the label still),
// and a write another replica beat (ErrConflict) is done again.
func (s *Service) rebuildItem(ctx context.Context, gh GitHub, repo Repo, is Issue) (bool, error) {
	n, id, conflicts := is.Number, ledger.ID(repo.FullName, is.Number), 0
	for try := 1; ; try++ {
		ok, again, err := s.rebuildOnce(ctx, gh, repo, is, try)
		if errors.Is(err, ErrConflict) && conflicts < conflictTries {
			conflicts++
		} else if !again {
			return ok, err
		}
		if err := s.opts.Wait(ctx, time.Duration(min(try-1, 2))*time.Second); err != nil {
			return false, err
		}
		if is, err = gh.Issue(ctx, repo.FullName, n); errors.Is(err, ErrNotFound) || (err == nil && is.Number != n) {
			s.idx.Delete(id) // deleted or transferred since the listing
			return false, errGone
		} else if err != nil {
			return false, fmt.Errorf("failed to read %s again: %w", id, err)
		}
	}
}

// rebuildTries bounds rebuildItem's readings of one item; writeSettles is how long
// another replica's write may still be moving the label after it wrote the record.
const (
	rebuildTries = 3
	writeSettles = 10 * time.Second
)

// errGone is an item whose issue went away while the rebuild read it.
var errGone = errors.New("the issue is gone")

// rebuildOnce is one try of rebuildItem's; again: what it read did not match, and
// nothing was done.
func (s *Service) rebuildOnce(ctx context.Context, gh GitHub, repo Repo, is Issue, try int) (ok, again bool, err error) {
	id := ledger.ID(repo.FullName, is.Number)
	defer s.lock(id)()
	bot, err := s.botLogin(ctx)
	if err != nil {
		return false, false, err
	}
	comments, err := gh.Comments(ctx, repo.FullName, is.Number)
	if err != nil {
		return false, false, fmt.Errorf("failed to list the comments of %s: %w", id, err)
	}
	rec, commentID, cause := recordtrust.Find(s.opts.Sealer, id, is.Labels, comments, bot)
	mismatch := cause != nil || (!rec.State.Terminal() && ledger.SpecRevision(is.Title, is.Body) != rec.SpecRevision)
	justWritten := rec != nil && s.now().Sub(rec.UpdatedAt) < writeSettles
	if mismatch && try < rebuildTries && (try == 1 || justWritten) {
		return false, true, nil
	}
	var labels *recordtrust.LabelError
	if errors.As(cause, &labels) {
		if from, ok := labels.Interrupted(); ok {
			if err := s.repairLabel(ctx, gh, repo.FullName, rec, from); err != nil {
				return false, false, err
			}
			cause = nil
		}
	}
	if cause != nil {
		if rec != nil && rec.State == ledger.Error {
			// Already in the visible error state: keep it there, quietly.
			return false, false, s.idx.Put(rec, commentID)
		}
		return false, false, s.markUntrusted(ctx, gh, repo, is, commentID, cause, "")
	}
	if err := s.idx.Put(rec, commentID); err != nil {
		return false, false, err
	}
	// An edit made while serve was down (or whose delivery was lost) voids approvals now,
	// not only when a run asks for credentials.
	if !rec.State.Terminal() {
		it := &item{repo: repo, commentID: commentID, stored: rec, rec: rec.Clone()}
		if err := s.specChanged(ctx, gh, it, is, "", "title or body (edited while Bumper was not listening)", ""); err != nil {
			return false, false, err
		}
		rec = it.rec
	}
	if a := rec.CurrentAttempt(); a != nil && a.RunID != 0 {
		if err := s.idx.PutDispatch(ledger.Dispatch{Key: DispatchKey(rec.Issue, a.Revision, a.Number),
			ItemID: id, RunID: a.RunID}); err != nil {
			return false, false, err
		}
	}
	zerolog.Ctx(ctx).Debug().Str(logkey.WorkItem, id).Str(logkey.State, string(rec.State)).Msg("rebuilt work item")
	return true, false, nil
}

// repairLabel moves the issue's state label from the state a write that stopped halfway
// left it at to the record's.
func (s *Service) repairLabel(ctx context.Context, gh GitHub, repo string, rec *ledger.Record, from ledger.State) error {
	if err := gh.AddLabel(ctx, repo, rec.Issue, rec.State.Label()); err != nil {
		return fmt.Errorf("failed to label %s %s: %w", rec.ID(), rec.State.Label(), err)
	}
	if err := gh.RemoveLabel(ctx, repo, rec.Issue, from.Label()); err != nil {
		return fmt.Errorf("failed to remove label %s from %s: %w", from.Label(), rec.ID(), err)
	}
	zerolog.Ctx(ctx).Warn().Str(logkey.WorkItem, rec.ID()).Str(logkey.From, string(from)).Str(logkey.State, string(rec.State)).
		Msg("put right the state label a write that stopped halfway left")
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
