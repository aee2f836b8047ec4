package conversation

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/bumperdev/bumper/ghemu/apierr"
	"github.com/bumperdev/bumper/ghemu/gitserver"
	"github.com/bumperdev/bumper/ghemu/state"
)

// MergeRequest is what PUT …/pulls/{n}/merge may say.
type MergeRequest struct {
	Title, Message string
	// SHA, when set, is the head the merge must be of.
	SHA string
	// Method is "merge" (the only one emulated) or "".
	Method string
}

// Merge merges a pull request with a real merge commit on its base branch, after
// checking branch protection (required checks on the head commit, approving reviews,
// an up-to-date head when the protection asks for one). An admin's own credential
// passes protection unless it enforces admins, as on GitHub. The merge commit is the
// merger's, committed by GitHub's web flow. Then: pull_request closed, the push of the
// base branch (which moves the other pull requests on it), and the issues the merge
// closes.
func (s *Service) Merge(ctx context.Context, w *state.World, rp *state.Repo, is *state.Issue, p *state.Pull, who Actor, req MergeRequest) (string, error) {
	if p.Merged || is.State != "open" {
		return "", apierr.New(http.StatusMethodNotAllowed, "Pull Request is not mergeable")
	}
	if req.Method != "" && req.Method != "merge" {
		return "", apierr.Validation("PullRequest", "merge_method", "invalid", "only the merge method is emulated")
	}
	if req.SHA != "" && req.SHA != p.HeadSHA {
		return "", apierr.New(http.StatusConflict, "Head branch was modified. Review and try the merge again.")
	}
	prot := rp.Protection(p.Base)
	adminOverride := who.admin() && (prot == nil || !prot.EnforceAdmins)
	if !adminOverride {
		if why := rp.ProtectionUnmet(p, who.App); why != "" {
			return "", apierr.New(http.StatusMethodNotAllowed, why)
		}
		if prot != nil && prot.RequiredSignatures {
			if err := s.checkSigned(ctx, rp, p); err != nil {
				return "", err
			}
		}
		if prot.RequiresUpToDate() {
			mc, err := s.check(ctx, rp, p)
			if err != nil {
				return "", err
			}
			if mc.Behind {
				return "", apierr.New(http.StatusConflict, "Head branch is out of date. Review and try the merge again.")
			}
		}
	}
	title := req.Title
	if title == "" {
		title = "Merge pull request #" + strconv.Itoa(p.Number) + " from " + rp.Owner + "/" + p.Head
	}
	msg := title
	if req.Message != "" {
		msg += "\n\n" + req.Message
	}
	before := p.BaseSHA
	m, err := s.git.MergeInto(ctx, rp.Owner, rp.Name, gitserver.MergeSpec{Branch: p.Base, Head: p.HeadSHA,
		Message: msg, Author: Signature(w, who.Login), Committer: webFlow(w), Sign: gitserver.WebFlowSignature})
	if err != nil {
		return "", apierr.New(http.StatusMethodNotAllowed, "Pull Request is not mergeable: "+err.Error())
	}
	sha := m.SHA
	signedByWebFlow(w, rp, m)
	now := w.Timestamp()
	p.Merged, p.MergedAt, p.MergedBy, p.MergeCommitSHA = true, &now, who.Login, sha
	is.State, is.ClosedAt, is.UpdatedAt = "closed", &now, now
	w.MarkChanged()
	s.emit(w, "pull_request", "closed", rp, who.Login, obj{"number": p.Number, "pull_request": s.renderer(w).Pull(rp, is, p)})
	if cur, err := s.git.Commit(ctx, rp.Owner, rp.Name, sha); err == nil && len(cur.Parents) > 0 {
		before = cur.Parents[0]
	}
	s.RefMoved(ctx, w, rp, "refs/heads/"+p.Base, before, sha, who.Login)
	if err := s.closeReferencedIssues(ctx, w, rp, is, p, who.Login, sha); err != nil {
		// The merge stands, as GitHub's would; only the closing of issues is lost.
		s.log.Error().Err(err).Int("pull", p.Number).Msg("failed to read the merge's closing keywords")
	}
	return sha, nil
}

// GitHub's refusals of a branch update (PUT …/pulls/{n}/update-branch), as it words
// them.
const (
	msgHeadMoved   = "expected head sha didn’t match current head ref."
	msgNotBehind   = "There are no new commits on the base branch."
	msgUpdateClash = "merge conflict between base and head"
)

