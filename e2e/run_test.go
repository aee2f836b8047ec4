package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	gogithub "github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/action/evidence"
	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/ghemu"
)

// TestRunToPullRequest walks the arc a maintainer sees: label, approve, and a run that
// ends in a pull request with evidence. The scripted agent first tries to push to main
// and to create a ref through the API (both refused and audited), then makes a change
// verification refuses, and fixes it in the second round with the failure as feedback.
// serve's run tokens live 8 s here and the agent's first round takes longer: the run
// reports at the end only because it refreshed its token. The second round commits as
// the maintainer a message that would close #6 and #7, mention the maintainer and
// cross-reference #1, and leaves the fix for the runner to commit with the issue's
// title, which would close #7: the branch holds the App's commits, closing nothing.
func TestRunToPullRequest(t *testing.T) {
	w := newWorld(t, options{runTokenTTL: 8 * time.Second})
	n := w.openIssue("Fixes #7: count to 4", "test.sh wants 4 widgets, but widgets.sh prints 3.\n\nscenario: fix\npause: 10")
	w.label(n, "agent:implement")
	run := w.approve(n)
	done := w.wait(run)
	log := w.jobLog(run)
	if done.Conclusion != "success" {
		t.Fatalf("run %d ended %s:\n%s", run.ID, done.Conclusion, log)
	}
	out := w.out(run)
	ev := readEvidence(t, out)
	rec := w.record(n)

	t.Run("pull request opened by the App with the evidence", func(t *testing.T) {
		prs, _, err := w.user(ghemu.DefaultMaintainer).PullRequests.List(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, &gogithub.PullRequestListOptions{State: "open"})
		if err != nil || len(prs) != 1 {
			t.Fatalf("%d open pull requests (%v)", len(prs), err)
		}
		pr := prs[0]
		if pr.GetUser().GetLogin() != ghemu.DefaultAppSlug+"[bot]" || pr.GetHead().GetRef() != "bumper/1-1" || pr.GetBase().GetRef() != "main" ||
			!strings.Contains(pr.GetBody(), "Fixes #1") || pr.GetHead().GetSHA() != ev.HeadCommit || pr.GetNumber() != ev.PullRequest {
			t.Fatalf("pull request #%d by %s from %s (head %.12s) to %s; evidence says #%d at %.12s; body:\n%s", pr.GetNumber(), pr.GetUser().GetLogin(),
				pr.GetHead().GetRef(), pr.GetHead().GetSHA(), pr.GetBase().GetRef(), ev.PullRequest, ev.HeadCommit, pr.GetBody())
		}
		checks, _, err := w.user(ghemu.DefaultMaintainer).Checks.ListCheckRunsForRef(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, ev.HeadCommit, nil)
		if err != nil || checks.GetTotal() != 3 {
			t.Fatalf("check runs on the head: %+v (%v)", checks, err)
		}
		// The evidence, the output gates, which found nothing for a person, and serve's
		// signed statement of the run.
		for _, c := range checks.CheckRuns {
			if (c.GetName() != "bumper/evidence" && c.GetName() != "bumper/gates" && c.GetName() != "bumper/attestation") || c.GetConclusion() != "success" {
				t.Errorf("check run %s on the head: %s", c.GetName(), c.GetConclusion())
			}
		}
		if ev.Gates == nil || len(ev.Gates.Findings) != 0 {
			t.Errorf("the evidence's gates: %+v, want run and clean", ev.Gates)
		}
		main, _, err := w.user(ghemu.DefaultMaintainer).Repositories.GetBranch(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, "main", 0)
		if err != nil || main.GetCommit().GetSHA() != ev.BaseCommit {
			t.Fatalf("main moved to %.12s (base %.12s): %v", main.GetCommit().GetSHA(), ev.BaseCommit, err)
		}
	})
	t.Run("the branch holds the App's commits, which close, mention and reference nothing", func(t *testing.T) {
		bot, _, err := w.user(ghemu.DefaultMaintainer).Users.Get(w.ctx, ghemu.DefaultAppSlug+"[bot]")
		if err != nil {
			t.Fatal(err)
		}
		app := fmt.Sprintf("%s[bot] <%d+%s[bot]@users.noreply.127.0.0.1>", ghemu.DefaultAppSlug, bot.GetID(), ghemu.DefaultAppSlug)
		if ev.VerifiedCommit == "" || ev.VerifiedCommit == ev.HeadCommit {
			t.Errorf("evidence: head %s, verified %q", ev.HeadCommit, ev.VerifiedCommit)
		}
		live := regexp.MustCompile(`(?i)#[0-9]|gh-[0-9]|(^|[^a-z0-9_])@[a-z0-9]|https?://|co-authored-by`)
		var msgs []string
		for sha := ev.HeadCommit; sha != ev.BaseCommit; {
			c, err := w.e.Git().Commit(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, sha)
			if err != nil || len(c.Parents) != 1 {
				t.Fatalf("commit %s: %+v, %v", sha, c, err)
			}
			for _, who := range []string{c.Author.Name + " <" + c.Author.Email + ">", c.Committer.Name + " <" + c.Committer.Email + ">"} {
				if who != app {
					t.Errorf("commit %.12s %q is by %s, want %s", sha, c.Message, who, app)
				}
			}
			if m := live.FindString(c.Message); m != "" {
				t.Errorf("commit %.12s says %q live in:\n%s", sha, m, c.Message)
			}
			msgs, sha = append(msgs, c.Message), c.Parents[0]
		}
		all := strings.Join(msgs, "\n---\n")
		for _, want := range []string{"Fixes # 7: count to 4 (issue 1)", "Fixes # 6, closes # 7 @ maintainer see # 1", "![x](hxxps://outside/x.png)",
			`Agent-claimed-author: "maintainer <maintainer@example.test>"`, "Count to 5"} {
			if !strings.Contains(all, want) {
				t.Errorf("the messages lack %q:\n%s", want, all)
			}
		}
		if len(msgs) != 3 {
			t.Errorf("%d commits on the branch, want 3:\n%s", len(msgs), all)
		}
		pr, _, err := w.user(ghemu.DefaultMaintainer).PullRequests.Get(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo, ev.PullRequest)
		if err != nil || pr.GetTitle() != "Fixes # 7: count to 4" {
			t.Errorf("pull request title %q (%v)", pr.GetTitle(), err)
		}
	})
	t.Run("the record holds the evidence and the item waits for humans (reviewer: false)", func(t *testing.T) {
		digest, err := ev.Digest()
		if err != nil {
			t.Fatal(err)
		}
		a := rec.Attempts[0]
		if rec.State != ledger.InReview || rec.PullRequest != ev.PullRequest || a.EvidenceDigest != digest ||
			rec.AuditHead != ev.Audit.Head || a.HeadCommit != ev.HeadCommit || a.RunOutcome != "success" {
			t.Fatalf("record %s, pull request %d, attempt %+v, audit head %s; evidence digest %s, audit head %s", rec.State, rec.PullRequest, a, rec.AuditHead, digest, ev.Audit.Head)
		}
	})
	t.Run("evidence: two verification rounds, the ledger, the token revoked", func(t *testing.T) {
		if err := ev.Validate(); err != nil {
			t.Fatalf("evidence.json does not validate: %v", err)
		}
		if len(ev.Tests) != 2 || ev.Tests[0].Round != 1 || ev.Tests[0].ExitCode == 0 || ev.Tests[1].Round != 2 || ev.Tests[1].ExitCode != 0 {
			t.Fatalf("tests %+v, want round 1 failing and round 2 passing", ev.Tests)
		}
		if ev.Ledger.Status != evidence.LedgerOK || len(ev.Ledger.Decisions) != 2 || ev.Ledger.Decisions[0].Confidence != 0.8 {
			t.Fatalf("ledger %+v", ev.Ledger)
		}
		if ev.Diff.FilesChanged != 1 || ev.Diff.Files[0].Path != "widgets.sh" || ev.Outcome != evidence.OutcomeSuccess || !ev.Revocation.Revoked {
			t.Fatalf("diff %+v, outcome %s, revocation %+v", ev.Diff, ev.Outcome, ev.Revocation)
		}
		if !strings.Contains(log, "FAIL: widgets.sh printed 5, want 4") {
			t.Errorf("the job log lacks round 1's failure:\n%s", log)
		}
		// The run's token is the one scoped to the repository alone (serve's own are
		// the installation's); it was revoked, so a call with it now fails.
		var runTokens []ghemu.TokenInfo
		for _, tok := range w.e.InstallationTokens() {
			if len(tok.Repositories) == 1 {
				runTokens = append(runTokens, tok)
			}
		}
		if len(runTokens) != 1 || !runTokens[0].Revoked {
			t.Fatalf("the run's installation tokens: %+v", runTokens)
		}
		c := gogithub.NewClient(nil).WithAuthToken(runTokens[0].Value)
		c.BaseURL, _ = url.Parse(w.e.BaseURL() + "/")
		if _, resp, err := c.Repositories.Get(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("a call with the revoked token: %v", err)
		}
	})
	t.Run("the escape attempts were refused and audited", func(t *testing.T) {
		entries := readAuditLines(t, filepath.Join(out, "audit.jsonl"))
		var pushMain, refsAPI, fetched bool
		for _, e := range entries {
			switch {
			case e.Kind == "git" && !e.Allowed && strings.Contains(e.Reason, "pushes are closed"):
				pushMain = true
			case strings.Contains(e.Target, "/git/refs") && !e.Allowed:
				refsAPI = true
			case e.Kind == "git" && e.Allowed && strings.Contains(e.Target, "git-upload-pack"):
				fetched = true
			}
		}
		if !pushMain || !refsAPI || !fetched {
			t.Fatalf("audit: push to main refused %v, refs API refused %v, workspace fetch audited %v:\n%+v", pushMain, refsAPI, fetched, entries)
		}
		refs, err := w.e.Git().Refs(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := refs["refs/heads/evil"]; ok {
			t.Fatal("the agent created a ref")
		}
	})
	t.Run("the job's outputs and summary", func(t *testing.T) {
		if done.Outputs["pull_request"] != strconv.Itoa(ev.PullRequest) || done.Outputs["outcome"] != "success" || !strings.HasPrefix(done.Outputs["evidence_digest"], "sha256:") {
			t.Fatalf("outputs %v", done.Outputs)
		}
		summary, _ := w.e.RunSummary(ghemu.DefaultOrg, ghemu.DefaultRepo, run.ID)
		if !strings.Contains(summary, "Pull request: #"+strconv.Itoa(ev.PullRequest)) {
			t.Fatalf("job summary:\n%s", summary)
		}
	})
}

// TestRunOverBudget: an agent whose model call does not fit in the run's budget is
// refused by the firewall, and the run ends over_budget with the reason on the item.
func TestRunOverBudget(t *testing.T) {
	w := newWorld(t)
	n := w.openIssue("Count to a million", "Ask the model to count.\n\nscenario: spend")
	w.label(n, "agent:implement")
	run := w.approve(n)
	done := w.wait(run)
	log := w.jobLog(run)
	if done.Conclusion != "failure" {
		t.Fatalf("run ended %s, want failure:\n%s", done.Conclusion, log)
	}
	ev := readEvidence(t, w.out(run))
	rec := w.record(n)
	if ev.Outcome != evidence.OutcomeOverBudget || ev.Cost.MeteredCalls != 1 || ev.Cost.MeteredMicroUSD <= 0 || ev.Cost.BudgetMicroUSD != 50000 {
		t.Fatalf("outcome %s, cost %+v", ev.Outcome, ev.Cost)
	}
	if rec.State != ledger.Failed || rec.Attempts[0].RunOutcome != "over_budget" || !strings.Contains(rec.Reason, "budget") {
		t.Fatalf("record %s: %q", rec.State, rec.Reason)
	}
	w.model.mu.Lock()
	keys := w.model.keys
	w.model.mu.Unlock()
	if len(keys) != 1 || keys[0] != modelKey {
		t.Fatalf("the model server saw keys %q: want exactly the one small call, with the real key", keys)
	}
	// The job log masks registered secrets as ***: a *** would mean bumper printed one.
	if strings.Contains(log, modelKey) || strings.Contains(log, "***") || strings.Contains(readAll(t, w.out(run)), modelKey) {
		t.Fatalf("a secret appears in the job log or the artifact:\n%s", log)
	}
}

// TestRunnerKilledThenStopped: the runner is killed with SIGKILL mid-run; the item
// fails with a reason when the workflow run completes, /retry works, the next run on
// the host cleans up what the dead one left, and /stop ends that run within seconds
// with nothing pushed.
func TestRunnerKilledThenStopped(t *testing.T) {
	w := newWorld(t)
	n := w.openIssue("Take your time", "Work slowly.\n\nscenario: slow")
	w.label(n, "agent:implement")
	first := w.approve(n)
	w.waitLog(first, "agent: working slowly")
	pid := runnerPID(t, w.bin)
	left := recordsOf(t, pid)
	if len(left) != 1 || left[0].QEMUPID == 0 || !processAlive(left[0].QEMUPID) || !left[0].Network {
		t.Fatalf("run records of the runner while the agent works: %+v", left)
	}
	if err := killPID(pid); err != nil {
		t.Fatal(err)
	}
	done := w.wait(first)
	if done.Conclusion == "success" {
		t.Fatalf("a killed runner's run ended %s", done.Conclusion)
	}
	rec := w.record(n)
	if rec.State != ledger.Failed || !strings.Contains(rec.Reason, "attempt 1 ended") || !strings.Contains(rec.Reason, "/retry") {
		t.Fatalf("after the kill the item is %s: %q", rec.State, rec.Reason)
	}

	w.comment(ghemu.DefaultMaintainer, n, "/retry")
	second := w.approve(n)
	w.waitLog(second, "agent: working slowly")
	checkGone(t, left)
	live := recordsOf(t, runnerPID(t, w.bin))

	stopAt := time.Now()
	w.comment(ghemu.DefaultMaintainer, n, "/stop")
	gone := waitGone(t, live, time.Minute)
	t.Logf("/stop: the VM was gone %v after the comment", gone.Sub(stopAt).Round(100*time.Millisecond))
	w.wait(second)
	checkGone(t, live)
	var closed int
	for _, e := range readAuditLines(t, filepath.Join(w.out(second), "audit.jsonl")) {
		if e.Kind == "git" && !e.Allowed && strings.Contains(e.Reason, "pushes are closed") {
			closed++
		}
	}
	if closed == 0 {
		t.Fatal("the agent's pushes of its own branch are not refused in the audit log")
	}
	ev := readEvidence(t, w.out(second))
	if ev.Outcome != evidence.OutcomeStopped || ev.HeadCommit != "" || !ev.Revocation.Revoked {
		t.Fatalf("stopped run: outcome %s, head %q, revocation %+v", ev.Outcome, ev.HeadCommit, ev.Revocation)
	}
	refs, err := w.e.Git().Refs(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo)
	if err != nil {
		t.Fatal(err)
	}
	for ref := range refs {
		if strings.HasPrefix(ref, "refs/heads/bumper/") {
			t.Fatalf("something was pushed: %s", ref)
		}
	}
	if r := w.record(n); r.State != ledger.Stopped {
		t.Fatalf("after /stop the item is %s (%s)", r.State, r.Reason)
	}
}

// TestPlanRunThenImplement: with plan: true, the label dispatches a read-only plan run;
// its push is refused and its plan posted for approval; the approval of the plan
// dispatches the implement run, which opens the pull request.
func TestPlanRunThenImplement(t *testing.T) {
	w := newWorld(t, options{files: func(files map[string]string) {
		files[".github/bumper.yml"] = "version: 1\nplan: true\n" + strings.TrimPrefix(files[".github/bumper.yml"], "version: 1\n")
	}})
	n := w.openIssue("Count to 4", "test.sh wants 4 widgets.\n\nscenario: planned")
	before := len(w.runs())
	w.label(n, "agent:implement")
	runs := w.runs()
	if len(runs) != before+1 || runs[len(runs)-1].Inputs["stage"] != "plan" {
		t.Fatalf("labelling dispatched %d runs: %+v", len(runs)-before, runs)
	}
	plan := runs[len(runs)-1]
	if done := w.wait(plan); done.Conclusion != "success" {
		t.Fatalf("plan run ended %s:\n%s", done.Conclusion, w.jobLog(plan))
	}
	rec := w.record(n)
	if rec.State != ledger.AwaitingApproval || rec.PlanRevision == "" {
		t.Fatalf("after the plan run the item is %s (plan %q): %s", rec.State, rec.PlanRevision, rec.Reason)
	}
	var refused bool
	for _, e := range readAuditLines(t, filepath.Join(w.out(plan), "audit.jsonl")) {
		if e.Kind == "git" && !e.Allowed && e.Reason == "this run may not push" {
			refused = true
		}
	}
	if !refused {
		t.Fatalf("the plan run's push is not refused in its audit log; job log:\n%s", w.jobLog(plan))
	}
	refs, err := w.e.Git().Refs(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := refs["refs/heads/bumper/1-1"]; ok {
		t.Fatal("the plan run pushed its branch")
	}
	impl := w.approve(n)
	if impl.Inputs["stage"] != "implement" {
		t.Fatalf("the approval dispatched stage %q", impl.Inputs["stage"])
	}
	if done := w.wait(impl); done.Conclusion != "success" {
		t.Fatalf("implement run ended %s:\n%s", done.Conclusion, w.jobLog(impl))
	}
	ev := readEvidence(t, w.out(impl))
	if r := w.record(n); r.State != ledger.InReview || r.PullRequest == 0 || ev.Diff.FilesChanged != 1 {
		t.Fatalf("after the implement run the item is %s with pull request %d; diff %+v", r.State, r.PullRequest, ev.Diff)
	}
}

// TestPushedIsVerified: what verification judged is what is pushed, or nothing is. An
// agent whose own test moves the branch to an unverified commit during verification
// gets no push and no pull request; an agent that leaves a bundle of an unverified
// commit (locked against overwriting) where the runner writes its own gets the verified
// commit pushed, not its bundle.
func TestPushedIsVerified(t *testing.T) {
	w := newWorld(t)
	t.Run("the branch moved during verification", func(t *testing.T) {
		n := w.openIssue("Count to 4", "scenario: rewrite")
		w.label(n, "agent:implement")
		run := w.approve(n)
		if done := w.wait(run); done.Conclusion == "success" {
			t.Fatalf("the run succeeded:\n%s", w.jobLog(run))
		}
		ev := readEvidence(t, w.out(run))
		if ev.Outcome != evidence.OutcomeFailure || !strings.Contains(ev.OutcomeReason, "the work branch moved") || ev.PullRequest != 0 {
			t.Fatalf("outcome %s (%s), pull request %d", ev.Outcome, ev.OutcomeReason, ev.PullRequest)
		}
		// The agent also rewrote .github/bumper.yml without verification: the run kept the
		// base commit's policy and verified.
		if len(ev.Tests) != 1 || ev.Tests[0].Command != "sh test.sh" {
			t.Fatalf("verification %+v: the agent's .github/bumper.yml was obeyed", ev.Tests)
		}
		refs, err := w.e.Git().Refs(w.ctx, ghemu.DefaultOrg, ghemu.DefaultRepo)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := refs[fmt.Sprintf("refs/heads/bumper/%d-1", n)]; ok {
			t.Fatal("the unverified commit was pushed")
		}
	})
	t.Run("a file hidden from git", func(t *testing.T) {
		n := w.openIssue("Count to 4, quietly", "scenario: hide")
		w.label(n, "agent:implement")
		run := w.approve(n)
		if done := w.wait(run); done.Conclusion == "success" {
			t.Fatalf("the run succeeded:\n%s", w.jobLog(run))
		}
		ev := readEvidence(t, w.out(run))
		if ev.Outcome != evidence.OutcomeFailure || !strings.Contains(ev.OutcomeReason, "hid files from git") || len(ev.Tests) != 0 {
			t.Fatalf("outcome %s (%s), tests %+v", ev.Outcome, ev.OutcomeReason, ev.Tests)
		}
	})
	t.Run("a planted bundle", func(t *testing.T) {
		n := w.openIssue("Count to 4 again", "scenario: swap")
		w.label(n, "agent:implement")
		run := w.approve(n)
		if done := w.wait(run); done.Conclusion != "success" {
			t.Fatalf("the run ended %s:\n%s", done.Conclusion, w.jobLog(run))
		}
		diff, err := os.ReadFile(filepath.Join(w.out(run), "pr.diff"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(diff), "666") || !strings.Contains(string(diff), "+echo 4") {
			t.Fatalf("the pushed change is not the verified one:\n%s", diff)
		}
	})
}

// TestNoCommandsFromTheAgent: nothing the agent prints, and nothing bumper quotes of what
// it left (git's error naming a path it planted), becomes a workflow command in the job
// log: no mask hides the failure, which the log shows as text.
func TestNoCommandsFromTheAgent(t *testing.T) {
	w := newWorld(t)
	n := w.openIssue("Count to 4", "scenario: commands")
	w.label(n, "agent:implement")
	run := w.approve(n)
	if done := w.wait(run); done.Conclusion == "success" {
		t.Fatalf("the run succeeded although its bundle cannot be made:\n%s", w.jobLog(run))
	}
	log := w.jobLog(run)
	if strings.Contains(log, "***") || !strings.Contains(log, "FAIL") || !strings.Contains(log, "widgets") {
		t.Fatalf("the agent's text became a mask in the job log:\n%s", log)
	}
	if !strings.Contains(log, "##\u2060[add-mask]FAIL") {
		t.Fatalf("git's quoted error does not show the planted path defused:\n%s", log)
	}
}

func readEvidence(t testing.TB, out string) *evidence.Evidence {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(out, "evidence.json"))
	if err != nil {
		t.Fatalf("the run left no evidence.json: %v", err)
	}
	ev, err := evidence.Parse(data)
	if err != nil {
		t.Fatalf("evidence.json: %v", err)
	}
	return ev
}

type auditLine struct {
	Kind    string `json:"kind"`
	Method  string `json:"method"`
	Target  string `json:"target"`
	Allowed bool   `json:"allowed"`
	Reason  string `json:"reason"`
	Status  int    `json:"status"`
}

func readAuditLines(t testing.TB, path string) []auditLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []auditLine
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l auditLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}

// readAll concatenates every file of dir, to look for what must not be there.
func readAll(t testing.TB, dir string) string {
	t.Helper()
	var b strings.Builder
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			data, _ := os.ReadFile(p)
			b.Write(data)
		}
		return nil
	})
	return b.String()
}
