package conversation

import (
	"context"
	"strings"

	"github.com/bumperdev/bumper/ghemu/state"
)

// maxPushCommits is how many commits a push webhook lists, the newest.
const maxPushCommits = 20

// RefMoved is what follows a ref's move, however it moved (a git push, the refs API, a
// merge, a branch update): the push webhook for a branch or a tag (before "" for a ref
// created, after "" for one deleted), then, for a branch, the open pull requests whose
// head it is follow it with pull_request synchronize, those whose base it is compare
// against its new head, and the mergeability of both is computed again. login is who
// moved it, the webhooks' sender and the push's pusher. Other refs (refs/bumper/…,
// refs/pull/…) move silently, as on GitHub.
func (s *Service) RefMoved(ctx context.Context, w *state.World, rp *state.Repo, ref, before, after, login string) {
	if !strings.HasPrefix(ref, "refs/heads/") && !strings.HasPrefix(ref, "refs/tags/") {
		return
	}
	if before == after {
		return
	}
	s.announcePush(ctx, w, rp, ref, before, after, login)
	branch, ok := strings.CutPrefix(ref, "refs/heads/")
	if !ok {
		return
	}
	rp.PushedAt = w.Timestamp()
	w.MarkChanged()
	rn := s.renderer(w)
	for _, p := range rp.Pulls() {
		is := rp.Issue(p.Number)
		if is.State != "open" || after == "" {
			continue
		}
		moved := false
		if p.Head == branch && p.HeadSHA != after {
			old := p.HeadSHA
			p.HeadSHA, is.UpdatedAt, moved = after, w.Timestamp(), true
			s.emit(w, "pull_request", "synchronize", rp, login, obj{"number": p.Number, "before": old, "after": after,
				"pull_request": rn.PullComputing(rp, is, p)})
		}
		if p.Base == branch && p.BaseSHA != after {
			p.BaseSHA, moved = after, true
		}
		if moved {
			s.Refresh(ctx, w, rp, p)
		}
	}
}

// announcePush sends the push webhook of a ref's move, with the commits it brought.
func (s *Service) announcePush(ctx context.Context, w *state.World, rp *state.Repo, ref, before, after, login string) {
	forced := false
	if before != "" && after != "" {
		if ff, err := s.git.IsAncestor(ctx, rp.Owner, rp.Name, before, after); err == nil {
			forced = !ff
		}
	}
	commits, head, err := s.git.PushedCommits(ctx, rp.Owner, rp.Name, ref, before, after, maxPushCommits)
	if err != nil {
		// The ref moved all the same; the webhook says so without its commits.
		s.log.Error().Err(err).Str("ref", ref).Msg("failed to read the commits of a push")
		commits, head = nil, nil
	}
	body := s.renderer(w).Push(rp, ref, before, after, commits, head, Signature(w, login), forced)
	s.emit(w, "push", "", rp, login, body)
}

// Opened announces a new pull request (pull_request opened) and computes its
// mergeability, which the webhook, sent before GitHub's background job finishes,
// does not carry.
func (s *Service) Opened(ctx context.Context, w *state.World, rp *state.Repo, is *state.Issue, p *state.Pull, login string) {
	s.emit(w, "pull_request", "opened", rp, login, obj{"number": p.Number, "pull_request": s.renderer(w).PullComputing(rp, is, p)})
	s.Refresh(ctx, w, rp, p)
}
