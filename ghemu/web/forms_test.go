package web_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
)

// browser is an HTTP client that behaves as a browser on the emulator's pages: it keeps
// cookies and sends a form post's Origin.
type browser struct {
	t    *testing.T
	e    *ghemu.Emulator
	c    *http.Client
	csrf string
}

func newBrowser(t *testing.T, e *ghemu.Emulator) *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &browser{t: t, e: e, c: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// get fetches a page and keeps the CSRF token its forms carry.
func (b *browser) get(path string) (int, string) {
	b.t.Helper()
	resp, err := b.c.Get(b.e.BaseURL() + path)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if m := csrfRE.FindStringSubmatch(string(body)); m != nil {
		b.csrf = m[1]
	}
	return resp.StatusCode, string(body)
}

// post sends a form; edit may change the request (an attacker's headers) before.
func (b *browser) post(path string, form url.Values, edit func(*http.Request)) (int, http.Header, string) {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.e.BaseURL()+path, strings.NewReader(form.Encode()))
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.e.BaseURL())
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	if edit != nil {
		edit(req)
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(body)
}

// signIn signs the browser in as login with token.
func (b *browser) signIn(login, token string) int {
	b.t.Helper()
	b.get("/login")
	status, _, _ := b.post("/session", url.Values{"csrf": {b.csrf}, "login": {login}, "token": {token}, "return": {"/"}}, nil)
	b.get("/")
	return status
}

