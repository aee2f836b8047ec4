package rest_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
)

// clock is an emulator's clock that a test moves on: GitHub's times are whole seconds,
// so a test that looks at updated_at needs them to differ.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Now()} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// hooksOf are the webhooks of type T the receiver got whose action is action ("" any).
func hooksOf[T interface{ GetAction() string }](t *testing.T, e *ghemu.Emulator, rc *emutest.Receiver, action string) []T {
	t.Helper()
	if err := e.WaitWebhooks(emutest.Context(t)); err != nil {
		t.Fatal(err)
	}
	var out []T
	for _, ev := range rc.Got() {
		if p, ok := ev.Payload.(T); ok && (action == "" || p.GetAction() == action) {
			out = append(out, p)
		}
	}
	return out
}

// rawHook is what the tests read of a webhook that go-github does not parse whole.
type rawHook struct {
	Action  string `json:"action"`
	Changes struct {
		Body struct {
			From string `json:"from"`
		} `json:"body"`
	} `json:"changes"`
}

// rawHooks are the webhooks of event with action the receiver got, decoded as rawHook.
func rawHooks(t *testing.T, e *ghemu.Emulator, rc *emutest.Receiver, event, action string) []rawHook {
	t.Helper()
	if err := e.WaitWebhooks(emutest.Context(t)); err != nil {
		t.Fatal(err)
	}
	var out []rawHook
	for _, ev := range rc.Got() {
		var h rawHook
		if ev.Event != event || json.Unmarshal(ev.Body, &h) != nil || h.Action != action {
			continue
		}
		out = append(out, h)
	}
	return out
}

// TestPendingReviewThenSubmitted: a review without an event stays pending, seen by its
// author only, announces nothing, and blocks a second one; submitting it announces it
// and each of its comments, as GitHub does.
func TestPendingReviewThenSubmitted(t *testing.T) {
	rc, url := emutest.NewReceiver(t, 0)
	e := emutest.New(t, ghemu.Options{WebhookURL: url, WebhookSecret: emutest.HookSecret})
	ctx := emutest.Context(t)
	pr := featureBranch(t, e, "feature")
	n := pr.GetNumber()
	maint := emutest.UserClient(t, e, ghemu.DefaultMaintainer)
	reader := emutest.UserClient(t, e, ghemu.DefaultReader)

	pending, _, err := maint.PullRequests.CreateReview(ctx, org, repo, n, &github.PullRequestReviewRequest{
		Body: github.String("Draft"), Comments: []*github.DraftReviewComment{
			{Path: github.String("widgets.sh"), Line: github.Int(3), Body: github.String("Count from the inventory, not a constant.")},
			{Path: github.String("new.txt"), Line: github.Int(1), Body: github.String("Why fresh?")}}})
	if err != nil || pending.GetState() != "PENDING" || pending.SubmittedAt != nil {
		t.Fatalf("pending review = %+v, %v", pending, err)
	}
	seen := []struct {
		name            string
		client          *github.Client
		reviews, inline int
		get             int
	}{
		{"its author sees it", maint, 1, 2, http.StatusOK},
		{"another person does not", reader, 0, 0, http.StatusNotFound},
	}
	for _, tt := range seen {
		t.Run(tt.name, func(t *testing.T) {
			reviews, _, err := tt.client.PullRequests.ListReviews(ctx, org, repo, n, nil)
			if err != nil || len(reviews) != tt.reviews {
				t.Errorf("reviews = %d, %v; want %d", len(reviews), err, tt.reviews)
			}
			inline, _, err := tt.client.PullRequests.ListReviewComments(ctx, org, repo, n, pending.GetID(), nil)
			if tt.get == http.StatusOK && (err != nil || len(inline) != tt.inline) {
				t.Errorf("the review's comments = %d, %v; want %d", len(inline), err, tt.inline)
			}
			_, resp, err := tt.client.PullRequests.GetReview(ctx, org, repo, n, pending.GetID())
			emutest.WantStatus(t, resp, err, tt.get)
			all, _, err := tt.client.PullRequests.ListComments(ctx, org, repo, n, nil)
			if err != nil || len(all) != 0 {
				t.Errorf("the pull request's comments list %d of a pending review, %v", len(all), err)
			}
		})
	}
	t.Run("a second pending review is refused", func(t *testing.T) {
		_, resp, err := maint.PullRequests.CreateReview(ctx, org, repo, n, &github.PullRequestReviewRequest{Body: github.String("again")})
		emutest.WantStatus(t, resp, err, http.StatusUnprocessableEntity)
		if !strings.Contains(err.Error(), "one pending review per pull request") {
			t.Errorf("error = %v", err)
		}
	})
	if got := hooksOf[*github.PullRequestReviewEvent](t, e, rc, ""); len(got) != 0 {
		t.Fatalf("a pending review sent %d pull_request_review webhooks", len(got))
	}

	submitted, _, err := maint.PullRequests.SubmitReview(ctx, org, repo, n, pending.GetID(), &github.PullRequestReviewRequest{
		Event: github.String("REQUEST_CHANGES"), Body: github.String("Two things.")})
	if err != nil || submitted.GetState() != "CHANGES_REQUESTED" || submitted.GetBody() != "Two things." || submitted.SubmittedAt == nil {
		t.Fatalf("submitted = %+v, %v", submitted, err)
	}
	_, resp, err := maint.PullRequests.SubmitReview(ctx, org, repo, n, pending.GetID(), &github.PullRequestReviewRequest{Event: github.String("APPROVE")})
	emutest.WantStatus(t, resp, err, http.StatusUnprocessableEntity)

	reviews := hooksOf[*github.PullRequestReviewEvent](t, e, rc, "submitted")
	comments := hooksOf[*github.PullRequestReviewCommentEvent](t, e, rc, "created")
	if len(reviews) != 1 || reviews[0].GetReview().GetState() != "changes_requested" || reviews[0].GetSender().GetLogin() != ghemu.DefaultMaintainer {
		t.Fatalf("pull_request_review submitted = %+v", reviews)
	}
	if len(comments) != 2 || comments[0].GetComment().GetPullRequestReviewID() != pending.GetID() ||
		comments[0].GetComment().GetBody() != "Count from the inventory, not a constant." {
		t.Fatalf("pull_request_review_comment created = %+v", comments)
	}
	all, _, err := reader.PullRequests.ListComments(ctx, org, repo, n, nil)
	if err != nil || len(all) != 2 {
		t.Fatalf("after submitting, the pull request lists %d comments, %v", len(all), err)
	}
}

