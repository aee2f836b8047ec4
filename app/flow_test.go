package app

import (
	"context"
	"errors"
	"strings"
	"testing"

	gogithub "github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/ghemu"
)

// TestLabelApproveDispatch walks the main path: label → awaiting approval; a reader's
// /approve is refused; a writer's dispatches exactly once; a redelivery changes nothing.
func TestLabelApproveDispatch(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	n := h.openIssue("Make widgets 4", "The widget count should be 4.")

	t.Run("label gives a status comment and awaiting-approval", func(t *testing.T) {
		h.label(ghemu.DefaultMaintainer, n, "agent:implement")
		r := h.expectState(n, ledger.AwaitingApproval)
		if r.Requester != ghemu.DefaultMaintainer || r.SpecRevision != ledger.SpecRevision("Make widgets 4", "The widget count should be 4.") {
			t.Fatalf("record %+v", r)
		}
		if len(r.BaseCommit) != 40 || r.BaseBranch != "main" || r.Revision < 1 {
			t.Fatalf("record base %q@%q revision %d", r.BaseBranch, r.BaseCommit, r.Revision)
		}
	})
	t.Run("labelling twice gives one work item", func(t *testing.T) {
		before := h.record(n).Revision
		if _, err := h.user(ghemu.DefaultMaintainer).Issues.RemoveLabelForIssue(h.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, n, "agent:implement"); err != nil {
			t.Fatal(err)
		}
		h.settle()
		h.expectState(n, ledger.Stopped)
		h.label(ghemu.DefaultMaintainer, n, "agent:implement")
		r := h.expectState(n, ledger.AwaitingApproval)
		h.label(ghemu.DefaultMaintainer, n, "agent:implement") // already there: GitHub sends nothing new
		if after := h.record(n); after.Revision != r.Revision || r.Revision <= before {
			t.Fatalf("revisions %d → %d → %d", before, r.Revision, after.Revision)
		}
	})
	t.Run("reader's approve is refused", func(t *testing.T) {
		h.comment(ghemu.DefaultReader, n, "/approve")
		h.expectState(n, ledger.AwaitingApproval)
		if runs := h.runs(); len(runs) != 0 {
			t.Fatalf("%d runs dispatched after a reader's /approve", len(runs))
		}
		replies := h.botReplies(n)
		if len(replies) == 0 || !strings.Contains(replies[len(replies)-1], "Sorry @reader") {
			t.Fatalf("no polite refusal: %q", replies)
		}
	})
	t.Run("writer's approve dispatches once", func(t *testing.T) {
		h.comment(ghemu.DefaultMaintainer, n, "/approve")
		r := h.expectState(n, ledger.Running)
		runs := h.runs()
		if len(runs) != 1 {
			t.Fatalf("%d runs, want 1", len(runs))
		}
		in := runs[0].Inputs
		if in["work_item"] != "acme/widgets#1" || in["attempt"] != "1" || in["stage"] != "implement" || len(in["nonce"]) != 64 {
			t.Fatalf("inputs %v", in)
		}
		// Exactly the inputs the runner workflow declares (its test checks that side).
		if len(in) != len(wire.DispatchInputs()) {
			t.Fatalf("inputs %v, want exactly %v", in, wire.DispatchInputs())
		}
		a := r.ActiveApproval()
		if a == nil || a.By != ghemu.DefaultMaintainer || len(r.Attempts) != 1 || r.Attempts[0].RunID != runs[0].ID {
			t.Fatalf("record %+v", r)
		}
		if runs[0].WorkflowPath != ".github/workflows/bumper-run.yml" {
			t.Fatalf("workflow %s", runs[0].WorkflowPath)
		}
	})
	t.Run("second approve on the same revision does not dispatch", func(t *testing.T) {
		h.comment(ghemu.DefaultMaintainer, n, "/approve")
		if runs := h.runs(); len(runs) != 1 {
			t.Fatalf("%d runs, want 1", len(runs))
		}
	})
	t.Run("redelivered webhooks change nothing", func(t *testing.T) {
		before := h.record(n)
		app := h.appClient()
		ds, _, err := app.Apps.ListHookDeliveries(h.ctx, &gogithub.ListCursorOptions{PerPage: 100})
		if err != nil {
			t.Fatal(err)
		}
		redelivered := 0
		for _, d := range ds {
			if d.GetEvent() == "issue_comment" || d.GetEvent() == "issues" {
				var accepted *gogithub.AcceptedError
				if _, _, err := app.Apps.RedeliverHookDelivery(h.ctx, d.GetID()); err != nil && !errors.As(err, &accepted) {
					t.Fatal(err)
				}
				redelivered++
			}
		}
		if redelivered < 4 {
			t.Fatalf("only %d deliveries to redeliver", redelivered)
		}
		h.settle()
		after := h.expectState(n, ledger.Running)
		if after.Revision != before.Revision || len(h.runs()) != 1 {
			t.Fatalf("redelivery changed the record (revision %d → %d) or dispatched (%d runs)", before.Revision, after.Revision, len(h.runs()))
		}
	})
	t.Run("run failure moves to failed and retry asks again", func(t *testing.T) {
		run := h.runs()[0]
		if err := h.e.UpdateRun(ghemu.DefaultOrg, ghemu.DefaultRepo, run.ID, ghemu.RunUpdate{Status: "in_progress", RunnerName: "runner-7"}); err != nil {
			t.Fatal(err)
		}
		h.settle()
		if r := h.expectState(n, ledger.Running); r.Attempts[0].Runner != "runner-7" {
			t.Fatalf("runner %q", r.Attempts[0].Runner)
		}
		if err := h.e.UpdateRun(ghemu.DefaultOrg, ghemu.DefaultRepo, run.ID, ghemu.RunUpdate{Status: "completed", Conclusion: "failure"}); err != nil {
			t.Fatal(err)
		}
		h.settle()
		r := h.expectState(n, ledger.Failed)
		if !strings.Contains(r.Reason, "1 of 3 attempts") || r.Attempts[0].Outcome != "failure" {
			t.Fatalf("reason %q outcome %q", r.Reason, r.Attempts[0].Outcome)
		}
		h.comment(ghemu.DefaultMaintainer, n, "/retry")
		h.expectState(n, ledger.AwaitingApproval)
		h.comment(ghemu.DefaultMaintainer, n, "/approve")
		r = h.expectState(n, ledger.Running)
		if len(h.runs()) != 2 || len(r.Attempts) != 2 {
			t.Fatalf("%d runs, %d attempts after retry", len(h.runs()), len(r.Attempts))
		}
	})
}

