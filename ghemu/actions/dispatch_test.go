package actions_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
)

func TestWorkflowDispatchRunsAndOIDC(t *testing.T) {
	rc, hook := emutest.NewReceiver(t, 0)
	e := emutest.New(t, ghemu.Options{WebhookURL: hook, WebhookSecret: emutest.HookSecret})
	ctx := emutest.Context(t)
	bot := emutest.InstallationClient(t, e)
	inputs := map[string]interface{}{"work_item": "acme/widgets#1", "attempt": "1", "nonce": "n-123", "stage": "implement"}

	resp, err := bot.Actions.CreateWorkflowDispatchEventByFileName(ctx, org, repo, ghemu.DefaultWorkflow,
		github.CreateWorkflowDispatchEventRequest{Ref: "main", Inputs: inputs})
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("dispatch: %v", err)
	}

	t.Run("return_run_details answers with the run", func(t *testing.T) {
		body := map[string]any{"ref": "main", "inputs": inputs, "return_run_details": true}
		req, _ := bot.NewRequest("POST", "repos/acme/widgets/actions/workflows/"+ghemu.DefaultWorkflow+"/dispatches", body)
		var out struct {
			ID     int64  `json:"workflow_run_id"`
			RunURL string `json:"run_url"`
		}
		resp, err := bot.Do(ctx, req, &out)
		if err != nil || resp.StatusCode != http.StatusOK || out.ID == 0 {
			t.Fatalf("dispatch with details = %+v, %v", out, err)
		}
	})

	t.Run("the run's title is the workflow's run-name with the inputs", func(t *testing.T) {
		runs, _, err := bot.Actions.ListRepositoryWorkflowRuns(ctx, org, repo, &github.ListWorkflowRunsOptions{Event: "workflow_dispatch"})
		if err != nil || len(runs.WorkflowRuns) == 0 {
			t.Fatalf("runs = %v, %v", runs, err)
		}
		for _, r := range runs.WorkflowRuns {
			if got := r.GetDisplayTitle(); got != "bumper acme/widgets#1 attempt 1 implement" || r.GetName() != "bumper-run" {
				t.Errorf("run %d: display_title %q, name %q", r.GetID(), got, r.GetName())
			}
		}
	})

	t.Run("bad dispatches are refused", func(t *testing.T) {
		tests := []struct {
			name     string
			workflow string
			req      github.CreateWorkflowDispatchEventRequest
			want     int
		}{
			{"unknown workflow", "nope.yml", github.CreateWorkflowDispatchEventRequest{Ref: "main", Inputs: inputs}, 404},
			{"unknown ref", ghemu.DefaultWorkflow, github.CreateWorkflowDispatchEventRequest{Ref: "nope", Inputs: inputs}, 422},
			{"unexpected input", ghemu.DefaultWorkflow, github.CreateWorkflowDispatchEventRequest{Ref: "main",
				Inputs: map[string]interface{}{"work_item": "x", "attempt": "1", "nonce": "n", "stage": "plan", "evil": "1"}}, 422},
			{"missing required input", ghemu.DefaultWorkflow, github.CreateWorkflowDispatchEventRequest{Ref: "main",
				Inputs: map[string]interface{}{"work_item": "x"}}, 422},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				resp, err := bot.Actions.CreateWorkflowDispatchEventByFileName(ctx, org, repo, tt.workflow, tt.req)
				emutest.WantStatus(t, &github.Response{Response: resp.Response}, err, tt.want)
			})
		}
	})

	runs, _, err := bot.Actions.ListRepositoryWorkflowRuns(ctx, org, repo, nil)
	if err != nil || runs.GetTotalCount() != 2 {
		t.Fatalf("runs = %+v, %v", runs, err)
	}
	run := runs.WorkflowRuns[1] // oldest first dispatched
	if run.GetStatus() != "queued" || run.GetEvent() != "workflow_dispatch" || run.GetPath() != ".github/workflows/"+ghemu.DefaultWorkflow {
		t.Fatalf("run = %+v", run)
	}

	t.Run("a runner gets an OIDC token that verifies against the issuer", func(t *testing.T) {
		infos, err := e.Runs(org, repo)
		if err != nil || len(infos) != 2 || infos[0].Inputs["nonce"] != "n-123" {
			t.Fatalf("run infos = %+v, %v", infos, err)
		}
		req, _ := http.NewRequestWithContext(ctx, "GET", infos[0].OIDCRequestURL+"?audience=bumper", nil)
		req.Header.Set("Authorization", "Bearer "+infos[0].OIDCRequestToken)
		hr, err := http.DefaultClient.Do(req)
		if err != nil || hr.StatusCode != 200 {
			t.Fatalf("id token request: %v %v", hr, err)
		}
		var tok struct{ Value string }
		if err := json.NewDecoder(hr.Body).Decode(&tok); err != nil {
			t.Fatal(err)
		}
		hr.Body.Close()
		provider, err := oidc.NewProvider(ctx, e.OIDCIssuerURL())
		if err != nil {
			t.Fatal(err)
		}
		idt, err := provider.Verifier(&oidc.Config{ClientID: "bumper"}).Verify(ctx, tok.Value)
		if err != nil {
			t.Fatal(err)
		}
		var claims struct {
			Repository  string `json:"repository"`
			WorkflowRef string `json:"workflow_ref"`
			RunID       string `json:"run_id"`
			Ref         string `json:"ref"`
		}
		if err := idt.Claims(&claims); err != nil {
			t.Fatal(err)
		}
		if claims.Repository != org+"/"+repo || claims.Ref != "refs/heads/main" ||
			claims.WorkflowRef != org+"/"+repo+"/.github/workflows/"+ghemu.DefaultWorkflow+"@refs/heads/main" {
			t.Errorf("claims = %+v", claims)
		}
		req.Header.Set("Authorization", "Bearer wrong")
		hr, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		hr.Body.Close()
		if hr.StatusCode != http.StatusUnauthorized {
			t.Errorf("a wrong request token got %d, want 401", hr.StatusCode)
		}
	})

	t.Run("runs move queued to completed with webhooks", func(t *testing.T) {
		id := run.GetID()
		if err := e.UpdateRun(org, repo, id, ghemu.RunUpdate{Status: "in_progress", RunnerName: "r1"}); err != nil {
			t.Fatal(err)
		}
		if err := e.UpdateRun(org, repo, id, ghemu.RunUpdate{Status: "completed", Conclusion: "success"}); err != nil {
			t.Fatal(err)
		}
		if err := e.UpdateRun(org, repo, id, ghemu.RunUpdate{Status: "in_progress"}); err == nil {
			t.Error("a completed run moved back to in_progress")
		}
		got, _, err := bot.Actions.GetWorkflowRunByID(ctx, org, repo, id)
		if err != nil || got.GetStatus() != "completed" || got.GetConclusion() != "success" {
			t.Fatalf("run = %+v, %v", got, err)
		}
		jobs, _, err := bot.Actions.ListWorkflowJobs(ctx, org, repo, id, nil)
		if err != nil || jobs.GetTotalCount() != 1 || jobs.Jobs[0].GetRunnerName() != "r1" {
			t.Fatalf("jobs = %+v, %v", jobs, err)
		}
		if err := e.WaitWebhooks(ctx); err != nil {
			t.Fatal(err)
		}
		var seq []string
		for _, ev := range rc.Got() {
			switch p := ev.Payload.(type) {
			case *github.WorkflowRunEvent:
				if p.GetWorkflowRun().GetID() == id {
					seq = append(seq, "run:"+p.GetAction())
				}
			case *github.WorkflowJobEvent:
				if p.GetWorkflowJob().GetRunID() == id {
					seq = append(seq, "job:"+p.GetAction())
				}
			}
		}
		want := []string{"run:requested", "job:queued", "run:in_progress", "job:in_progress", "job:completed", "run:completed"}
		if len(seq) != len(want) {
			t.Fatalf("webhooks = %v, want %v", seq, want)
		}
		for i := range want {
			if seq[i] != want[i] {
				t.Fatalf("webhooks = %v, want %v", seq, want)
			}
		}
	})
}

func TestMintedOIDCTokensExpire(t *testing.T) {
	e := emutest.New(t, ghemu.Options{})
	ctx := emutest.Context(t)
	tok, err := e.MintOIDCToken(ghemu.OIDCClaims{Audience: "bumper", Repository: "acme/widgets",
		Ref: "refs/heads/main", IssuedAt: time.Now().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	provider, err := oidc.NewProvider(ctx, e.OIDCIssuerURL())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := provider.Verifier(&oidc.Config{ClientID: "bumper"}).Verify(ctx, tok); err == nil {
		t.Fatal("an expired ID token verified")
	}
	if _, err := e.MintOIDCToken(ghemu.OIDCClaims{Repository: "acme/widgets"}); err == nil {
		t.Fatal("a token without an audience was minted")
	}
}
