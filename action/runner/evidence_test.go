package runner

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/rs/zerolog"

	"github.com/bumperdev/bumper/action/appclient"
	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/action/workspace"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
	"github.com/bumperdev/bumper/ghemu/gitserver"
	"github.com/bumperdev/bumper/internal/testgate"
)

// TestEvidenceRedactedBeforePublishing attacks the run's publication as an agent would
// that writes token-shaped text where the evidence quotes it: its decision ledger (a
// GitHub token, a fine-grained token, an Anthropic key) and the names of the tools it
// calls (an OpenAI key). The evidence is redacted before anything is published or
// written: the pull request, its check run, evidence.json and evidence.md hold none of
// them, and the run succeeds with the values redacted. A bundle that still does not
// validate once redacted stops the run before the pull request is opened.
func TestEvidenceRedactedBeforePublishing(t *testing.T) {
	testgate.Command(t, "git", "git")
	secrets := []string{
		"ghp_" + strings.Repeat("aB3dE", 8),
		"github_pat_" + strings.Repeat("Zz9_", 8),
		"sk-ant-api03-" + strings.Repeat("Xy7", 8),
		"sk-proj-" + strings.Repeat("Pq4", 8),
	}
	ledger := `{"schema_version": 1, "decisions": [
	 {"question": "Which token should the script use?", "choice": "The one I found: ` + secrets[0] + `", "confidence": 0.4},
	 {"question": "Where did it come from?", "choice": "config/ci.env", "rationale": "It held ` + secrets[1] + ` and ` + secrets[2] + `", "confidence": 0.6}
	]}`
	for _, tt := range []struct {
		name string
		// spoil, when set, makes the bundle invalid in a way redaction cannot mend.
		spoil bool
	}{
		{name: "redacted, then published"},
		{name: "still invalid once redacted", spoil: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := zerolog.Nop().WithContext(context.Background())
			e := emutest.New(t, ghemu.Options{StateDir: t.TempDir()})
			owner, repo := ghemu.DefaultOrg, ghemu.DefaultRepo
			perms := map[string]string{"contents": "write", "pull_requests": "write", "checks": "write", "issues": "write"}
			token := emutest.InstallationToken(t, e, owner, repo, perms)
			gh := github.NewClient(&http.Client{Timeout: 20 * time.Second}).WithAuthToken(token)
			gh.BaseURL, _ = url.Parse(e.BaseURL() + "/")
			refs, err := e.Git().Refs(ctx, owner, repo)
			if err != nil {
				t.Fatal(err)
			}
			base, branch := refs["refs/heads/main"], workspace.Branch(1, 1)
			if err := e.Git().UpdateRef(ctx, owner, repo, "refs/heads/"+branch, base, ""); err != nil {
				t.Fatal(err)
			}
			head, err := e.Git().CommitFiles(ctx, owner, repo, branch, base, map[string][]byte{"widgets.sh": []byte("echo 4\n")},
				"Count to 4", gitserver.Signature{Name: "Bumper", Email: "bumper@example.test"})
			if err != nil {
				t.Fatal(err)
			}
			f := &fakeServe{}
			client, err := appclient.New(f.start(t).URL)
			if err != nil {
				t.Fatal(err)
			}
			ev := realisticEvidence(t)
			ev.WorkItem = evidence.WorkItem{Repository: owner + "/" + repo, Issue: 1, Title: "Count to 4"}
			ev.Stage, ev.Attempt, ev.BaseCommit, ev.HeadCommit, ev.Branch = wire.StageImplement, 1, base, head, branch
			ev.Outcome, ev.OutcomeReason, ev.PullRequest, ev.Audit = "", "", 0, nil
			// As collectOut reads the agent's file, and the harness counts its tools.
			ev.Ledger = evidence.NewLedger([]byte(ledger), true)
			if ev.Ledger.Status != evidence.LedgerOK {
				t.Fatalf("the ledger does not parse: %s", ev.Ledger.Error)
			}
			ev.Harness.ToolCalls[secrets[3]] = 2
			if tt.spoil {
				ev.Commands = append(ev.Commands, evidence.Command{Phase: evidence.PhaseAgent})
			}
			out := t.TempDir()
			g := &grant{ExchangeResponse: wire.ExchangeResponse{BaseBranch: "main", BaseCommit: base, BotLogin: ghemu.DefaultAppSlug + "[bot]", InstallationToken: token},
				branch: branch, gh: gh, task: wire.Task{Title: "Count to 4"}}
			r := testRun(Config{WorkItem: wire.WorkItem{Repository: owner + "/" + repo, Issue: 1}, Stage: wire.StageImplement, Attempt: 1, Out: out,
				APIURL: e.BaseURL(), ServerURL: e.BaseURL()}, g)
			r.link = newLink(client.WithRunToken("rt"), time.Now().Add(time.Hour), time.Now)
			r.rec.ev = ev
			// As execute hands it on: the push is done, the session down (none here).
			p := produced{exchanged: exchanged{granted: &g.ExchangeResponse, link: r.link, grant: g}, pushed: head}
			var runErr error
			p.pull, runErr = step(ctx, r.rec, evidence.PhasePullRequest, func(ctx context.Context) (*pullRequest, string, error) {
				return r.openPull(ctx, p.pushed)
			})
			res, err := finish(ctx, r.cfg, r.rec, &p, runErr)

			// The run revoked its token: a maintainer reads what it published.
			reader := github.NewClient(&http.Client{Timeout: 20 * time.Second}).WithAuthToken(e.UserToken(ghemu.DefaultMaintainer))
			reader.BaseURL = gh.BaseURL
			pulls, _, lerr := reader.PullRequests.List(ctx, owner, repo, &github.PullRequestListOptions{State: "all"})
			if lerr != nil {
				t.Fatal(lerr)
			}
			checks, _, lerr := reader.Checks.ListCheckRunsForRef(ctx, owner, repo, head, nil)
			if lerr != nil {
				t.Fatal(lerr)
			}
			var published strings.Builder
			for _, p := range pulls {
				published.WriteString(p.GetBody())
			}
			for _, c := range checks.CheckRuns {
				published.WriteString(c.GetOutput().GetTitle() + c.GetOutput().GetSummary())
			}
			for _, name := range []string{EvidenceFile, EvidenceMarkdownFile} {
				data, rerr := os.ReadFile(filepath.Join(out, name))
				if rerr != nil {
					t.Fatalf("the run left no %s: %v", name, rerr)
				}
				for _, s := range secrets {
					if strings.Contains(string(data), s) {
						t.Errorf("%s holds %.14s…", name, s)
					}
				}
			}
			for _, s := range secrets {
				if strings.Contains(published.String(), s) {
					t.Errorf("the pull request or its check run holds %.14s…", s)
				}
				if res != nil && strings.Contains(res.Reason, s) {
					t.Errorf("the run's reason holds %.14s…", s)
				}
			}
			if tt.spoil {
				if err == nil || res.Outcome != evidence.OutcomeError || !strings.Contains(err.Error(), "no pull request was opened") {
					t.Fatalf("a bundle that does not validate: outcome %s, error %v; want the run stopped before the pull request", res.Outcome, err)
				}
				if len(pulls) != 0 || checks.GetTotal() != 0 {
					t.Fatalf("%d pull requests and %d check runs published with a bundle that does not validate", len(pulls), checks.GetTotal())
				}
				return
			}
			if err != nil || res.Outcome != evidence.OutcomeSuccess || len(pulls) != 1 || checks.GetTotal() != 1 {
				t.Fatalf("outcome %s, error %v, %d pull requests, %d check runs; want the pull request open with the redacted bundle",
					res.Outcome, err, len(pulls), checks.GetTotal())
			}
			if !strings.Contains(published.String(), "[redacted GitHub token]") {
				t.Errorf("the pull request does not show where the token was redacted:\n%s", published.String())
			}
			data, _ := os.ReadFile(filepath.Join(out, EvidenceFile))
			if _, perr := evidence.Parse(data); perr != nil {
				t.Errorf("evidence.json does not validate: %v", perr)
			}
		})
	}
}

// realisticEvidence is action/evidence's golden bundle.
func realisticEvidence(t *testing.T) *evidence.Evidence {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "evidence", "testdata", "realistic.json"))
	if err != nil {
		t.Fatal(err)
	}
	ev, err := evidence.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}