// UpdateBranch merges the base branch's head into the pull request's head branch, as
// "Update branch" does: a merge commit (never a rebase) "Merge branch 'BASE' into
// HEAD", the caller's, committed by GitHub's web flow, made only on the head expected
// ("" the current one). Then the push of the head branch and pull_request synchronize.
// GitHub makes the commit after answering 202; the emulator makes it before, so the
// answer means it is there.
func (s *Service) UpdateBranch(ctx context.Context, w *state.World, rp *state.Repo, is *state.Issue, p *state.Pull, who Actor, expected string) (string, error) {
	if p.Merged || is.State != "open" {
		return "", apierr.Unprocessable("Pull request is closed.")
	}
	if expected != "" && expected != p.HeadSHA {
		return "", apierr.Unprocessable(msgHeadMoved)
	}
	if prot := rp.Protection(p.Head); prot != nil && (!who.admin() || prot.EnforceAdmins) {
		return "", apierr.Unprocessable("Protected branch update failed for refs/heads/" + p.Head + ".")
	}
	mc, err := s.check(ctx, rp, p)
	if err != nil {
		return "", err
	}
	if !mc.Behind {
		return "", apierr.Unprocessable(msgNotBehind)
	}
	if mc.Conflict {
		return "", apierr.Unprocessable(msgUpdateClash)
	}
	before := p.HeadSHA
	m, err := s.git.MergeInto(ctx, rp.Owner, rp.Name, gitserver.MergeSpec{Branch: p.Head, Expect: before, Head: p.BaseSHA,
		Message: "Merge branch '" + p.Base + "' into " + p.Head, Author: Signature(w, who.Login), Committer: webFlow(w), Sign: gitserver.WebFlowSignature})
	switch {
	case errors.Is(err, gitserver.ErrConflict):
		return "", apierr.Unprocessable(msgUpdateClash)
	case errors.Is(err, gitserver.ErrRefMismatch):
		return "", apierr.Unprocessable(msgHeadMoved)
	case err != nil:
		return "", err
	}
	signedByWebFlow(w, rp, m)
	s.RefMoved(ctx, w, rp, "refs/heads/"+p.Head, before, m.SHA, who.Login)
	return m.SHA, nil
}

// signedByWebFlow records a merge GitHub's web flow made as verified: GitHub signs the
// merges it makes, so a rule that requires signed commits still lets them through.
func signedByWebFlow(w *state.World, rp *state.Repo, m gitserver.Merged) {
	rp.SetVerification(m.SHA, state.Verification{Verified: true, Reason: "valid", Signature: m.Signature, Payload: m.Payload, VerifiedAt: w.Timestamp()})
	w.MarkChanged()
}

// check is the pull request's mergeability for its current commits, computed now if
// it was not yet.
func (s *Service) check(ctx context.Context, rp *state.Repo, p *state.Pull) (*state.MergeCheck, error) {
	if mc := p.Current(); mc != nil {
		return mc, nil
	}
	m, err := s.git.CheckMerge(ctx, rp.Owner, rp.Name, p.BaseSHA, p.HeadSHA)
	if err != nil {
		return nil, err
	}
	p.Check = &state.MergeCheck{Base: p.BaseSHA, Head: p.HeadSHA, Conflict: m.Conflict, Behind: m.Behind}
	return p.Check, nil
}

// Refresh computes an open pull request's mergeability when it was not computed for
// its current commits: a real merge of the head into the base, as GitHub's background
// job makes one. A failure leaves it unknown (logged), as GitHub leaves mergeable null.
func (s *Service) Refresh(ctx context.Context, w *state.World, rp *state.Repo, p *state.Pull) {
	is := rp.Issue(p.Number)
	if is == nil || is.State != "open" || p.Merged || p.Current() != nil {
		return
	}
	if _, err := s.check(ctx, rp, p); err != nil {
		s.log.Error().Err(err).Int("pull", p.Number).Str("repo", rp.FullName()).Msg("failed to compute a pull request's mergeability")
		return
	}
	w.MarkChanged()
}

// maxSignedCheck bounds the commits of a pull request the signature rule reads.
const maxSignedCheck = 10000

// checkSigned refuses the merge of a pull request into a branch that requires signed
// commits when any of its commits (from the base to the head) is not verified, as
// GitHub refuses it (405). GitHub's web page says "The base branch requires all
// commits to be signed."; the REST message here is the rule's own wording,
// "Commits must have verified signatures.", which GitHub is reported to answer.
func (s *Service) checkSigned(ctx context.Context, rp *state.Repo, p *state.Pull) error {
	shas, err := s.git.CommitsBetween(ctx, rp.Owner, rp.Name, p.BaseSHA, p.HeadSHA, maxSignedCheck+1)
	if err != nil {
		return err
	}
	if len(shas) > maxSignedCheck {
		return apierr.New(http.StatusMethodNotAllowed, "Commits must have verified signatures.")
	}
	for _, sha := range shas {
		if !rp.Verification(sha).Verified {
			return apierr.New(http.StatusMethodNotAllowed, "Commits must have verified signatures.")
		}
	}
	return nil
}
