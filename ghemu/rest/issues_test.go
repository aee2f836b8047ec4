package rest_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
)

func TestIssuesLabelsComments(t *testing.T) {
	t.Parallel()
	e := emutest.New(t, ghemu.Options{})
	ctx := emutest.Context(t)
	c := emutest.UserClient(t, e, ghemu.DefaultMaintainer)

	is, resp, err := c.Issues.Create(ctx, org, repo, &github.IssueRequest{
		Title: github.String("Add a frobnicator"), Body: github.String("It should frobnicate."),
		Labels: &[]string{"bug"},
	})
	emutest.WantStatus(t, resp, err, http.StatusCreated)
	if is.GetNumber() != 1 || is.GetUser().GetLogin() != ghemu.DefaultMaintainer || len(is.Labels) != 1 {
		t.Fatalf("created issue = #%d by %s with %d labels", is.GetNumber(), is.GetUser().GetLogin(), len(is.Labels))
	}

	t.Run("edit title, body and state", func(t *testing.T) {
		ed, _, err := c.Issues.Edit(ctx, org, repo, 1, &github.IssueRequest{Body: github.String("Frobnicate twice.")})
		if err != nil || ed.GetBody() != "Frobnicate twice." {
			t.Fatalf("edit body: %v %q", err, ed.GetBody())
		}
		cl, _, err := c.Issues.Edit(ctx, org, repo, 1, &github.IssueRequest{State: github.String("closed")})
		if err != nil || cl.GetState() != "closed" || cl.ClosedAt == nil {
			t.Fatalf("close: %v %+v", err, cl)
		}
		ro, _, err := c.Issues.Edit(ctx, org, repo, 1, &github.IssueRequest{State: github.String("open")})
		if err != nil || ro.GetState() != "open" || ro.ClosedAt != nil {
			t.Fatalf("reopen: %v", err)
		}
	})

	t.Run("labels add, set, remove", func(t *testing.T) {
		ls, _, err := c.Issues.AddLabelsToIssue(ctx, org, repo, 1, []string{"agent:implement", "bug"})
		if err != nil || len(ls) != 2 {
			t.Fatalf("add labels = %v, %v; want bug and agent:implement", ls, err)
		}
		if _, err := c.Issues.RemoveLabelForIssue(ctx, org, repo, 1, "bug"); err != nil {
			t.Fatal(err)
		}
		got, _, err := c.Issues.ListLabelsByIssue(ctx, org, repo, 1, nil)
		if err != nil || len(got) != 1 || got[0].GetName() != "agent:implement" {
			t.Fatalf("labels = %v, %v", got, err)
		}
		resp, err := c.Issues.RemoveLabelForIssue(ctx, org, repo, 1, "bug")
		emutest.WantStatus(t, resp, err, http.StatusNotFound)
		set, _, err := c.Issues.ReplaceLabelsForIssue(ctx, org, repo, 1, []string{"bumper:awaiting-approval"})
		if err != nil || len(set) != 1 || set[0].GetName() != "bumper:awaiting-approval" {
			t.Fatalf("replace labels = %v, %v", set, err)
		}
		if _, _, err := c.Issues.GetLabel(ctx, org, repo, "bumper:awaiting-approval"); err != nil {
			t.Errorf("a label used on an issue exists in the repository: %v", err)
		}
	})

	t.Run("comments create, edit, list, delete", func(t *testing.T) {
		cm, resp, err := c.Issues.CreateComment(ctx, org, repo, 1, &github.IssueComment{Body: github.String("first")})
		emutest.WantStatus(t, resp, err, http.StatusCreated)
		ed, _, err := c.Issues.EditComment(ctx, org, repo, cm.GetID(), &github.IssueComment{Body: github.String("first, edited")})
		if err != nil || ed.GetBody() != "first, edited" {
			t.Fatalf("edit comment: %v", err)
		}
		if _, _, err := c.Issues.CreateComment(ctx, org, repo, 1, &github.IssueComment{Body: github.String("second")}); err != nil {
			t.Fatal(err)
		}
		list, _, err := c.Issues.ListComments(ctx, org, repo, 1, nil)
		if err != nil || len(list) != 2 || list[0].GetBody() != "first, edited" {
			t.Fatalf("comments = %v, %v", list, err)
		}
		if _, err := c.Issues.DeleteComment(ctx, org, repo, cm.GetID()); err != nil {
			t.Fatal(err)
		}
		_, resp, err = c.Issues.GetComment(ctx, org, repo, cm.GetID())
		emutest.WantStatus(t, resp, err, http.StatusNotFound)
		got, _, _ := c.Issues.Get(ctx, org, repo, 1)
		if got.GetComments() != 1 {
			t.Errorf("comment count = %d, want 1", got.GetComments())
		}
		// Another user's comment cannot be edited by a reader.
		reader := emutest.UserClient(t, e, ghemu.DefaultReader)
		_, resp, err = reader.Issues.EditComment(ctx, org, repo, list[1].GetID(), &github.IssueComment{Body: github.String("x")})
		emutest.WantStatus(t, resp, err, http.StatusForbidden)
	})
}