// TestReviewEditDismissDelete: a review's body is edited (pull_request_review edited
// with the old body), an approval or a request for changes is dismissed by a writer
// (dismissed; it stops blocking the merge), a commented review cannot be, and only a
// pending review can be deleted.
func TestReviewEditDismissDelete(t *testing.T) {
	rc, url := emutest.NewReceiver(t, 0)
	e := emutest.New(t, ghemu.Options{WebhookURL: url, WebhookSecret: emutest.HookSecret})
	ctx := emutest.Context(t)
	pr := featureBranch(t, e, "feature")
	n := pr.GetNumber()
	maint := emutest.UserClient(t, e, ghemu.DefaultMaintainer)
	reader := emutest.UserClient(t, e, ghemu.DefaultReader)

	changes, _, err := maint.PullRequests.CreateReview(ctx, org, repo, n, &github.PullRequestReviewRequest{
		Event: github.String("REQUEST_CHANGES"), Body: github.String("Not yet.")})
	if err != nil {
		t.Fatal(err)
	}
	commented, _, err := reader.PullRequests.CreateReview(ctx, org, repo, n, &github.PullRequestReviewRequest{
		Event: github.String("COMMENT"), Body: github.String("Looks odd.")})
	if err != nil {
		t.Fatal(err)
	}
	edited, _, err := maint.PullRequests.UpdateReview(ctx, org, repo, n, changes.GetID(), "Not yet: count from the inventory.")
	if err != nil || edited.GetBody() != "Not yet: count from the inventory." {
		t.Fatalf("updated review = %+v, %v", edited, err)
	}
	ed := rawHooks(t, e, rc, "pull_request_review", "edited")
	if len(ed) != 1 || ed[0].Changes.Body.From != "Not yet." {
		t.Fatalf("pull_request_review edited = %+v", ed)
	}

	tests := []struct {
		name   string
		client *github.Client
		review int64
		want   int
	}{
		{"a reader may not dismiss", reader, changes.GetID(), http.StatusForbidden},
		{"a commented review cannot be dismissed", maint, commented.GetID(), http.StatusUnprocessableEntity},
		{"a writer dismisses a request for changes", maint, changes.GetID(), http.StatusOK},
		{"a dismissed review cannot be dismissed again", maint, changes.GetID(), http.StatusUnprocessableEntity},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, resp, err := tt.client.PullRequests.DismissReview(ctx, org, repo, n, tt.review,
				&github.PullRequestReviewDismissalRequest{Message: github.String("Addressed in the next round.")})
			emutest.WantStatus(t, resp, err, tt.want)
		})
	}
	got, _, err := maint.PullRequests.GetReview(ctx, org, repo, n, changes.GetID())
	if err != nil || got.GetState() != "DISMISSED" {
		t.Fatalf("dismissed review = %+v, %v", got, err)
	}
	dismissed := hooksOf[*github.PullRequestReviewEvent](t, e, rc, "dismissed")
	if len(dismissed) != 1 || dismissed[0].GetReview().GetState() != "dismissed" {
		t.Fatalf("pull_request_review dismissed = %+v", dismissed)
	}

	t.Run("only a pending review is deleted", func(t *testing.T) {
		_, resp, err := reader.PullRequests.DeletePendingReview(ctx, org, repo, n, commented.GetID())
		emutest.WantStatus(t, resp, err, http.StatusUnprocessableEntity)
		draft, _, err := reader.PullRequests.CreateReview(ctx, org, repo, n, &github.PullRequestReviewRequest{
			Comments: []*github.DraftReviewComment{{Path: github.String("new.txt"), Line: github.Int(1), Body: github.String("hm")}}})
		if err != nil {
			t.Fatal(err)
		}
		_, resp, err = maint.PullRequests.DeletePendingReview(ctx, org, repo, n, draft.GetID())
		emutest.WantStatus(t, resp, err, http.StatusNotFound) // someone else's pending review
		deleted, resp, err := reader.PullRequests.DeletePendingReview(ctx, org, repo, n, draft.GetID())
		emutest.WantStatus(t, resp, err, http.StatusOK)
		if deleted.GetState() != "PENDING" {
			t.Errorf("deleted review = %+v", deleted)
		}
		_, resp, err = reader.PullRequests.GetReview(ctx, org, repo, n, draft.GetID())
		emutest.WantStatus(t, resp, err, http.StatusNotFound)
	})
}

