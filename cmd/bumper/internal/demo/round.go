package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	gogithub "github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/internal/mdcode"
)

// The conversation on the pull request (issue #24): after the first review, the
// maintainer reviews the pull request as they would a colleague's, asking for a change
// in an inline comment; the App starts a revise round from the reviewed head; the agent
// answers with a commit on the same branch and a reply in the comment's thread; the
// round is verified, evidenced and reviewed again.
const (
	// roundPath and roundLine are where the maintainer's comment goes: the line of the
	// sample's fix, on the pull request's side of the diff.
	roundPath = "widgets.go"
	roundLine = 7
	// roundAsk is the change the maintainer asks for, which the scripted agent and the
	// scripted model make (rangeSed).
	roundAsk = "Could this loop be `for _, n := range boxes`? With no index there is nothing to start at the wrong box, which is how this bug came about."
	// roundReviewBody is the review's own text: GitHub wants one with a request for changes.
	roundReviewBody = "One change before this goes in: see the inline comment."
	// branchPoll is how often the demo looks at the branch for the round's commit: the
	// resolution of the review-to-commit figure.
	branchPoll = 100 * time.Millisecond
)

// roundReply is how the App's reply names the round it starts (app/workitem).
var roundReply = regexp.MustCompile(`^\*\*Revise round ([0-9]+) of [0-9]+\*\*`)

// conversation is what the round did, for its steps and the summary.
type conversation struct {
	// reviewID and commentID are the maintainer's review and its inline comment, which
	// is the thread the reply answers.
	reviewID, commentID int64
	// reviewedHead is the head the maintainer reviewed, newHead the round's.
	reviewedHead, newHead string
	// reviewedAt is when the review was submitted; dispatchedAt when the round's run
	// was there; committedAt when the round's commit was on the branch.
	reviewedAt, dispatchedAt, committedAt time.Time
	// round is the revise round's number on the pull request, as the App and the
	// evidence say it.
	round     int
	run       *ghemu.RunInfo
	reviewRun *ghemu.RunInfo
	// branchMoved reports the branch's new head and when the demo saw it.
	branchMoved chan branchMove
}

type branchMove struct {
	sha string
	at  time.Time
	err error
}

// conversationSkipped says why the demo has no conversation round, or "" when it has
// one: the maintainer's comment is written for the sample's code, and a program of the
// user's own may not answer review rounds.
func (d *demo) conversationSkipped() string {
	switch {
	case d.cfg.RepoDir != "":
		return "the maintainer's inline comment is written for the sample's code; on your repository, run with --keep and review the pull request in the browser"
	case d.cfg.AgentCmd != "":
		return "--agent-cmd's program may not answer review rounds; run with --keep and review the pull request in the browser to try it"
	}
	return ""
}