func TestIssueListFiltersAndPagination(t *testing.T) {
	t.Parallel()
	e := emutest.New(t, ghemu.Options{})
	ctx := emutest.Context(t)
	c := emutest.UserClient(t, e, ghemu.DefaultMaintainer)
	for i := 1; i <= 7; i++ {
		req := &github.IssueRequest{Title: github.String(fmt.Sprintf("issue %d", i))}
		if i%2 == 0 {
			req.Labels = &[]string{"agent:implement"}
		}
		if _, _, err := c.Issues.Create(ctx, org, repo, req); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := c.Issues.Edit(ctx, org, repo, 7, &github.IssueRequest{State: github.String("closed")}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts github.IssueListByRepoOptions
		want int
	}{
		{"open by default", github.IssueListByRepoOptions{}, 6},
		{"all", github.IssueListByRepoOptions{State: "all"}, 7},
		{"closed", github.IssueListByRepoOptions{State: "closed"}, 1},
		{"by label", github.IssueListByRepoOptions{Labels: []string{"agent:implement"}}, 3},
		{"by creator", github.IssueListByRepoOptions{Creator: ghemu.DefaultReader}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := c.Issues.ListByRepo(ctx, org, repo, &tt.opts)
			if err != nil || len(got) != tt.want {
				t.Fatalf("got %d issues (%v), want %d", len(got), err, tt.want)
			}
		})
	}
	t.Run("Link pagination walks every page", func(t *testing.T) {
		opts := &github.IssueListByRepoOptions{State: "all", ListOptions: github.ListOptions{PerPage: 3}}
		var numbers []int
		pages := 0
		for {
			got, resp, err := c.Issues.ListByRepo(ctx, org, repo, opts)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, is := range got {
				numbers = append(numbers, is.GetNumber())
			}
			if pages == 1 && (resp.LastPage != 3 || !strings.Contains(resp.Header.Get("Link"), `rel="next"`)) {
				t.Errorf("first page: last=%d Link=%q", resp.LastPage, resp.Header.Get("Link"))
			}
			if resp.NextPage == 0 {
				break
			}
			opts.Page = resp.NextPage
		}
		if pages != 3 || len(numbers) != 7 || numbers[0] != 7 || numbers[6] != 1 {
			t.Errorf("pages = %d, numbers = %v; want 3 pages of 7..1", pages, numbers)
		}
	})
}

