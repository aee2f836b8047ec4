package appclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bumperdev/bumper/app/wire"
)

const (
	secretRequestToken = "REQUEST-TOKEN-SECRET"
	secretRunToken     = "RUN-TOKEN-SECRET"
)

func TestOIDCToken(t *testing.T) {
	cases := []struct {
		name    string
		url     bool // give the request URL
		token   string
		status  int
		body    string
		want    string
		wantErr string
		hits    int32
	}{
		{name: "value", url: true, token: secretRequestToken, status: 200, body: `{"count":1,"value":"the.jwt.here"}`, want: "the.jwt.here", hits: 1},
		{name: "env missing", token: secretRequestToken, wantErr: "permissions: id-token: write"},
		{name: "token missing", url: true, wantErr: "permissions: id-token: write"},
		{name: "refused with the body", url: true, token: secretRequestToken, status: 403,
			body: `{"message":"the run has completed; token ` + secretRequestToken + ` expired"}`, wantErr: "403 Forbidden: {\"message\":\"the run has completed; token [redacted] expired\"}", hits: 1},
		{name: "empty value", url: true, token: secretRequestToken, status: 200, body: `{"value":""}`, wantErr: "no ID token", hits: 1},
		{name: "not JSON, not echoed", url: true, token: secretRequestToken, status: 200, body: `value=the.jwt.here`, wantErr: "is not the JSON", hits: 1},
		{name: "5xx repeated", url: true, token: secretRequestToken, status: 503, body: `busy`, wantErr: "503 Service Unavailable: busy", hits: 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var hits atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				if q := r.URL.Query(); q.Get("api-version") != "2.0" || q.Get("audience") != wire.OIDCAudience || len(q) != 2 {
					t.Errorf("query %q", r.URL.RawQuery)
				}
				if r.Header.Get("Authorization") != "Bearer "+secretRequestToken {
					t.Errorf("authorization %q", r.Header.Get("Authorization"))
				}
				w.WriteHeader(tc.status)
				fmt.Fprint(w, tc.body)
			}))
			defer srv.Close()
			u := ""
			if tc.url {
				u = srv.URL + "/id-token?api-version=2.0"
			}
			got, err := oidcToken(context.Background(), u, tc.token, wire.OIDCAudience, nil,
				retryPolicy{attempts: 3, first: time.Millisecond, max: time.Millisecond})
			switch {
			case tc.wantErr == "" && (err != nil || got != tc.want):
				t.Fatalf("got %q, %v", got, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("err %v, want %q", err, tc.wantErr)
			case err != nil && (strings.Contains(err.Error(), secretRequestToken) || strings.Contains(err.Error(), "the.jwt.here")):
				t.Fatalf("a token leaked into the error: %v", err)
			case hits.Load() != tc.hits:
				t.Fatalf("%d requests, want %d", hits.Load(), tc.hits)
			}
		})
	}
}