// TestReviewThreadsAndReplies: replies (through …/replies and through in_reply_to) join
// the thread of its first comment, each a commented review of its own announced like
// any review; a single comment on the diff is one too; a thread is resolved by a
// writer (pull_request_review_thread resolved, with its comments), not by a reader.
func TestReviewThreadsAndReplies(t *testing.T) {
	rc, url := emutest.NewReceiver(t, 0)
	e := emutest.New(t, ghemu.Options{WebhookURL: url, WebhookSecret: emutest.HookSecret})
	ctx := emutest.Context(t)
	pr := featureBranch(t, e, "feature")
	n := pr.GetNumber()
	maint := emutest.UserClient(t, e, ghemu.DefaultMaintainer)
	bot := emutest.InstallationClient(t, e)

	rv, _, err := maint.PullRequests.CreateReview(ctx, org, repo, n, &github.PullRequestReviewRequest{
		Event: github.String("REQUEST_CHANGES"), Comments: []*github.DraftReviewComment{
			{Path: github.String("widgets.sh"), Line: github.Int(3), Body: github.String("Use the inventory helper.")}}})
	if err != nil {
		t.Fatal(err)
	}
	inline, _, err := maint.PullRequests.ListReviewComments(ctx, org, repo, n, rv.GetID(), nil)
	if err != nil || len(inline) != 1 {
		t.Fatalf("review comments = %v, %v", inline, err)
	}
	root := inline[0]

	// The App answers through …/replies, as Bumper's runner posts its thread replies.
	req, err := bot.NewRequest(http.MethodPost, "repos/"+org+"/"+repo+"/pulls/"+itoa(n)+"/comments/"+itoa64(root.GetID())+"/replies",
		map[string]string{"body": "Changed in `abc1234`: it reads the inventory."})
	if err != nil {
		t.Fatal(err)
	}
	var reply github.PullRequestComment
	resp, err := bot.Do(ctx, req, &reply)
	emutest.WantStatus(t, resp, err, http.StatusCreated)
	if reply.GetInReplyTo() != root.GetID() || reply.GetPath() != "widgets.sh" || reply.GetLine() != 3 ||
		reply.GetUser().GetLogin() != ghemu.DefaultAppSlug+"[bot]" || reply.GetPullRequestReviewID() == rv.GetID() ||
		resp.Header.Get("Location") != reply.GetURL() {
		t.Fatalf("reply = %+v (Location %s)", reply, resp.Header.Get("Location"))
	}
	// A person answers the App's reply with in_reply_to naming that reply: it joins the
	// thread of its first comment.
	again, _, err := maint.PullRequests.CreateCommentInReplyTo(ctx, org, repo, n, "Thanks, resolving.", reply.GetID())
	if err != nil || again.GetInReplyTo() != root.GetID() {
		t.Fatalf("reply to the reply = %+v, %v", again, err)
	}
	single, _, err := maint.PullRequests.CreateComment(ctx, org, repo, n, &github.PullRequestComment{
		Body: github.String("And this file?"), CommitID: github.String(pr.GetHead().GetSHA()), Path: github.String("new.txt"),
		Line: github.Int(1), Side: github.String("RIGHT")})
	if err != nil || single.GetInReplyTo() != 0 || single.GetLine() != 1 {
		t.Fatalf("single comment = %+v, %v", single, err)
	}
	t.Run("a single comment off the diff is refused on the thread's field", func(t *testing.T) {
		_, resp, err := maint.PullRequests.CreateComment(ctx, org, repo, n, &github.PullRequestComment{
			Body: github.String("here?"), CommitID: github.String(pr.GetHead().GetSHA()), Path: github.String("widgets.sh"), Line: github.Int(40)})
		emutest.WantStatus(t, resp, err, http.StatusUnprocessableEntity)
		var ge *github.ErrorResponse
		if !errors.As(err, &ge) || len(ge.Errors) != 1 || ge.Errors[0].Field != "pull_request_review_thread.line" || ge.Errors[0].Message != "could not be resolved" {
			t.Errorf("error = %v", err)
		}
	})
	reviews, _, err := maint.PullRequests.ListReviews(ctx, org, repo, n, nil)
	if err != nil || len(reviews) != 4 || reviews[1].GetState() != "COMMENTED" || reviews[1].GetBody() != "" {
		t.Fatalf("reviews = %d (%v); want the request for changes and three commented reviews", len(reviews), err)
	}
	submitted := hooksOf[*github.PullRequestReviewEvent](t, e, rc, "submitted")
	created := hooksOf[*github.PullRequestReviewCommentEvent](t, e, rc, "created")
	if len(submitted) != 4 || len(created) != 4 || created[1].GetComment().GetInReplyTo() != root.GetID() {
		t.Fatalf("webhooks: %d reviews submitted, %d comments created; want 4 and 4", len(submitted), len(created))
	}

	resolves := []struct {
		name     string
		by       string
		resolved bool
		ok       bool
		hooks    int
	}{
		{"a reader may not resolve", ghemu.DefaultReader, true, false, 0},
		{"a writer resolves", ghemu.DefaultMaintainer, true, true, 1},
		{"resolving again changes nothing", ghemu.DefaultMaintainer, true, true, 1},
		{"and unresolves", ghemu.DefaultMaintainer, false, true, 2},
	}
	for _, tt := range resolves {
		t.Run(tt.name, func(t *testing.T) {
			err := e.ResolveThread(org, repo, again.GetID(), tt.by, tt.resolved)
			if (err == nil) != tt.ok {
				t.Fatalf("ResolveThread = %v, want ok %v", err, tt.ok)
			}
			threads := hooksOf[*github.PullRequestReviewThreadEvent](t, e, rc, "")
			if len(threads) != tt.hooks {
				t.Fatalf("pull_request_review_thread webhooks = %d, want %d", len(threads), tt.hooks)
			}
		})
	}
	threads := hooksOf[*github.PullRequestReviewThreadEvent](t, e, rc, "")
	if threads[0].GetAction() != "resolved" || threads[1].GetAction() != "unresolved" || len(threads[0].GetThread().Comments) != 3 ||
		threads[0].GetThread().Comments[0].GetID() != root.GetID() || threads[0].GetSender().GetLogin() != ghemu.DefaultMaintainer {
		t.Fatalf("thread webhooks = %+v", threads[0])
	}
}

