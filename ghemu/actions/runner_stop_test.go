package actions_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
)

func TestRunnerStopsRuns(t *testing.T) {
	e, rc := runnerEmulator(t, &ghemu.Runner{})
	ctx := emutest.Context(t)
	bot := emutest.InstallationClient(t, e)
	cancel := func(t *testing.T, id int64) int {
		t.Helper()
		resp, err := bot.Actions.CancelWorkflowRunByID(ctx, org, repo, id)
		var accepted *github.AcceptedError
		if err != nil && !errors.As(err, &accepted) {
			var er *github.ErrorResponse
			if errors.As(err, &er) {
				return er.Response.StatusCode
			}
			t.Fatal(err)
		}
		return resp.StatusCode
	}
	pid := func(t *testing.T, log string) int {
		t.Helper()
		m := regexp.MustCompile(`(?m)^pid=(\d+)$`).FindStringSubmatch(log)
		if m == nil {
			t.Fatalf("no pid in the log:\n%s", log)
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}

	tests := []struct {
		name       string
		stage      string
		stop       func(t *testing.T, id int64, log string)
		conclusion string
		exit       int
		log        string
	}{
		{"cancelled through the API", "sleep", func(t *testing.T, id int64, _ string) {
			if code := cancel(t, id); code != http.StatusAccepted {
				t.Fatalf("cancel = %d, want 202", code)
			}
		}, "cancelled", 128 + int(syscall.SIGINT), "##[error]The operation was canceled.\n"},
		{"a process ignoring SIGINT and SIGTERM is killed", "stubborn", func(t *testing.T, id int64, _ string) {
			if code := cancel(t, id); code != http.StatusAccepted {
				t.Fatalf("cancel = %d, want 202", code)
			}
		}, "cancelled", 128 + int(syscall.SIGKILL), "##[error]The operation was canceled.\n"},
		{"killed with SIGKILL from outside", "sleep", func(t *testing.T, _ int64, log string) {
			if err := syscall.Kill(pid(t, log), syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}, "failure", 128 + int(syscall.SIGKILL), "##[error]Process completed with exit code 137.\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := emutest.Dispatch(t, bot, ghemu.DefaultWorkflow, stageInputs(tt.stage))
			log := waitLog(t, e, id, "sleeping\n")
			if err := e.UpdateRun(org, repo, id, ghemu.RunUpdate{Status: "completed", Conclusion: "success"}); err == nil {
				t.Error("a run the local runner executes was completed by hand")
			}
			tt.stop(t, id, log)
			info, err := e.WaitRun(ctx, org, repo, id)
			if err != nil {
				t.Fatal(err)
			}
			logb, _ := e.RunLog(org, repo, id)
			if info.Conclusion != tt.conclusion || info.ExitCode == nil || *info.ExitCode != tt.exit ||
				!strings.HasSuffix(string(logb), tt.log) {
				t.Fatalf("run = %+v (exit %v), want %s, exit %d, log ending %q:\n%s", info, info.ExitCode, tt.conclusion, tt.exit, tt.log, logb)
			}
			if code := cancel(t, id); code != http.StatusConflict {
				t.Errorf("cancelling a completed run = %d, want 409", code)
			}
			if got, want := hookSeq(t, e, rc, id), started(tt.conclusion); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("webhooks = %v, want %v", got, want)
			}
		})
	}

	t.Run("a run waiting for the runner is cancelled before it starts", func(t *testing.T) {
		busy := emutest.Dispatch(t, bot, ghemu.DefaultWorkflow, stageInputs("sleep"))
		waitLog(t, e, busy, "sleeping\n")
		id := emutest.Dispatch(t, bot, ghemu.DefaultWorkflow, stageInputs("implement"))
		if info, _ := e.Run(org, repo, id); info.Status != "queued" || !info.LocalRunner {
			t.Fatalf("second run = %+v, want queued behind the first", info)
		}
		if code := cancel(t, id); code != http.StatusAccepted {
			t.Fatalf("cancel = %d", code)
		}
		info, err := e.WaitRun(ctx, org, repo, id)
		if err != nil || info.Conclusion != "cancelled" || info.ExitCode != nil || info.RunnerName != "" {
			t.Fatalf("run = %+v, %v", info, err)
		}
		if _, err := e.RunLog(org, repo, id); err == nil {
			t.Error("a run cancelled while queued has a log")
		}
		want := []string{"run:requested", "job:queued", "job:completed:cancelled", "run:completed:cancelled"}
		if got := hookSeq(t, e, rc, id); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("webhooks = %v, want %v", got, want)
		}
		if code := cancel(t, busy); code != http.StatusAccepted {
			t.Fatalf("cancel = %d", code)
		}
		if info, err := e.WaitRun(ctx, org, repo, busy); err != nil || info.Conclusion != "cancelled" {
			t.Fatalf("run = %+v, %v", info, err)
		}
	})
}

