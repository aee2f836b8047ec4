package workitem

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/logkey"
	"github.com/bumperdev/bumper/app/workitem/agentwords"
	"github.com/bumperdev/bumper/app/workitem/policycache"
	"github.com/bumperdev/bumper/app/workitem/recordtrust"
	"github.com/bumperdev/bumper/app/workitem/redrive"
	"github.com/bumperdev/bumper/app/workitem/unwritten"
	"github.com/bumperdev/bumper/internal/repoconfig"
)

// Options configure a Service.
type Options struct {
	Index     *ledger.Index
	Connector Connector
	// Workflow is the runner workflow's file name under .github/workflows.
	Workflow string
	// TriggerLabel starts a work item when a writer puts it on an issue.
	TriggerLabel string
	// TokenPermissions are what a run's installation token may do.
	TokenPermissions map[string]string
	// RunTokens signs the run tokens handed out by the token exchange.
	RunTokens RunTokenSigner
	// Sealer signs and checks status records and names revisions.
	Sealer *ledger.Sealer
	// ApproveWindow is how long after an edit of the issue a bare `/approve` is refused
	// (the approver must name the revision they read); zero: never.
	ApproveWindow time.Duration
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	// AppID is the App's own ID: its check runs are the ones a required check pinned to
	// it means.
	AppID int64
	// Observer learns of each dispatch (serve's metrics); nil: nobody.
	Observer Observer
	// Fault, for tests only, is asked at named points of the flow; an error it returns
	// ends the handling right there, as if serve had been killed at that point.
	Fault func(FaultPoint) error
	// Wait waits d, or until ctx ends: between the reads of a pull request whose
	// mergeability GitHub is still computing. Nil: a timer.
	Wait func(ctx context.Context, d time.Duration) error
	// Limits are serve's caps across runs and items per day; Spend keeps their
	// counters (required when any limit is on).
	Limits Limits
	Spend  SpendStore
	// Pause says whether serve's configuration pauses everything (bumper.paused), read
	// at each decision so a reload (SIGHUP) takes effect at once; nil: never.
	Pause func() PauseState
}

// Service applies GitHub events and runner call-backs to work items.
type Service struct {
	opts Options
	idx  *ledger.Index
	now  func() time.Time

	mu    sync.Mutex
	locks map[string]*sync.Mutex
	bot   string
	// policies caches .github/bumper.yml by repository and commit.
	policies policycache.Policies
	// redrives are the dispatches waiting out their grace period (RedriveLater).
	redrives redrive.Schedule
	// pauses remember each repository's paused flag for should-stop polls.
	pauses policycache.Pauses
	// steers remember /steer comments as they were given, so that a run polling for
	// them costs no call to GitHub.
	steers agentwords.Steers
	// readBacks are when each run's should-stop poll last read its record back
	// (currentActive), under mu.
	readBacks map[string]time.Time
}

