package publish

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-github/v66/github"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/app/wire"
)

// TestReplyBodyIsText plays the agent of a review round writing its replies to make the
// App say something live on the pull request: mention and ping people and teams, link
// and embed from outside, close issues, write HTML, headings and tables, end the quote
// early with backticks, open an HTML comment that hides what follows, hide characters,
// and quote a token it found. What the App posts starts with its own words ("Changed in
// `<sha>`:" or "Not changed:") and shows the agent's text as code: parsed as GitHub's
// Markdown, nothing outside code is the agent's, and the token is redacted.
func TestReplyBodyIsText(t *testing.T) {
	head := strings.Repeat("c", 40)
	token := "ghs_" + strings.Repeat("A1b2C3d4", 5)
	for _, tt := range []struct {
		name, body string
	}{
		{"mentions", "@maintainer @acme/security please approve and merge"},
		{"links and images", "[docs](https://evil.example/phish) ![x](https://evil.example/pixel.png) https://evil.example <https://evil.example/a>"},
		{"closing keywords", "Fixes #6, closes acme/widgets#7, GH-8"},
		{"html", "<img src=x onerror=alert(1)><details open><summary>Approved</summary>"},
		{"a comment that hides the rest", "done <!-- the rest is hidden"},
		{"backticks", "`` ` ``` ````` end"},
		{"blocks", "Done.\n```\n# Approved by security\n```\n````````\n## Heading\n| a | b |\n|---|---|\n<!--\n- item\n> quote"},
		{"hidden characters", "safe\u202Egnp.exe\u200B and tags \U000E0041"},
		{"a token", "I used " + token + " from .env"},
	} {
		for _, changed := range []bool{true, false} {
			t.Run(tt.name, func(t *testing.T) {
				md := ReplyBody(wire.Reply{ThreadID: 10, Changed: changed, Body: tt.body}, head)
				lead := "Not changed: "
				if changed {
					lead = "Changed in `" + head + "`: "
				}
				if !strings.HasPrefix(md, strings.TrimSpace(lead)) {
					t.Fatalf("the reply does not start with the App's words %q:\n%s", lead, md)
				}
				for _, bad := range []string{"<!--", token[:12], "\u202E", "\u200B", "\U000E0041"} {
					if strings.Contains(md, bad) {
						t.Errorf("the reply holds %q:\n%s", bad, md)
					}
				}
				onlyCode(t, md)
			})
		}
	}
}

// onlyCode parses md as GitHub's Markdown (goldmark with GFM standing in) and fails on
// anything outside code that the App did not write: a link, an image, an autolink, HTML,
// a heading, a list, a quote, a table, or text with "@", "<" or "#".
func onlyCode(t *testing.T, md string) {
	t.Helper()
	src := []byte(md)
	doc := goldmark.New(goldmark.WithExtensions(extension.GFM)).Parser().Parse(text.NewReader(src))
	err := ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Document, *ast.Paragraph:
		case *ast.CodeSpan, *ast.FencedCodeBlock:
			return ast.WalkSkipChildren, nil
		case *ast.Text:
			if v := string(n.Segment.Value(src)); strings.ContainsAny(v, "@<#[]!") {
				t.Errorf("text outside code: %q\n%s", v, md)
			}
		default:
			t.Errorf("a %s outside code:\n%s", n.Kind(), md)
		}
		return ast.WalkContinue, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPostReplies posts a round's replies to a server that records what GitHub would
// get: each with GitHub's endpoint for a reply to a review comment (POST
// /repos/{owner}/{repo}/pulls/{n}/comments/{comment_id}/replies, body {"body": …} and
// nothing else, as GitHub's OpenAPI description has it), with the run's token, in order.
// A thread GitHub refuses (a 404 for a comment that is not a thread's first) is
// recorded with why, and the next reply is still posted.
func TestPostReplies(t *testing.T) {
	type call struct {
		method, path, auth string
		body               map[string]any
	}
	var mu sync.Mutex
	var calls []call
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		mu.Lock()
		calls = append(calls, call{r.Method, r.URL.Path, r.Header.Get("Authorization"), body})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(r.URL.Path, "/comments/13/") {
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"message": "Not Found", "documentation_url": "https://docs.github.com/rest/pulls/comments#create-a-reply-for-a-review-comment"}`)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"id": 9001, "in_reply_to_id": 10, "body": "x"}`)
	}))
	defer srv.Close()
	gh := github.NewClient(srv.Client()).WithAuthToken("ghs_runtoken")
	gh.BaseURL, _ = url.Parse(srv.URL + "/")
	head := strings.Repeat("c", 40)
	got, err := PostReplies(context.Background(), gh, RepliesOptions{Repository: fullName, Number: 57, Head: head, Replies: []wire.Reply{
		{ThreadID: 10, Changed: true, Body: "Used the helper."},
		{ThreadID: 13, Body: "Kept."},
		{ThreadID: 14, Body: "Also kept."},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := []evidence.PostedReply{{ThreadID: 10, Changed: true, CommentID: 9001}, {ThreadID: 13}, {ThreadID: 14, CommentID: 9001}}
	if len(got) != 3 || got[0] != want[0] || got[2] != want[2] || got[1].CommentID != 0 || !strings.Contains(got[1].Error, "404") {
		t.Fatalf("PostReplies = %+v", got)
	}
	if len(calls) != 3 {
		t.Fatalf("%d calls, want 3", len(calls))
	}
	for i, thread := range []string{"10", "13", "14"} {
		c := calls[i]
		if c.method != http.MethodPost || c.path != "/repos/acme/widgets/pulls/57/comments/"+thread+"/replies" || c.auth != "Bearer ghs_runtoken" {
			t.Errorf("call %d: %s %s (%s)", i, c.method, c.path, c.auth)
		}
		if len(c.body) != 1 || c.body["body"] == nil {
			t.Errorf("call %d's body has %v; want body only", i, c.body)
		}
	}
	if b := calls[0].body["body"]; b != "Changed in `"+head+"`: `Used the helper.`\n" {
		t.Errorf("the first reply is %q", b)
	}
	for _, o := range []RepliesOptions{{Repository: fullName, Number: 57, Head: "main"}, {Repository: fullName, Head: head}, {Repository: "acme", Number: 57, Head: head}} {
		if _, err := PostReplies(context.Background(), gh, o); err == nil {
			t.Errorf("PostReplies(%+v) posted", o)
		}
	}
}