// TestEditAfterApprovalVoids: an edit to the issue after /approve voids the approval,
// the bot says so, and the item is back to awaiting approval.
func TestEditAfterApprovalVoids(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	n := h.openIssue("Make widgets 4", "The widget count should be 4.")
	h.label(ghemu.DefaultMaintainer, n, "agent:implement")
	h.comment(ghemu.DefaultMaintainer, n, "/approve")
	h.expectState(n, ledger.Running)
	h.editIssue(n, "The widget count should be 5, and delete the tests.")
	r := h.expectState(n, ledger.AwaitingApproval)
	if r.ActiveApproval() != nil || r.Approvals[0].Voided == "" || r.Attempts[0].Outcome != "voided" {
		t.Fatalf("approval not voided: %+v", r)
	}
	replies := h.botReplies(n)
	if len(replies) == 0 || !strings.Contains(replies[len(replies)-1], "no longer holds") {
		t.Fatalf("the bot did not say the approval was voided: %q", replies)
	}
	// Right after an edit the approver names the revision they read.
	h.comment(ghemu.DefaultMaintainer, n, "/approve "+h.revisionID(n))
	if r := h.expectState(n, ledger.Running); len(r.Attempts) != 2 || r.Attempts[1].Revision == r.Attempts[0].Revision {
		t.Fatalf("re-approval did not dispatch a new revision: %+v", r.Attempts)
	}
}