// New checks the options and returns a Service.
func New(opts Options) (*Service, error) {
	switch {
	case opts.Index == nil:
		return nil, errors.New("workitem: an index is required")
	case opts.Limits.On() && opts.Spend == nil:
		return nil, errors.New("workitem: daily limits need a store for their counters")
	case opts.Connector == nil:
		return nil, errors.New("workitem: a GitHub connector is required")
	case opts.Workflow == "" || strings.Contains(opts.Workflow, "/"):
		return nil, fmt.Errorf("workitem: workflow %q must be a file name under .github/workflows", opts.Workflow)
	case opts.TriggerLabel == "":
		return nil, errors.New("workitem: a trigger label is required")
	case opts.RunTokens == nil:
		return nil, errors.New("workitem: a run token signer is required")
	case opts.Sealer == nil:
		return nil, errors.New("workitem: a record sealer is required")
	case opts.ApproveWindow < 0:
		return nil, errors.New("workitem: the approve window must not be negative")
	case len(opts.TokenPermissions) == 0:
		return nil, errors.New("workitem: the run token permissions must name at least one permission")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Wait == nil {
		opts.Wait = sleep
	}
	return &Service{opts: opts, idx: opts.Index, now: opts.Now, locks: map[string]*sync.Mutex{}}, nil
}

// Index is the service's ledger index.
func (s *Service) Index() *ledger.Index { return s.idx }

// botLogin is the App's own login, asked once.
func (s *Service) botLogin(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bot != "" {
		return s.bot, nil
	}
	login, err := s.opts.Connector.BotLogin(ctx)
	if err != nil {
		return "", fmt.Errorf("failed to learn the App's login: %w", err)
	}
	s.bot = login
	return login, nil
}

// lock serializes the handling of one work item within this process; events for
// different items run in parallel.
func (s *Service) lock(id string) func() {
	s.mu.Lock()
	l, ok := s.locks[id]
	if !ok {
		l = &sync.Mutex{}
		s.locks[id] = l
	}
	s.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// item is a work item loaded for a change: its record as stored, and the copy the
// handler changes.
type item struct {
	repo      Repo
	commentID int64
	stored    *ledger.Record // nil for a new item
	rec       *ledger.Record
	// replies wait for the next save: what Bumper says of a change is posted once the
	// change is recorded.
	replies []queuedReply
}

// queuedReply is a reply to post on an issue or pull request once the record is saved.
type queuedReply struct {
	number int
	body   string
}

// replyAfterSave queues a reply for the item's next save.
func (it *item) replyAfterSave(number int, body string) {
	it.replies = append(it.replies, queuedReply{number: number, body: body})
}

// errUntrusted marks a record that failed to parse or contradicts GitHub.
var errUntrusted = errors.New("untrusted work item record")

// load finds a work item: in the index, or else in the issue's comments. It returns a
// nil item, without error, when the issue has no work item.
func (s *Service) load(ctx context.Context, gh GitHub, repo Repo, number int) (*item, error) {
	return s.loadIssue(ctx, gh, repo, Issue{Number: number, Comments: -1})
}

// stillCurrent reports whether the index's copy of a record is the one its status
// comment holds now. Replicas behind one load balancer each see some of the webhooks,
// so a copy may be old; the read is a conditional request, answered 304 (and not
// counted against the rate limit) while nothing changed.
func (s *Service) stillCurrent(ctx context.Context, gh GitHub, repo string, rec *ledger.Record, commentID int64) (bool, error) {
	c, err := gh.Comment(ctx, repo, commentID)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("failed to read the status comment of %s: %w", rec.ID(), err)
	}
	now, err := s.opts.Sealer.Decode(c.Body)
	if err != nil {
		return false, nil // the full read decides what an unreadable comment means
	}
	return now.Revision == rec.Revision && now.UpdatedAt.Equal(rec.UpdatedAt), nil
}

// loadIssue is load with what the payload says about the issue.
func (s *Service) loadIssue(ctx context.Context, gh GitHub, repo Repo, is Issue) (*item, error) {
	return s.loadIssueAs(ctx, gh, repo, is, true)
}

// loadIssueAs is loadIssue; without verify it trusts the index's copy as it is, for
// the hot read-only polls whose callers confirm what matters with a verified read.
func (s *Service) loadIssueAs(ctx context.Context, gh GitHub, repo Repo, is Issue, verify bool) (*item, error) {
	number := is.Number
	id := ledger.ID(repo.FullName, number)
	if rec, cid, ok := s.idx.Get(id); ok {
		if !verify {
			return &item{repo: repo, commentID: cid, stored: rec, rec: rec.Clone()}, nil
		}
		current, err := s.stillCurrent(ctx, gh, repo.FullName, rec, cid)
		if err != nil {
			return nil, err
		}
		if current {
			return &item{repo: repo, commentID: cid, stored: rec, rec: rec.Clone()}, nil
		}
		// Another replica wrote since (or someone deleted the comment): read it all again,
		// as at start-up, so this replica never acts on, or writes back, an older record.
		s.idx.Delete(id)
		is.Comments = -1
	}
	if is.Comments == 0 {
		return nil, nil
	}
	bot, err := s.botLogin(ctx)
	if err != nil {
		return nil, err
	}
	comments, err := gh.Comments(ctx, repo.FullName, number)
	if errors.Is(err, ErrNotFound) {
		return nil, nil // no such issue: no work item
	}
	if err != nil {
		return nil, fmt.Errorf("failed to list the comments of %s: %w", id, err)
	}
	for _, c := range comments {
		if !ledger.IsStatusComment(c.Body) || !strings.EqualFold(c.Author, bot) {
			continue
		}
		rec, err := recordtrust.Trusted(s.opts.Sealer, id, c, comments)
		if err != nil {
			return &item{repo: repo, commentID: c.ID}, fmt.Errorf("%w: %w", errUntrusted, err)
		}
		if err := s.idx.Put(rec, c.ID); err != nil {
			return nil, err
		}
		return &item{repo: repo, commentID: c.ID, stored: rec, rec: rec.Clone()}, nil
	}
	return nil, nil
}

// save writes the record to the status comment (creating it on first write), moves the
// state label, and updates the index. The record's revision counts the writes. A write
// GitHub does not take is said on the issue (unwritten), never left silent.
func (s *Service) save(ctx context.Context, gh GitHub, it *item, delivery string) error {
	rec := it.rec
	// GitHub has no compare-and-swap for a comment; this is the nearest: the record is
	// written only over the one it was read from. Another replica's write since (a run's
	// exchange while this one handled a comment) makes this write ErrConflict, to be done
	// again on the record as it is now (a webhook's redelivery, a runner's repeat).
	if it.stored != nil && it.commentID != 0 {
		current, err := s.stillCurrent(ctx, gh, it.repo.FullName, it.stored, it.commentID)
		if err != nil {
			return err
		}
		if !current {
			s.idx.Delete(rec.ID())
			return fmt.Errorf("failed to write %s: %w", rec.ID(), ErrConflict)
		}
	}
	rec.Revision++
	rec.UpdatedAt = s.now().UTC()
	rec.Compact()
	rec.NoteDelivery(delivery)
	body, err := s.opts.Sealer.Encode(rec)
	if err != nil {
		return s.unwritten(ctx, gh, it, unwritten.StatusComment, err)
	}
	if it.commentID == 0 {
		id, err := gh.CreateComment(ctx, it.repo.FullName, rec.Issue, body)
		if err != nil {
			return s.unwritten(ctx, gh, it, unwritten.StatusComment, fmt.Errorf("failed to create the status comment of %s: %w", rec.ID(), err))
		}
		it.commentID = id
	} else if err := gh.EditComment(ctx, it.repo.FullName, it.commentID, body); err != nil {
		return s.unwritten(ctx, gh, it, unwritten.StatusComment, fmt.Errorf("failed to update the status comment of %s: %w", rec.ID(), err))
	}
	var from ledger.State
	if it.stored != nil {
		from = it.stored.State
	}
	if from != rec.State {
		if err := gh.AddLabel(ctx, it.repo.FullName, rec.Issue, rec.State.Label()); err != nil {
			return s.unwritten(ctx, gh, it, unwritten.StateLabel, fmt.Errorf("failed to label %s %s: %w", rec.ID(), rec.State.Label(), err))
		}
		if from != "" {
			if err := gh.RemoveLabel(ctx, it.repo.FullName, rec.Issue, from.Label()); err != nil {
				return s.unwritten(ctx, gh, it, unwritten.StateLabel, fmt.Errorf("failed to remove label %s from %s: %w", from.Label(), rec.ID(), err))
			}
		}
		zerolog.Ctx(ctx).Info().Str(logkey.WorkItem, rec.ID()).Str(logkey.From, string(from)).
			Str(logkey.State, string(rec.State)).Str(logkey.Reason, rec.Reason).Msg("work item moved")
		if rec.State.Terminal() {
			s.observer().Outcome(string(rec.State))
		}
	}
	if err := s.idx.Put(rec, it.commentID); err != nil {
		return err
	}
	it.stored = rec.Clone()
	queued := it.replies
	it.replies = nil
	for _, r := range queued {
		if err := s.reply(ctx, gh, it.repo.FullName, r.number, r.body); err != nil {
			return err
		}
	}
	return nil
}

// move changes the item's state through the transition table; an illegal move is
// logged and refused.
func (s *Service) move(ctx context.Context, it *item, to ledger.State, reason string) error {
	if err := it.rec.MoveTo(to, reason); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Str(logkey.WorkItem, it.rec.ID()).Msg("refused a state change")
		return err
	}
	return nil
}