// maintainerReviews submits the maintainer's review: a request for changes with one
// inline comment on the fix's line, on the head Bumper pushed, through the REST API as
// the maintainer; and waits for the App to start the round.
func (d *demo) maintainerReviews(ctx context.Context, s *step) (string, error) {
	if err := d.refreshPull(ctx); err != nil {
		return "", err
	}
	cv := &conversation{reviewedHead: d.pull.GetHead().GetSHA()}
	d.conv = cv
	_, before, err := d.botComments(ctx, d.pull.GetNumber())
	if err != nil {
		return "", err
	}
	cv.branchMoved = d.watchBranch(ctx, d.pull.GetHead().GetRef(), cv.reviewedHead)
	c := d.client(ghemu.DefaultMaintainer)
	rv, _, err := c.PullRequests.CreateReview(ctx, d.owner, d.repo, d.pull.GetNumber(), &gogithub.PullRequestReviewRequest{
		CommitID: gogithub.String(cv.reviewedHead),
		Body:     gogithub.String(roundReviewBody),
		Event:    gogithub.String("REQUEST_CHANGES"),
		Comments: []*gogithub.DraftReviewComment{{
			Path: gogithub.String(roundPath), Line: gogithub.Int(roundLine), Side: gogithub.String("RIGHT"), Body: gogithub.String(roundAsk),
		}},
	})
	if err != nil {
		return "", fmt.Errorf("failed to review the pull request as the maintainer: %w", err)
	}
	cv.reviewedAt = time.Now()
	cv.reviewID = rv.GetID()
	comments, _, err := c.PullRequests.ListReviewComments(ctx, d.owner, d.repo, d.pull.GetNumber(), cv.reviewID, nil)
	if err != nil {
		return "", fmt.Errorf("failed to read the review's inline comment: %w", err)
	}
	if len(comments) != 1 {
		return "", fmt.Errorf("the maintainer's review has %d inline comments, want 1", len(comments))
	}
	cv.commentID = comments[0].GetID()
	run, err := d.waitDispatch(ctx, s, wire.StageRevise, "the revise round", nil)
	if err != nil {
		return "", err
	}
	cv.run, cv.dispatchedAt = run, time.Now()
	if err := d.settle(ctx); err != nil {
		return "", err
	}
	_, after, err := d.botComments(ctx, d.pull.GetNumber())
	if err != nil {
		return "", err
	}
	var reply string
	for _, c := range after[len(before):] {
		if m := roundReply.FindStringSubmatch(c); m != nil {
			reply = c
			cv.round, _ = strconv.Atoi(m[1])
		}
	}
	if reply == "" {
		return "", fmt.Errorf("workflow run %d is the round, but the App's reply on the pull request does not say \"Revise round N of M\"", run.ID)
	}
	d.pending = []string{
		fmt.Sprintf("the maintainer's review (CHANGES_REQUESTED) on %.12s, inline on %s line %d:", cv.reviewedHead, roundPath, roundLine),
		"  " + roundAsk,
		"Bumper's reply on the pull request:",
	}
	d.pending = append(d.pending, indent(excerpt(reply, 4))...)
	return fmt.Sprintf("review %d; revise round %d dispatched %s after it (workflow run %d, stage %s)",
		cv.reviewID, cv.round, cv.dispatchedAt.Sub(cv.reviewedAt).Round(100*time.Millisecond), run.ID, run.Inputs["stage"]), nil
}

// reviseRound waits for the round's run and checks what it left: a new commit on the
// same branch whose parent is the reviewed head, the agent's reply in the comment's
// thread, posted by the App as text, and the round's evidence naming the comment.
func (d *demo) reviseRound(ctx context.Context, s *step) (string, error) {
	cv := d.conv
	start := time.Now()
	if err := d.waitRun(ctx, s, cv.run); err != nil {
		return "", err
	}
	took := time.Since(start)
	if err := d.refreshPull(ctx); err != nil {
		return "", err
	}
	cv.newHead = d.pull.GetHead().GetSHA()
	if cv.newHead == cv.reviewedHead {
		return "", fmt.Errorf("workflow run %d succeeded but the pull request's head is still %.12s: the round made no commit: %s", cv.run.ID, cv.reviewedHead, d.statusSummary(ctx))
	}
	select {
	case m := <-cv.branchMoved:
		if m.err != nil {
			return "", m.err
		}
		if m.sha != cv.newHead {
			return "", fmt.Errorf("the branch moved to %.12s, but the pull request's head is %.12s", m.sha, cv.newHead)
		}
		cv.committedAt = m.at
	case <-ctx.Done():
		return "", ctx.Err()
	}
	c := d.client(ghemu.DefaultMaintainer)
	commit, _, err := c.Repositories.GetCommit(ctx, d.owner, d.repo, cv.newHead, nil)
	if err != nil {
		return "", fmt.Errorf("failed to read the round's commit: %w", err)
	}
	if len(commit.Parents) != 1 || commit.Parents[0].GetSHA() != cv.reviewedHead {
		var ps []string
		for _, p := range commit.Parents {
			ps = append(ps, p.GetSHA())
		}
		return "", fmt.Errorf("the round's commit %.12s has parents %v, want the reviewed head %s alone: not a fast-forward from it", cv.newHead, ps, cv.reviewedHead)
	}
	reply, err := d.threadReply(ctx, cv)
	if err != nil {
		return "", err
	}
	ev, err := d.roundEvidence(cv)
	if err != nil {
		return "", err
	}
	d.pending = []string{
		fmt.Sprintf("%s: %.12s → %.12s, %q (its parent is the reviewed head)", d.pull.GetHead().GetRef(), cv.reviewedHead, cv.newHead, firstLine(commit.GetCommit().GetMessage())),
		"the reply in the maintainer's thread, by " + botLogin + ":",
	}
	d.pending = append(d.pending, indent(excerpt(reply.GetBody(), 3))...)
	d.pending = append(d.pending, fmt.Sprintf("the round's evidence: round %d, answered comment %d by @%s, replies %s", ev.Number, cv.commentID, ghemu.DefaultMaintainer, ev.Replies.Status))
	return fmt.Sprintf("workflow run %d succeeded in %s; the commit was on the branch %s after the review",
		cv.run.ID, took.Round(time.Second), cv.committedAt.Sub(cv.reviewedAt).Round(100*time.Millisecond)), nil
}