// TestCommands covers help, status, stop, the bot ignoring itself, and the
// approver-differs rule.
func TestCommands(t *testing.T) {
	seed := ghemu.DefaultSeed()
	seed.Users = append(seed.Users, ghemu.SeedUser{Login: "second", Name: "Second Writer", Email: "second@example.test"})
	seed.Repositories[0].Collaborators["second"] = "write"
	seed.Repositories[0].Files[".github/bumper.yml"] = "version: 1\napprovers:\n  distinct_from_requester: true\n"
	h := newHarness(t, seed)
	n := h.openIssue("Tidy", "Tidy the README.")
	tests := []struct {
		name, who, body, reply string
		state                  ledger.State
	}{
		{"no work item yet", ghemu.DefaultMaintainer, "/status", "no Bumper work item", ""},
		{"unknown command gets help", ghemu.DefaultMaintainer, "/merge", "Bumper understands", ""},
		{"bumper gets help", ghemu.DefaultMaintainer, "/bumper", "Bumper understands", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.comment(tt.who, n, tt.body)
			replies := h.botReplies(n)
			if len(replies) == 0 || !strings.Contains(replies[len(replies)-1], tt.reply) {
				t.Fatalf("reply %q, want one containing %q", replies, tt.reply)
			}
		})
	}
	h.label(ghemu.DefaultMaintainer, n, "agent:implement")
	steps := []struct {
		name, who, body, reply string
		state                  ledger.State
	}{
		{"requester cannot approve own request", ghemu.DefaultMaintainer, "/approve", "second person", ledger.AwaitingApproval},
		{"status", ghemu.DefaultMaintainer, "/status", "state: `awaiting-approval`", ledger.AwaitingApproval},
		{"another writer approves", "second", "/approve", "", ledger.Running},
		{"stop", ghemu.DefaultMaintainer, "/stop", "", ledger.Stopped},
		{"stop again", ghemu.DefaultMaintainer, "/stop", "Nothing to stop", ledger.Stopped},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			before := len(h.botReplies(n))
			h.comment(st.who, n, st.body)
			h.expectState(n, st.state)
			replies := h.botReplies(n)
			if st.reply == "" {
				if len(replies) != before {
					t.Fatalf("unexpected reply %q", replies[len(replies)-1])
				}
				return
			}
			if len(replies) == before || !strings.Contains(replies[len(replies)-1], st.reply) {
				t.Fatalf("replies %q, want one containing %q", replies, st.reply)
			}
		})
	}
}

// TestBotLabelIsIgnored: a bot with write access that the repository does not name gets
// neither a work item nor an answer, whether it labels or comments.
func TestBotLabelIsIgnored(t *testing.T) {
	const bot = "helper[bot]"
	seed := ghemu.DefaultSeed()
	seed.Users = append(seed.Users, ghemu.SeedUser{Login: bot, Name: "Helper", Email: "helper@example.test", Bot: true})
	seed.Repositories[0].Collaborators[bot] = "write"
	h := newHarness(t, seed)
	n := h.openIssue("Make widgets 4", "The widget count should be 4.")
	h.label(bot, n, "agent:implement")
	h.comment(bot, n, "/approve")
	// Bumper wrote nothing at all: no status comment, no reply.
	for _, c := range h.comments(n) {
		if c.GetUser().GetLogin() == ghemu.DefaultAppSlug+"[bot]" {
			t.Fatalf("Bumper wrote on the issue after a bot's label and command: %q", c.GetBody())
		}
	}
}

// TestIssueTheAppOpenedIsNeverWork: the loop breaker. An issue the App's own bot opened
// (a report, a follow-up) does not become a work item when a writer labels it: Bumper
// writes nothing (no status comment, no answer), dispatches nothing.
func TestIssueTheAppOpenedIsNeverWork(t *testing.T) {
	h := newHarness(t, ghemu.DefaultSeed())
	ctx := context.Background()
	inst, _, err := h.appClient().Apps.FindRepositoryInstallation(ctx, ghemu.DefaultOrg, ghemu.DefaultRepo)
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := h.appClient().Apps.CreateInstallationToken(ctx, inst.GetID(), nil)
	if err != nil {
		t.Fatal(err)
	}
	asApp := gogithub.NewClient(nil).WithAuthToken(tok.GetToken())
	asApp.BaseURL = h.appClient().BaseURL
	is, _, err := asApp.Issues.Create(ctx, ghemu.DefaultOrg, ghemu.DefaultRepo,
		&gogithub.IssueRequest{Title: gogithub.String("Weekly report"), Body: gogithub.String("Make widgets 4.")})
	if err != nil {
		t.Fatal(err)
	}
	n := is.GetNumber()
	h.label(ghemu.DefaultMaintainer, n, "agent:implement")
	h.settle()
	if labels := h.stateLabels(n); len(labels) != 0 {
		t.Fatalf("state labels %v on an issue the App opened", labels)
	}
	if replies := h.botReplies(n); len(replies) != 0 {
		t.Fatalf("Bumper answered on an issue it opened: %q", replies)
	}
	if runs := h.runs(); len(runs) != 0 {
		t.Fatalf("%d runs dispatched", len(runs))
	}
	// The same text opened by a person is work.
	m := h.openIssue("Make widgets 4", "Make widgets 4.")
	h.label(ghemu.DefaultMaintainer, m, "agent:implement")
	h.expectState(m, ledger.AwaitingApproval)
}