func TestConditionalRequestsAndRateLimit(t *testing.T) {
	t.Parallel()
	e := emutest.New(t, ghemu.Options{RateLimit: 5})
	ctx := emutest.Context(t)
	c := emutest.UserClient(t, e, ghemu.DefaultMaintainer)

	req, _ := c.NewRequest("GET", "repos/"+org+"/"+repo, nil)
	resp, err := c.Do(ctx, req, nil)
	if err != nil {
		t.Fatal(err)
	}
	etag := resp.Header.Get("ETag")
	if etag == "" || resp.Rate.Limit != 5 || resp.Rate.Remaining != 4 {
		t.Fatalf("ETag %q, rate %+v", etag, resp.Rate)
	}
	req, _ = c.NewRequest("GET", "repos/"+org+"/"+repo, nil)
	req.Header.Set("If-None-Match", etag)
	resp, err = c.Do(ctx, req, nil)
	if resp == nil || resp.StatusCode != http.StatusNotModified {
		t.Fatalf("conditional GET: %v, want 304", err)
	}
	if resp.Rate.Remaining != 4 {
		t.Errorf("a 304 counted against the limit: remaining %d, want 4", resp.Rate.Remaining)
	}
	rl, _, err := c.RateLimit.Get(ctx)
	if err != nil || rl.GetCore().Limit != 5 {
		t.Fatalf("rate_limit = %+v, %v", rl, err)
	}
	for i := 0; i < 5; i++ {
		_, resp, err = c.Repositories.Get(ctx, org, repo)
	}
	emutest.WantStatus(t, resp, err, http.StatusForbidden)
	if rl := (*github.RateLimitError)(nil); !errors.As(err, &rl) {
		t.Errorf("err = %T %v, want a *github.RateLimitError", err, err)
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	e := emutest.New(t, ghemu.Options{}, emutest.AllowInvalidRequests())
	ctx := emutest.Context(t)
	c := emutest.UserClient(t, e, ghemu.DefaultMaintainer)
	tests := []struct {
		name, method, path, body string
		want                     int
	}{
		{"unknown route", "GET", "repos/acme/widgets/frobs", "", 404},
		{"unknown repository", "GET", "repos/acme/nope", "", 404},
		{"malformed JSON", "POST", "repos/acme/widgets/issues", `{"title":`, 400},
		{"wrong type", "POST", "repos/acme/widgets/issues", `{"title":42}`, 422},
		{"missing title", "POST", "repos/acme/widgets/issues", `{"body":"x"}`, 422},
		{"unknown issue", "GET", "repos/acme/widgets/issues/999", "", 404},
		{"non-numeric issue", "GET", "repos/acme/widgets/issues/abc", "", 404},
		{"bad state filter", "GET", "repos/acme/widgets/issues?state=sideways", "", 422},
		{"bad per_page", "GET", "repos/acme/widgets/issues?per_page=-1", "", 422},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := c.NewRequest(tt.method, tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.body != "" {
				req.Body = io.NopCloser(strings.NewReader(tt.body))
				req.ContentLength = int64(len(tt.body))
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := c.Do(ctx, req, nil)
			emutest.WantStatus(t, resp, err, tt.want)
			var ge *github.ErrorResponse
			if !errors.As(err, &ge) || ge.Message == "" {
				t.Errorf("error body has no GitHub message: %v", err)
			}
		})
	}
}

func TestConcurrentCommentsAreConsistent(t *testing.T) {
	t.Parallel()
	e := emutest.New(t, ghemu.Options{})
	ctx := emutest.Context(t)
	c := emutest.UserClient(t, e, ghemu.DefaultMaintainer)
	if _, _, err := c.Issues.Create(ctx, org, repo, &github.IssueRequest{Title: github.String("busy")}); err != nil {
		t.Fatal(err)
	}
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, _, err := c.Issues.CreateComment(ctx, org, repo, 1, &github.IssueComment{Body: github.String(fmt.Sprint(i))})
			errs <- err
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	is, _, err := c.Issues.Get(ctx, org, repo, 1)
	if err != nil || is.GetComments() != n {
		t.Fatalf("comments = %d (%v), want %d", is.GetComments(), err, n)
	}
	list, _, err := c.Issues.ListComments(ctx, org, repo, 1, &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}})
	if err != nil || len(list) != n {
		t.Fatalf("listed %d comments, want %d", len(list), n)
	}
	ids := map[int64]bool{}
	for _, cm := range list {
		ids[cm.GetID()] = true
	}
	if len(ids) != n {
		t.Errorf("comment IDs are not unique: %d distinct of %d", len(ids), n)
	}
}

func TestReadersMayNotTriage(t *testing.T) {
	t.Parallel()
	e := emutest.New(t, ghemu.Options{}, emutest.AllowInvalidRequests())
	ctx := emutest.Context(t)
	maint := emutest.UserClient(t, e, ghemu.DefaultMaintainer)
	reader := emutest.UserClient(t, e, ghemu.DefaultReader)
	mine, _, err := reader.Issues.Create(ctx, org, repo, &github.IssueRequest{Title: github.String("from a reader"),
		Labels: &[]string{"agent:implement"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(mine.Labels) != 0 {
		t.Errorf("a reader labeled an issue on creation: %v", mine.Labels)
	}
	theirs, _, err := maint.Issues.Create(ctx, org, repo, &github.IssueRequest{Title: github.String("from a maintainer")})
	if err != nil {
		t.Fatal(err)
	}
	_, resp, err := reader.Issues.Edit(ctx, org, repo, theirs.GetNumber(), &github.IssueRequest{Body: github.String("hijacked")})
	emutest.WantStatus(t, resp, err, http.StatusForbidden)
	got, _, err := maint.Issues.Get(ctx, org, repo, theirs.GetNumber())
	if err != nil || got.GetBody() != "" {
		t.Fatalf("a refused edit changed the issue: %q, %v", got.GetBody(), err)
	}
	ed, _, err := reader.Issues.Edit(ctx, org, repo, mine.GetNumber(), &github.IssueRequest{Body: github.String("clearer"),
		Labels: &[]string{"agent:implement"}})
	if err != nil || ed.GetBody() != "clearer" || len(ed.Labels) != 0 {
		t.Fatalf("reader editing own issue = %q %v, %v", ed.GetBody(), ed.Labels, err)
	}
	// A refused edit leaves nothing half-written.
	_, resp, err = maint.Issues.Edit(ctx, org, repo, theirs.GetNumber(), &github.IssueRequest{
		Title: github.String("renamed"), State: github.String("sideways")})
	emutest.WantStatus(t, resp, err, http.StatusUnprocessableEntity)
	got, _, _ = maint.Issues.Get(ctx, org, repo, theirs.GetNumber())
	if got.GetTitle() != "from a maintainer" {
		t.Errorf("a refused edit renamed the issue to %q", got.GetTitle())
	}
}