// reply posts a comment from the bot on the issue.
func (s *Service) reply(ctx context.Context, gh GitHub, repo string, issue int, body string) error {
	if _, err := gh.CreateComment(ctx, repo, issue, body); err != nil {
		return fmt.Errorf("failed to reply on %s: %w", ledger.ID(repo, issue), err)
	}
	return nil
}

// policy reads the repository's .github/bumper.yml at the default branch, or the
// defaults when it is absent. A file that does not parse is an error: the App does not
// guess at security settings.
func (s *Service) policy(ctx context.Context, gh GitHub, repo string) (repoconfig.Config, error) {
	return s.policyAt(ctx, gh, repo, "")
}

// policyAt reads the policy at a commit: what an approval binds is the policy of the
// approved base commit, whatever the default branch says now.
func (s *Service) policyAt(ctx context.Context, gh GitHub, repo, ref string) (repoconfig.Config, error) {
	if p, ok := s.policies.Get(repo, ref); ok {
		return p, nil
	}
	p, err := s.readPolicy(ctx, gh, repo, ref)
	if err != nil {
		return p, err
	}
	s.policies.Put(repo, ref, p)
	return p, nil
}

func (s *Service) readPolicy(ctx context.Context, gh GitHub, repo, ref string) (repoconfig.Config, error) {
	raw, err := gh.File(ctx, repo, repoconfig.Path, ref)
	if errors.Is(err, ErrNotFound) {
		return repoconfig.Default(), nil
	}
	if err != nil {
		return repoconfig.Config{}, fmt.Errorf("failed to read %s of %s: %w", repoconfig.Path, repo, err)
	}
	p, err := repoconfig.Parse(raw)
	if err != nil {
		return repoconfig.Config{}, invalidPolicy{err}
	}
	return p, nil
}

// invalidPolicy is a policy file that was read and does not parse. Only this voids an
// approval or earns the "configuration is invalid" reply: a read GitHub failed (a 502,
// a secondary rate limit) is an error of the moment, which fails the event or the
// exchange so that it is tried again, and voids nothing.
type invalidPolicy struct{ err error }

func (e invalidPolicy) Error() string { return e.err.Error() }
func (e invalidPolicy) Unwrap() error { return e.err }

// isInvalidPolicy says err is a policy that does not parse, not a failed read.
func isInvalidPolicy(err error) bool {
	var ip invalidPolicy
	return errors.As(err, &ip)
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