// TestReviewCommentEditDelete: an inline comment is read alone, edited (updated_at
// moves, pull_request_review_comment edited with the old body) and deleted (deleted);
// a person cannot edit another's comment unless they may write.
func TestReviewCommentEditDelete(t *testing.T) {
	rc, url := emutest.NewReceiver(t, 0)
	clk := newClock()
	e := emutest.New(t, ghemu.Options{WebhookURL: url, WebhookSecret: emutest.HookSecret, Now: clk.now})
	ctx := emutest.Context(t)
	pr := featureBranch(t, e, "feature")
	n := pr.GetNumber()
	maint := emutest.UserClient(t, e, ghemu.DefaultMaintainer)
	reader := emutest.UserClient(t, e, ghemu.DefaultReader)
	c, _, err := maint.PullRequests.CreateComment(ctx, org, repo, n, &github.PullRequestComment{
		Body: github.String("Typo?"), CommitID: github.String(pr.GetHead().GetSHA()), Path: github.String("new.txt"), Line: github.Int(1)})
	if err != nil {
		t.Fatal(err)
	}
	clk.advance(5 * time.Second)
	tests := []struct {
		name   string
		client *github.Client
		body   string
		want   int
	}{
		{"a reader may not edit a writer's comment", reader, "mine now", http.StatusForbidden},
		{"an empty body is refused", maint, " ", http.StatusUnprocessableEntity},
		{"its author edits it", maint, "Typo: fresh is spelled right.", http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, resp, err := tt.client.PullRequests.EditComment(ctx, org, repo, c.GetID(), &github.PullRequestComment{Body: github.String(tt.body)})
			emutest.WantStatus(t, resp, err, tt.want)
		})
	}
	got, _, err := reader.PullRequests.GetComment(ctx, org, repo, c.GetID())
	if err != nil || got.GetBody() != "Typo: fresh is spelled right." || !got.GetUpdatedAt().After(got.GetCreatedAt().Time) {
		t.Fatalf("edited comment = %+v, %v", got, err)
	}
	ed := hooksOf[*github.PullRequestReviewCommentEvent](t, e, rc, "edited")
	if len(ed) != 1 || ed[0].GetChanges().GetBody().GetFrom() != "Typo?" {
		t.Fatalf("pull_request_review_comment edited = %+v", ed)
	}
	repoWide, _, err := reader.PullRequests.ListComments(ctx, org, repo, 0, nil)
	if err != nil || len(repoWide) != 1 {
		t.Fatalf("the repository's review comments = %d, %v", len(repoWide), err)
	}
	resp, err := reader.PullRequests.DeleteComment(ctx, org, repo, c.GetID())
	emutest.WantStatus(t, resp, err, http.StatusForbidden)
	resp, err = maint.PullRequests.DeleteComment(ctx, org, repo, c.GetID())
	emutest.WantStatus(t, resp, err, http.StatusNoContent)
	_, resp, err = maint.PullRequests.GetComment(ctx, org, repo, c.GetID())
	emutest.WantStatus(t, resp, err, http.StatusNotFound)
	if del := hooksOf[*github.PullRequestReviewCommentEvent](t, e, rc, "deleted"); len(del) != 1 || del[0].GetComment().GetID() != c.GetID() {
		t.Fatalf("pull_request_review_comment deleted = %+v", del)
	}
}