// TestWebFormsRefuseWhatIsNotALocalUsersOwn: the web view's forms are attacked as a
// page on another site, on another port of this machine (the same site for cookies), or
// behind a DNS name rebound to loopback would attack them, with and without the
// session's token, and by people who may not; each is refused and nothing changes.
// Then the maintainer's own form posts do their work.
func TestWebFormsRefuseWhatIsNotALocalUsersOwn(t *testing.T) {
	e := emutest.New(t, ghemu.Options{})
	ctx := emutest.Context(t)
	bot := emutest.InstallationClient(t, e)
	emutest.BranchWithCommit(t, e, "bumper/1-1", "frob.txt")
	pr, resp, err := bot.PullRequests.Create(ctx, org, repo, &github.NewPullRequest{Title: github.String("Add frob"),
		Head: github.String("bumper/1-1"), Base: github.String("main")})
	emutest.WantStatus(t, resp, err, http.StatusCreated)
	pull := "/" + org + "/" + repo + "/pull/" + strconv.Itoa(pr.GetNumber())

	maint := newBrowser(t, e)
	if status := maint.signIn(ghemu.DefaultMaintainer, e.UserToken(ghemu.DefaultMaintainer)); status != http.StatusSeeOther {
		t.Fatalf("signing in: %d", status)
	}
	reader := newBrowser(t, e)
	reader.signIn(ghemu.DefaultReader, e.UserToken(ghemu.DefaultReader))
	anonymous := newBrowser(t, e)
	anonymous.get("/login") // a session, not signed in, with its token

	_, port, _ := strings.Cut(strings.TrimPrefix(e.BaseURL(), "http://"), ":")
	comment := func(b *browser, csrf string) url.Values {
		return url.Values{"csrf": {csrf}, "body": {"Injected: print env"}}
	}
	attacks := []struct {
		name   string
		b      *browser
		path   string
		form   url.Values
		edit   func(*http.Request)
		status int
		says   string
	}{
		{"a cross-site post without the token", maint, pull + "/comments", comment(maint, ""),
			func(r *http.Request) {
				r.Header.Set("Origin", "http://evil.example")
				r.Header.Set("Sec-Fetch-Site", "cross-site")
			},
			http.StatusForbidden, "not sent from a page of this emulator"},
		{"a same-origin post without the token", maint, pull + "/comments", comment(maint, ""), nil, http.StatusForbidden, "token is missing"},
		{"a post with another session's token", maint, pull + "/comments", comment(maint, reader.csrf), nil, http.StatusForbidden, "token is missing"},
		{"a page on another port of this machine, with the token", maint, pull + "/comments", comment(maint, maint.csrf),
			func(r *http.Request) {
				r.Header.Set("Origin", "http://127.0.0.1:1")
				r.Header.Set("Sec-Fetch-Site", "same-site")
			},
			http.StatusForbidden, "not sent from a page of this emulator"},
		{"a rebound DNS name (non-loopback Host)", maint, pull + "/comments", comment(maint, maint.csrf),
			func(r *http.Request) {
				r.Host = "evil.example:" + port
				r.Header.Set("Origin", "http://evil.example:"+port)
			},
			http.StatusForbidden, "loopback host"},
		{"no Origin and no Referer", maint, pull + "/comments", comment(maint, maint.csrf),
			func(r *http.Request) { r.Header.Del("Origin"); r.Header.Del("Sec-Fetch-Site") }, http.StatusForbidden, "origin none"},
		{"the browser says cross-site", maint, pull + "/comments", comment(maint, maint.csrf),
			func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") }, http.StatusForbidden, "another site"},
		{"not signed in", anonymous, pull + "/comments", comment(anonymous, anonymous.csrf), nil, http.StatusForbidden, "Sign in"},
		{"a reader merges", reader, pull + "/merge", url.Values{"csrf": {reader.csrf}}, nil, http.StatusForbidden, "needs write access"},
		{"a reader approves nothing of theirs into being: a review form without a verdict", reader, pull + "/reviews",
			url.Values{"csrf": {reader.csrf}, "body": {"x"}}, nil, http.StatusUnprocessableEntity, "Choose Comment"},
		{"signing in with a wrong token", anonymous, "/session", url.Values{"csrf": {anonymous.csrf}, "login": {ghemu.DefaultMaintainer},
			"token": {"ghp_guess"}}, nil, http.StatusForbidden, "not a local user"},
		{"signing in as the App's bot", anonymous, "/session", url.Values{"csrf": {anonymous.csrf}, "login": {ghemu.DefaultAppSlug + "[bot]"},
			"token": {""}}, nil, http.StatusForbidden, "not a local user"},
	}
	for _, tt := range attacks {
		t.Run(tt.name, func(t *testing.T) {
			status, _, body := tt.b.post(tt.path, tt.form, tt.edit)
			if status != tt.status || !strings.Contains(body, tt.says) {
				t.Errorf("status %d, want %d saying %q; page:\n%s", status, tt.status, tt.says, body)
			}
			if strings.Contains(body, "<script") {
				t.Error("the refusal page holds a script")
			}
		})
	}
	comments, _, err := bot.Issues.ListComments(ctx, org, repo, pr.GetNumber(), nil)
	if err != nil || len(comments) != 0 {
		t.Fatalf("the refused posts left %d comments (%v)", len(comments), err)
	}
	if merged, _, _ := bot.PullRequests.IsMerged(ctx, org, repo, pr.GetNumber()); merged {
		t.Fatal("a refused post merged the pull request")
	}

	t.Run("the maintainer's own post comments", func(t *testing.T) {
		status, h, _ := maint.post(pull+"/comments", url.Values{"csrf": {maint.csrf}, "body": {"Looks close."}}, nil)
		if status != http.StatusSeeOther || !strings.HasPrefix(h.Get("Location"), pull+"#issuecomment-") {
			t.Fatalf("status %d to %q", status, h.Get("Location"))
		}
		comments, _, err := bot.Issues.ListComments(ctx, org, repo, pr.GetNumber(), nil)
		if err != nil || len(comments) != 1 || comments[0].GetUser().GetLogin() != ghemu.DefaultMaintainer || comments[0].GetBody() != "Looks close." {
			t.Fatalf("comments = %+v, %v", comments, err)
		}
	})
	t.Run("signing out ends the session", func(t *testing.T) {
		old := maint.csrf
		if status, _, _ := maint.post("/logout", url.Values{"csrf": {old}}, nil); status != http.StatusSeeOther {
			t.Fatalf("sign out: %d", status)
		}
		status, _, _ := maint.post(pull+"/comments", url.Values{"csrf": {old}, "body": {"after sign-out"}}, nil)
		if status != http.StatusForbidden {
			t.Fatalf("a post after signing out: %d", status)
		}
	})
}

// TestWebFormsCarryTheConversation: a signed-in maintainer leaves an inline comment on a
// line of the diff (pending), requests changes with it, answers a thread and resolves
// it, through the forms alone; the API sees the same records as if it had made them.
func TestWebFormsCarryTheConversation(t *testing.T) {
	rc, hooks := emutest.NewReceiver(t, 0)
	e := emutest.New(t, ghemu.Options{WebhookURL: hooks, WebhookSecret: emutest.HookSecret})
	ctx := emutest.Context(t)
	bot := emutest.InstallationClient(t, e)
	emutest.BranchWithCommit(t, e, "bumper/2-1", "frob.txt")
	pr, resp, err := bot.PullRequests.Create(ctx, org, repo, &github.NewPullRequest{Title: github.String("Add frob"),
		Head: github.String("bumper/2-1"), Base: github.String("main")})
	emutest.WantStatus(t, resp, err, http.StatusCreated)
	pull := "/" + org + "/" + repo + "/pull/" + strconv.Itoa(pr.GetNumber())
	b := newBrowser(t, e)
	b.signIn(ghemu.DefaultMaintainer, e.UserToken(ghemu.DefaultMaintainer))

	_, page := b.get(pull + "?comment=0:R:1")
	if !strings.Contains(page, `id="inline-form"`) || !strings.Contains(page, `name="path" value="frob.txt"`) {
		t.Fatalf("the inline comment form is not under frob.txt line 1:\n%s", page)
	}
	steps := []struct {
		name   string
		path   string
		form   url.Values
		anchor string
	}{
		{"an inline comment joins a pending review", pull + "/review-comments",
			url.Values{"path": {"frob.txt"}, "side": {"RIGHT"}, "line": {"1"}, "body": {"Why x? Use the inventory."}}, "#pending-"},
		{"requesting changes submits it", pull + "/reviews", url.Values{"event": {"REQUEST_CHANGES"}, "body": {"One thing."}}, "#pullrequestreview-"},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			s.form.Set("csrf", b.csrf)
			status, h, body := b.post(s.path, s.form, nil)
			if status != http.StatusSeeOther || !strings.Contains(h.Get("Location"), s.anchor) {
				t.Fatalf("status %d to %q:\n%s", status, h.Get("Location"), body)
			}
		})
	}
	reviews, _, err := bot.PullRequests.ListReviews(ctx, org, repo, pr.GetNumber(), nil)
	if err != nil || len(reviews) != 1 || reviews[0].GetState() != "CHANGES_REQUESTED" || reviews[0].GetUser().GetLogin() != ghemu.DefaultMaintainer {
		t.Fatalf("reviews = %+v, %v", reviews, err)
	}
	inline, _, err := bot.PullRequests.ListReviewComments(ctx, org, repo, pr.GetNumber(), reviews[0].GetID(), nil)
	if err != nil || len(inline) != 1 || inline[0].GetPath() != "frob.txt" || inline[0].GetLine() != 1 || inline[0].GetBody() != "Why x? Use the inventory." {
		t.Fatalf("inline comments = %+v, %v", inline, err)
	}
	root := strconv.FormatInt(inline[0].GetID(), 10)
	b.get(pull)
	if status, _, body := b.post(pull+"/threads/"+root+"/replies", url.Values{"csrf": {b.csrf}, "body": {"And mind the count."}}, nil); status != http.StatusSeeOther {
		t.Fatalf("reply: %d\n%s", status, body)
	}
	if status, _, body := b.post(pull+"/threads/"+root+"/resolution", url.Values{"csrf": {b.csrf}, "resolved": {"true"}}, nil); status != http.StatusSeeOther {
		t.Fatalf("resolve: %d\n%s", status, body)
	}
	all, _, err := bot.PullRequests.ListComments(ctx, org, repo, pr.GetNumber(), nil)
	if err != nil || len(all) != 2 || all[1].GetInReplyTo() != inline[0].GetID() {
		t.Fatalf("the thread = %+v, %v", all, err)
	}
	if err := e.WaitWebhooks(ctx); err != nil {
		t.Fatal(err)
	}
	var events []string
	for _, ev := range rc.Got() {
		if strings.HasPrefix(ev.Event, "pull_request_review") {
			events = append(events, ev.Event)
		}
	}
	want := "pull_request_review pull_request_review_comment pull_request_review pull_request_review_comment pull_request_review_thread"
	if strings.Join(events, " ") != want {
		t.Errorf("webhooks = %v, want %s", events, want)
	}
	_, page = b.get(pull)
	if !strings.Contains(page, `data-resolved="true"`) || !strings.Contains(page, "And mind the count.") {
		t.Errorf("the page does not show the resolved thread with its reply")
	}
}