func TestRunnerTimeout(t *testing.T) {
	e, rc := runnerEmulator(t, &ghemu.Runner{Timeout: 300 * time.Millisecond, Name: "tiny"})
	ctx := emutest.Context(t)
	id := emutest.Dispatch(t, emutest.InstallationClient(t, e), ghemu.DefaultWorkflow, stageInputs("sleep"))
	info, err := e.WaitRun(ctx, org, repo, id)
	if err != nil {
		t.Fatal(err)
	}
	log, _ := e.RunLog(org, repo, id)
	want := "##[error]The job running on runner tiny-1 has exceeded the maximum execution time of 300ms.\n##[error]The operation was canceled.\n"
	if info.Conclusion != "cancelled" || !strings.HasSuffix(string(log), want) {
		t.Fatalf("run = %+v, log:\n%s", info, log)
	}
	if got := hookSeq(t, e, rc, id); strings.Join(got, " ") != strings.Join(started("cancelled"), " ") {
		t.Errorf("webhooks = %v", got)
	}
}

func TestRunnerRunsOnlyWhatItServes(t *testing.T) {
	tests := []struct {
		name     string
		runner   *ghemu.Runner
		workflow string
		inputs   map[string]any
		runs     bool
	}{
		{"no runner: runs stay queued", nil, ghemu.DefaultWorkflow, stageInputs("implement"), false},
		{"another workflow's runner", &ghemu.Runner{Workflows: []string{"plain.yml"}}, ghemu.DefaultWorkflow, stageInputs("implement"), false},
		{"named by file name", &ghemu.Runner{Workflows: []string{"plain.yml"}}, "plain.yml", map[string]any{"stage": "x"}, true},
		{"named by path", &ghemu.Runner{Workflows: []string{".github/workflows/bumper-run.yml"}}, ghemu.DefaultWorkflow, stageInputs("implement"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := runnerEmulator(t, tt.runner)
			id := emutest.Dispatch(t, emutest.InstallationClient(t, e), tt.workflow, tt.inputs)
			if tt.runs {
				if info, err := e.WaitRun(emutest.Context(t), org, repo, id); err != nil || info.Conclusion != "success" {
					t.Fatalf("run = %+v, %v", info, err)
				}
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			if info, err := e.WaitRun(ctx, org, repo, id); !errors.Is(err, context.DeadlineExceeded) || info.Status != "queued" || info.LocalRunner {
				t.Fatalf("run = %+v, %v; want it left queued", info, err)
			}
			if _, err := e.RunLog(org, repo, id); err == nil {
				t.Error("a run nobody executed has a log")
			}
			// Still moved by hand, as before.
			if err := e.UpdateRun(org, repo, id, ghemu.RunUpdate{Status: "completed", Conclusion: "success"}); err != nil {
				t.Fatal(err)
			}
			if info, err := e.WaitRun(emutest.Context(t), org, repo, id); err != nil || info.Conclusion != "success" {
				t.Fatalf("run = %+v, %v", info, err)
			}
		})
	}
}

func TestRunnerControlRoutes(t *testing.T) {
	e, _ := runnerEmulator(t, &ghemu.Runner{})
	id := emutest.Dispatch(t, emutest.InstallationClient(t, e), ghemu.DefaultWorkflow, stageInputs("implement"))
	base := e.BaseURL() + "/_emulator/repos/acme/widgets/actions/runs/" + strconv.FormatInt(id, 10)
	get := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("?wait=30s")
	var info ghemu.RunInfo
	if err := json.Unmarshal([]byte(body), &info); code != 200 || err != nil || info.Conclusion != "success" ||
		info.Outputs["greeting"] != "hello world" || info.ExitCode == nil || *info.ExitCode != 0 {
		t.Fatalf("GET run = %d %s", code, body)
	}
	if code, body := get("/log"); code != 200 || !strings.Contains(body, "env: GITHUB_RUN_ID="+strconv.FormatInt(id, 10)+"\n") {
		t.Errorf("GET log = %d %s", code, body)
	}
	if code, body := get("/summary"); code != 200 || body != "### Done\n\nstage implement\n" {
		t.Errorf("GET summary = %d %q", code, body)
	}
	if code, _ := get("?wait=never"); code != http.StatusUnprocessableEntity {
		t.Errorf("a bad wait got %d", code)
	}
	if code, _ := get("/nope"); code != http.StatusNotFound {
		t.Errorf("an unknown run route got %d", code)
	}
}

func TestRunnerParallel(t *testing.T) {
	e, _ := runnerEmulator(t, &ghemu.Runner{Parallel: 2})
	bot := emutest.InstallationClient(t, e)
	a := emutest.Dispatch(t, bot, ghemu.DefaultWorkflow, stageInputs("sleep"))
	b := emutest.Dispatch(t, bot, ghemu.DefaultWorkflow, stageInputs("sleep"))
	waitLog(t, e, a, "sleeping\n")
	waitLog(t, e, b, "sleeping\n")
	c := emutest.Dispatch(t, bot, ghemu.DefaultWorkflow, stageInputs("implement"))
	names := map[string]bool{}
	for _, id := range []int64{a, b} {
		info, _ := e.Run(org, repo, id)
		names[info.RunnerName] = true
	}
	if info, _ := e.Run(org, repo, c); info.Status != "queued" || !names["bumper-runner-1"] || !names["bumper-runner-2"] {
		t.Fatalf("third run = %+v, runners %v; want two runners busy and the third run queued", info, names)
	}
	if _, err := bot.Actions.CancelWorkflowRunByID(emutest.Context(t), org, repo, a); err != nil && !errors.As(err, new(*github.AcceptedError)) {
		t.Fatal(err)
	}
	info, err := e.WaitRun(emutest.Context(t), org, repo, c)
	if err != nil || info.Conclusion != "success" || info.RunnerName != "bumper-runner-1" {
		t.Fatalf("third run = %+v, %v; want it run on the freed runner", info, err)
	}
}

func TestRunnerCommandThatCannotStart(t *testing.T) {
	e := emutest.New(t, ghemu.Options{Runner: &ghemu.Runner{Command: []string{"/nonexistent/step"}}})
	id := emutest.Dispatch(t, emutest.InstallationClient(t, e), ghemu.DefaultWorkflow, stageInputs("implement"))
	info, err := e.WaitRun(emutest.Context(t), org, repo, id)
	log, _ := e.RunLog(org, repo, id)
	if err != nil || info.Conclusion != "failure" || info.ExitCode != nil || !strings.HasPrefix(string(log), "##[error]fork/exec /nonexistent/step") {
		t.Fatalf("run = %+v, %v; log %q", info, err, log)
	}
}