// reviewAgain waits for the review run on the round's head.
func (d *demo) reviewAgain(ctx context.Context, s *step) (string, error) {
	seen := map[int64]bool{}
	if d.reviewRun != nil {
		seen[d.reviewRun.ID] = true
	}
	run, err := d.waitDispatch(ctx, s, wire.StageReview, "the review run of the round's head", seen)
	if err != nil {
		return "", err
	}
	d.conv.reviewRun = run
	return d.awaitVerdict(ctx, s, run)
}

// threadReply is the App's reply in the maintainer's thread: posted by the App, as
// text (publish.ReplyBody: "Changed in `<head>`:" or "Not changed:", then the agent's
// words in a code span or a fenced block, never live Markdown).
func (d *demo) threadReply(ctx context.Context, cv *conversation) (*gogithub.PullRequestComment, error) {
	cs, _, err := d.client(ghemu.DefaultMaintainer).PullRequests.ListComments(ctx, d.owner, d.repo, d.pull.GetNumber(),
		&gogithub.PullRequestListCommentsOptions{ListOptions: gogithub.ListOptions{PerPage: 100}})
	if err != nil {
		return nil, fmt.Errorf("failed to read the pull request's review comments: %w", err)
	}
	for _, c := range cs {
		if c.GetInReplyTo() != cv.commentID {
			continue
		}
		if c.GetUser().GetLogin() != botLogin {
			return nil, fmt.Errorf("a reply in the maintainer's thread is by %s, not the App (%s)", c.GetUser().GetLogin(), botLogin)
		}
		if err := replyAsText(c.GetBody(), cv.newHead); err != nil {
			return nil, err
		}
		return c, nil
	}
	return nil, fmt.Errorf("no reply in the maintainer's thread (comment %d): the agent's /out/replies.json is in the round's files (runs/revise/)", cv.commentID)
}

// replyAsText checks a thread reply's form: its lead, then the agent's words shown as
// text, all of them: one code span, or one fenced block that nothing in it closes.
func replyAsText(body, head string) error {
	rest, ok := strings.CutPrefix(body, "Changed in `"+head+"`:")
	if !ok {
		if rest, ok = strings.CutPrefix(body, "Not changed:"); !ok {
			return fmt.Errorf("the reply does not start with \"Changed in `%.12s…`:\" or \"Not changed:\": %q", head, excerpt(body, 1))
		}
	}
	rest = strings.TrimRight(rest, "\n")
	// The runner's note on hidden characters may follow the text.
	rest = strings.TrimSuffix(rest, "\n\n(Hidden characters are shown as `[U+XXXX]`.)")
	if span, ok := strings.CutPrefix(rest, " "); ok && isCodeSpan(span) {
		return nil
	}
	if block, ok := strings.CutPrefix(rest, "\n\n"); ok && isFencedBlock(block) {
		return nil
	}
	return fmt.Errorf("the reply's text is not in a code span or a fenced block, so it would show as Markdown: %q", body)
}

// isCodeSpan says whether s is one code span: a run of backticks, text with no run as
// long, the same run.
func isCodeSpan(s string) bool {
	n := len(s) - len(strings.TrimLeft(s, "`"))
	d := strings.Repeat("`", n)
	if n == 0 || len(s) <= 2*n || !strings.HasSuffix(s, d) {
		return false
	}
	inner := s[n : len(s)-n]
	return mdcode.LongestRun(inner, '`') < n && !strings.HasPrefix(inner, "`") && !strings.HasSuffix(inner, "`")
}