func TestNew(t *testing.T) {
	cases := []struct {
		url      string
		insecure bool
		wantErr  string
	}{
		{url: "https://bumper.example.com"},
		{url: "https://bumper.example.com/prefix/"},
		{url: "http://127.0.0.1:8080"},
		{url: "http://[::1]:8080"},
		{url: "http://localhost:8080"},
		{url: "http://serve.internal:8080", wantErr: "plain http"},
		{url: "http://serve.internal:8080", insecure: true},
		{url: "ftp://bumper.example.com", wantErr: "must be https"},
		{url: "https://user:pw@bumper.example.com", wantErr: "credentials"},
		{url: "https://bumper.example.com/?x=1", wantErr: "query"},
		{url: "https:///nohost", wantErr: "no host"},
	}
	for _, tc := range cases {
		t.Run(tc.url, func(t *testing.T) {
			var opts []Option
			if tc.insecure {
				opts = append(opts, AllowInsecureHTTP())
			}
			_, err := New(tc.url, opts...)
			if (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// TestAnswers checks decoding and status handling against a fake serve: unknown fields
// accepted, required fields checked, bodies bounded, redirects refused, secrets redacted.
func TestAnswers(t *testing.T) {
	req := wire.ExchangeRequest{OIDCToken: "OIDC-SECRET", Nonce: "NONCE-SECRET", WorkItem: "acme/widgets#1", Attempt: 1}
	okExchange := `{"installation_token":"ghs_x","repository":"acme/widgets","run_token":"rt","work_item":"acme/widgets#1",` +
		`"revision":"sha256:r","attempt":1,"stage":"implement","base_commit":"c","base_branch":"main","bot_login":"bumper[bot]","added_later":{"x":1}}`
	cases := []struct {
		name    string
		status  int
		body    string
		call    func(c *Client) error
		wantErr string
		hits    int32
	}{
		{name: "exchange with an unknown field", status: 200, body: okExchange, hits: 1, call: func(c *Client) error {
			_, err := c.Exchange(context.Background(), req)
			return err
		}},
		{name: "exchange lacking the run token", status: 200, body: strings.Replace(okExchange, `"run_token":"rt"`, `"run_token":""`, 1), hits: 1,
			wantErr: "lacks run_token", call: func(c *Client) error {
				_, err := c.Exchange(context.Background(), req)
				return err
			}},
		{name: "exchange for another attempt", status: 200, body: strings.Replace(okExchange, `"attempt":1`, `"attempt":2`, 1), hits: 1,
			wantErr: "attempt 2, but the run asked for acme/widgets#1 attempt 1", call: func(c *Client) error {
				_, err := c.Exchange(context.Background(), req)
				return err
			}},
		{name: "exchange refused, secrets redacted", status: 403, body: `{"error":"nonce NONCE-SECRET already used"}`, hits: 1,
			wantErr: "exchange refused: nonce [redacted] already used", call: func(c *Client) error {
				_, err := c.Exchange(context.Background(), req)
				return err
			}},
		{name: "exchange 400", status: 400, body: `{"error":"bad request: json: unknown field \"x\""}`, hits: 1,
			wantErr: "malformed (400 Bad Request)", call: func(c *Client) error {
				_, err := c.Exchange(context.Background(), req)
				return err
			}},
		{name: "exchange 500 not repeated", status: 500, body: `{"error":"the token exchange failed; try again"}`, hits: 1,
			wantErr: "serve failed the token exchange (500 Internal Server Error)", call: func(c *Client) error {
				_, err := c.Exchange(context.Background(), req)
				return err
			}},
		{name: "redirect not followed", status: 307, body: ``, hits: 1, wantErr: "not followed", call: func(c *Client) error {
			_, err := c.Exchange(context.Background(), req)
			return err
		}},
		{name: "should-stop without stop", status: 200, body: `{"reason":"x"}`, hits: 1, wantErr: `lacks "stop"`, call: func(c *Client) error {
			_, err := c.WithRunToken(secretRunToken).ShouldStop(context.Background())
			return err
		}},
		{name: "should-stop with steers", status: 200, hits: 1,
			body: `{"stop":false,"steers":[{"id":7,"author":"maintainer","created_at":"2026-12-06T07:54:52Z","text":"use the helper"}]}`,
			call: func(c *Client) error {
				st, err := c.WithRunToken(secretRunToken).ShouldStop(context.Background())
				if err == nil && (st.Stop || len(st.Steers) != 1 || st.Steers[0].ID != 7 || st.Steers[0].Author != "maintainer" || st.Steers[0].Text != "use the helper") {
					err = fmt.Errorf("answer %+v: the steers were not read", st)
				}
				return err
			}},
		{name: "trailing data", status: 200, body: `{"stop":false} {}`, hits: 1, wantErr: "data after the JSON value", call: func(c *Client) error {
			_, err := c.WithRunToken(secretRunToken).ShouldStop(context.Background())
			return err
		}},
		{name: "task too large", status: 200, body: `{"title":"` + strings.Repeat("a", maxResponse) + `"}`, hits: 1, wantErr: "larger than", call: func(c *Client) error {
			_, err := c.WithRunToken(secretRunToken).Task(context.Background())
			return err
		}},
		{name: "task lacking its revision", status: 200, body: `{"work_item":"a/b#1","stage":"implement","title":"t","base_commit":"c"}`, hits: 1,
			wantErr: "lacks spec_revision", call: func(c *Client) error {
				_, err := c.WithRunToken(secretRunToken).Task(context.Background())
				return err
			}},
		{name: "call-back refused, run token redacted", status: 403, body: `{"error":"token RUN-TOKEN-SECRET expired"}`, hits: 1,
			wantErr: "serve refused /api/v1/run/progress: token [redacted] expired", call: func(c *Client) error {
				return c.WithRunToken(secretRunToken).Progress(context.Background(), wire.Progress{State: "verifying"})
			}},
		{name: "call-back without a run token", hits: 0, wantErr: "no run token", call: func(c *Client) error {
			return c.Progress(context.Background(), wire.Progress{State: "verifying"})
		}},
		{name: "report 500 repeated, then unreachable", status: 500, body: `{"error":"the call-back failed; try again"}`, hits: 3,
			wantErr: "serve unreachable at", call: func(c *Client) error {
				return c.WithRunToken(secretRunToken).Verdict(context.Background(), wire.Verdict{Document: `{"verdict": "approve"}`, HeadCommit: strings.Repeat("a", 40)})
			}},
		{name: "not serve", status: 404, body: `404 page not found`, hits: 1, wantErr: "is the URL that of bumper serve", call: func(c *Client) error {
			_, err := c.WithRunToken(secretRunToken).Task(context.Background())
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var hits atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				if tc.status == http.StatusTemporaryRedirect {
					http.Redirect(w, r, "https://elsewhere.example/steal", tc.status)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				fmt.Fprint(w, tc.body)
			}))
			defer srv.Close()
			c, err := New(srv.URL, WithRetry(3, time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			err = tc.call(c)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("err %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("err %v, want %q", err, tc.wantErr)
			case err != nil && strings.Contains(err.Error(), "SECRET"):
				t.Fatalf("a secret leaked into the error: %v", err)
			case hits.Load() != tc.hits:
				t.Fatalf("%d requests, want %d", hits.Load(), tc.hits)
			}
		})
	}
}

// TestRetryStopsWithContext: a cancelled context ends the waits between attempts.
func TestRetryStopsWithContext(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	c, err := New(srv.URL, WithRetry(10, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = c.WithRunToken("t").Task(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("err %v after %v", err, time.Since(start))
	}
}

// TestEvidenceReceipt: the evidence report returns serve's statement as sent, or why it
// has none; an older serve's 204 is a receipt with neither, not an error.
func TestEvidenceReceipt(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		status     int
		want       wire.EvidenceReceipt
		wantErr    string
	}{
		{name: "a statement", status: 200, body: `{"attestation":"{\"payloadType\":\"x\"}"}`, want: wire.EvidenceReceipt{Attestation: `{"payloadType":"x"}`}},
		{name: "why none", status: 200, body: `{"unattested":"no key"}`, want: wire.EvidenceReceipt{Unattested: "no key"}},
		{name: "an older serve", status: 204},
		{name: "garbled", status: 200, body: `{"attestation":`, wantErr: "does not decode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != wire.PathEvidence || r.Header.Get("Authorization") != "Bearer "+secretRunToken {
					t.Errorf("%s %q", r.URL.Path, r.Header.Get("Authorization"))
				}
				w.WriteHeader(tc.status)
				fmt.Fprint(w, tc.body)
			}))
			defer srv.Close()
			c, err := New(srv.URL, AllowInsecureHTTP())
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.WithRunToken(secretRunToken).Evidence(context.Background(), wire.Evidence{Digest: "sha256:x"})
			switch {
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("err %v, want %q", err, tc.wantErr)
			case tc.wantErr == "" && (err != nil || got != tc.want):
				t.Fatalf("receipt %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}
