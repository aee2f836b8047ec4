package fidelity

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// webhookFixtureCount is the number of real payloads copied from
// ../shared/fixtures/webhooks; a lost file must fail the test, not shrink it.
const webhookFixtureCount = 64

// sharedWebhooks is loaded once per test binary, as the emulator shares one.
var sharedWebhooks = sync.OnceValues(LoadWebhooks)

func loadWebhooks(t testing.TB) *Webhooks {
	t.Helper()
	w, err := sharedWebhooks()
	if err != nil {
		t.Fatalf("LoadWebhooks: %v", err)
	}
	return w
}

func TestWebhooksValidateFixtures(t *testing.T) {
	w := loadWebhooks(t)
	files, err := filepath.Glob("testdata/webhooks/*/*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != webhookFixtureCount {
		t.Fatalf("found %d webhook fixtures under testdata/webhooks, want %d", len(files), webhookFixtureCount)
	}
	for _, f := range files {
		event := filepath.Base(filepath.Dir(f))
		t.Run(event+"/"+filepath.Base(f), func(t *testing.T) {
			body, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Validate(event, body); err != nil {
				t.Errorf("real %s payload rejected: %v", event, err)
			}
		})
	}
}

func TestWebhooksValidateRejects(t *testing.T) {
	w := loadWebhooks(t)
	issue := func(m map[string]any) map[string]any { return m["issue"].(map[string]any) }
	tests := []struct {
		name    string
		event   string
		fixture string
		edit    func(map[string]any)
		raw     string // used instead of fixture+edit when set
		want    []string
	}{
		{
			name: "missing required field", event: "issues", fixture: "issues/labeled.payload.json",
			edit: func(m map[string]any) { delete(issue(m), "user") },
			want: []string{`"issues$labeled"`, "/issue", "missing property 'user'"},
		},
		{
			name: "missing top-level field", event: "issue_comment", fixture: "issue_comment/created.payload.json",
			edit: func(m map[string]any) { delete(m, "comment") },
			want: []string{"(root)", "missing property 'comment'"},
		},
		{
			name: "wrong type", event: "issues", fixture: "issues/opened.payload.json",
			edit: func(m map[string]any) { issue(m)["number"] = "one" },
			want: []string{"/issue/number", "got string, want integer"},
		},
		{
			name: "value outside enum", event: "pull_request", fixture: "pull_request/opened.payload.json",
			edit: func(m map[string]any) { m["pull_request"].(map[string]any)["state"] = "maybe" },
			want: []string{"/pull_request/state"},
		},
		{
			name: "bad date-time", event: "issues", fixture: "issues/opened.payload.json",
			edit: func(m map[string]any) { issue(m)["created_at"] = "yesterday" },
			want: []string{"/issue/created_at", "date-time"},
		},
		{
			name: "impossible date", event: "issues", fixture: "issues/opened.payload.json",
			edit: func(m map[string]any) { issue(m)["created_at"] = "2019-02-30T10:00:00Z" },
			want: []string{"/issue/created_at", "date-time"},
		},
		{
			name: "bad uri", event: "issues", fixture: "issues/opened.payload.json",
			edit: func(m map[string]any) { issue(m)["html_url"] = "issues/1" },
			want: []string{"/issue/html_url", "uri"},
		},
		{
			name: "unknown action", event: "issues", fixture: "issues/opened.payload.json",
			edit: func(m map[string]any) { m["action"] = "frobbed" },
			want: []string{`action "frobbed" is not in the schema`, "labeled", "opened"},
		},
		{
			name: "action missing", event: "issues", fixture: "issues/opened.payload.json",
			edit: func(m map[string]any) { delete(m, "action") },
			want: []string{`no "action" field`},
		},
		{
			name: "action not a string", event: "issues", fixture: "issues/opened.payload.json",
			edit: func(m map[string]any) { m["action"] = 7 },
			want: []string{`"action" is`, "not a string"},
		},
		{
			name: "action of another event", event: "issue_comment", fixture: "issues/labeled.payload.json",
			want: []string{`issue_comment webhook action "labeled"`},
		},
		{
			name: "event without actions, wrong field", event: "ping", fixture: "ping/payload.json",
			edit: func(m map[string]any) { m["hook_id"] = "seven" },
			want: []string{`"ping$event"`, "/hook_id"},
		},
		{name: "unknown event", event: "frobnicate", raw: `{"action":"opened"}`, want: []string{`"frobnicate" is not in the octokit webhook schema`}},
		{name: "empty event", event: "", raw: `{}`, want: []string{"X-GitHub-Event"}},
		{name: "not JSON", event: "issues", raw: `{"action":`, want: []string{"not JSON"}},
		{name: "not an object", event: "issues", raw: `["opened"]`, want: []string{"not a JSON object"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := []byte(tt.raw)
			if tt.raw == "" {
				m := readJSON(t, filepath.Join("webhooks", tt.fixture))
				if tt.edit != nil {
					tt.edit(m)
				}
				var err error
				if body, err = json.Marshal(m); err != nil {
					t.Fatal(err)
				}
			}
			err := w.Validate(tt.event, body)
			if err == nil {
				t.Fatalf("Validate accepted a broken %s body", tt.event)
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

// TestWebhooksValidateConcurrent runs first uses of the same event from many goroutines,
// which race to compile its schema; run it with -race.
func TestWebhooksValidateConcurrent(t *testing.T) {
	w, err := LoadWebhooks() // fresh: nothing compiled yet
	if err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile("testdata/webhooks/issue_comment/edited.payload.json")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() { errs <- w.Validate("issue_comment", good) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent Validate: %v", err)
		}
	}
}