// isFencedBlock says whether s is one fenced block of backticks, from its opening line
// to its closing one, with no line inside that would close it.
func isFencedBlock(s string) bool {
	lines := strings.Split(s, "\n")
	if len(lines) < 2 {
		return false
	}
	open, last := lines[0], lines[len(lines)-1]
	n := len(open) - len(strings.TrimLeft(open, "`"))
	if n < 3 || strings.Contains(open[n:], "`") || last != open[:n] {
		return false
	}
	for _, l := range lines[1 : len(lines)-1] {
		if t := strings.TrimLeft(l, " "); len(l)-len(t) < 4 && strings.HasPrefix(t, open[:n]) {
			return false
		}
	}
	return true
}

// roundEvidence reads the round's evidence from its run's files: it must be a revise
// round that answered the maintainer's comment and posted the reply.
func (d *demo) roundEvidence(cv *conversation) (*evidence.Round, error) {
	p := filepath.Join(d.runsOut, strconv.FormatInt(cv.run.ID, 10), evidence.FileName)
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("failed to read the round's evidence: %w", err)
	}
	var ev evidence.Evidence
	if err := json.Unmarshal(b, &ev); err != nil {
		return nil, fmt.Errorf("failed to read the round's evidence %s: %w", p, err)
	}
	r := ev.Round
	switch {
	case r == nil:
		return nil, fmt.Errorf("the round's evidence (%s) has no round", p)
	case r.Number != cv.round:
		return nil, fmt.Errorf("the round's evidence says round %d, the App's reply round %d", r.Number, cv.round)
	case r.Replies == nil || r.Replies.Status != evidence.RepliesOK:
		return nil, fmt.Errorf("the round's evidence says its replies were %+v, want ok", r.Replies)
	}
	answered := false
	for _, a := range r.Answered {
		answered = answered || a.ID == cv.commentID && a.Author == ghemu.DefaultMaintainer && a.ThreadID == cv.commentID
	}
	if !answered {
		return nil, fmt.Errorf("the round's evidence does not name the maintainer's comment %d as answered: %+v", cv.commentID, r.Answered)
	}
	return r, nil
}

// watchBranch reports when the branch's head leaves from: the round's commit landing.
func (d *demo) watchBranch(ctx context.Context, branch, from string) chan branchMove {
	ch := make(chan branchMove, 1)
	go func() {
		t := time.NewTicker(branchPoll)
		defer t.Stop()
		for {
			refs, err := d.e.Git().Refs(ctx, d.owner, d.repo)
			if err != nil {
				ch <- branchMove{err: fmt.Errorf("failed to read the branch %s: %w", branch, err)}
				return
			}
			if sha := refs["refs/heads/"+branch]; sha != from {
				ch <- branchMove{sha: sha, at: time.Now()}
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return ch
}

// refreshPull reads the pull request again (its head moves with each round).
func (d *demo) refreshPull(ctx context.Context) error {
	pr, _, err := d.client(ghemu.DefaultMaintainer).PullRequests.Get(ctx, d.owner, d.repo, d.pull.GetNumber())
	if err != nil {
		return fmt.Errorf("failed to read pull request #%d: %w", d.pull.GetNumber(), err)
	}
	d.pull = pr
	return nil
}

// summary is the round's figures for the final report.
func (cv *conversation) summary() []string {
	return []string{
		fmt.Sprintf("From the maintainer's review to the round's commit on the branch: %s (the round was dispatched %s after the review).",
			cv.committedAt.Sub(cv.reviewedAt).Round(100*time.Millisecond), cv.dispatchedAt.Sub(cv.reviewedAt).Round(100*time.Millisecond)),
		fmt.Sprintf("Revise round %d: %.12s → %.12s on the same branch, a fast-forward; the reply is in the maintainer's thread; the verdict is on the new head.",
			cv.round, cv.reviewedHead, cv.newHead),
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
