package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe to read while the command writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestEmulatorCommand(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	state := t.TempDir()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"emulator", "--listen", "127.0.0.1:0", "--state", state, "--validate"}, &stdout, &stderr)
	}()
	baseRE := regexp.MustCompile(`base URL:\s+(\S+)`)
	tokenRE := regexp.MustCompile(`user maintainer\s+token (\S+)`)
	deadline := time.Now().Add(60 * time.Second)
	for !tokenRE.MatchString(stdout.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("no banner; stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	out := stdout.String()
	base := baseRE.FindStringSubmatch(out)[1]
	token := tokenRE.FindStringSubmatch(out)[1]
	for _, want := range []string{"App ID:", "App private key:", "webhook secret:", "OIDC issuer:", "git clone"} {
		if !strings.Contains(out, want) {
			t.Errorf("banner lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(state, "app-private-key.pem")); err != nil {
		t.Errorf("App key not kept in --state: %v", err)
	}
	req, _ := http.NewRequest("GET", base+"/repos/acme/widgets/issues", nil)
	req.Header.Set("Authorization", "token "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.TrimSpace(string(body)) != "[]" {
		t.Fatalf("GET issues = %d %s", resp.StatusCode, body)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit code %d; stderr:\n%s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the emulator did not stop on cancel")
	}
	if !strings.Contains(stderr.String(), "1 REST exchanges and 1 webhooks checked, 0 mismatches") {
		t.Errorf("fidelity summary missing or wrong:\n%s", stderr.String())
	}
}

func TestEmulatorCommandBadSeed(t *testing.T) {
	seed := filepath.Join(t.TempDir(), "seed.yml")
	if err := os.WriteFile(seed, []byte("users: [{login: a, nope: 1}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"emulator", "--seed", seed, "--listen", "127.0.0.1:0"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "nope") {
		t.Fatalf("code %d, stderr %q", code, stderr.String())
	}
}

// TestEmulatorCommandFaults: --faults reads its plan strictly, and the banner tells the
// seed that replays the run.
func TestEmulatorCommandFaults(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yml")
	if err := os.WriteFile(bad, []byte("rest:\n  - route: /repos/{owner}/{repo}\n    bad_gatway: 0.1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"emulator", "--faults", bad, "--listen", "127.0.0.1:0"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "line 3: field bad_gatway not found") {
		t.Fatalf("code %d, stderr %q", code, stderr.String())
	}

	good := filepath.Join(dir, "faults.yml")
	if err := os.WriteFile(good, []byte("seed: 99\nrest:\n  - {route: \"/repos/{owner}/{repo}\", methods: [GET], unavailable: 1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"emulator", "--listen", "127.0.0.1:0", "--faults", good}, &out, &errOut)
	}()
	baseRE := regexp.MustCompile(`base URL:\s+(\S+)`)
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(out.String(), "faults:") {
		if time.Now().After(deadline) {
			t.Fatalf("no banner; stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(out.String(), "(seed 99)") {
		t.Errorf("banner lacks the seed:\n%s", out.String())
	}
	resp, err := http.Get(baseRE.FindStringSubmatch(out.String())[1] + "/repos/acme/widgets")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("GET repo = %d, want 503", resp.StatusCode)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, errOut.String())
	}
	if !strings.Contains(errOut.String(), "faults: 1 injected, unavailable 1") {
		t.Errorf("no counts at exit; stderr:\n%s", errOut.String())
	}
}

// TestEmulatorCommandRunner: with --runner, a dispatched run is executed by the shell
// command with the Actions environment, and its outcome is read on the control routes.
func TestEmulatorCommandRunner(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	step := `echo "run $GITHUB_RUN_ID of $GITHUB_REPOSITORY, stage $INPUT_STAGE, $EXTRA"; echo "stage=$INPUT_STAGE" >> "$GITHUB_OUTPUT"`
	go func() {
		done <- run(ctx, []string{"emulator", "--listen", "127.0.0.1:0", "--validate", "--runner", step,
			"--runner-workflow", "bumper-run.yml", "--runner-env", "EXTRA=extra", "--runner-timeout", "1m",
			"--runner-dir", t.TempDir()}, &stdout, &stderr)
	}()
	runnerRE := regexp.MustCompile(`runner:\s+sh -e -c .* \(runs of bumper-run.yml, 1 at a time\)`)
	deadline := time.Now().Add(60 * time.Second)
	for !runnerRE.MatchString(stdout.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("no runner line in the banner; stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	out := stdout.String()
	base := regexp.MustCompile(`base URL:\s+(\S+)`).FindStringSubmatch(out)[1]
	token := regexp.MustCompile(`user maintainer\s+token (\S+)`).FindStringSubmatch(out)[1]
	call := func(method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "token "+token)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := call("POST", "/repos/acme/widgets/actions/workflows/bumper-run.yml/dispatches",
		`{"ref":"main","return_run_details":true,"inputs":{"work_item":"acme/widgets#1","attempt":"1","nonce":"n","stage":"plan"}}`)
	var dispatched struct {
		ID int64 `json:"workflow_run_id"`
	}
	if err := json.Unmarshal([]byte(body), &dispatched); code != 200 || err != nil {
		t.Fatalf("dispatch = %d %s", code, body)
	}
	runPath := fmt.Sprintf("/_emulator/repos/acme/widgets/actions/runs/%d", dispatched.ID)
	code, body = call("GET", runPath+"?wait=30s", "")
	var info struct {
		Conclusion string            `json:"conclusion"`
		Outputs    map[string]string `json:"outputs"`
	}
	if err := json.Unmarshal([]byte(body), &info); code != 200 || err != nil || info.Conclusion != "success" || info.Outputs["stage"] != "plan" {
		t.Fatalf("run = %d %s", code, body)
	}
	want := fmt.Sprintf("run %d of acme/widgets, stage plan, extra\n", dispatched.ID)
	if code, body := call("GET", runPath+"/log", ""); code != 200 || body != want {
		t.Errorf("log = %d %q, want %q", code, body, want)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit code %d; stderr:\n%s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the emulator did not stop on cancel")
	}
	if !strings.Contains(stderr.String(), "1 REST exchanges and 7 webhooks checked, 0 mismatches") {
		t.Errorf("fidelity summary missing or wrong:\n%s", stderr.String())
	}
}

func TestEmulatorCommandRunnerFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--runner-workflow", "x.yml"}, "--runner-workflow need --runner"},
		{[]string{"--runner", "true", "--runner-parallel", "0"}, "--runner-parallel must be at least 1"},
		{[]string{"--runner", "true", "--runner-env", "NOEQUALS"}, `--runner-env "NOEQUALS" is not KEY=VALUE`},
		{[]string{"--runner", "true", "--runner-timeout", "-1s"}, "--runner-timeout must not be negative"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		args := append([]string{"emulator", "--listen", "127.0.0.1:0"}, tt.args...)
		if code := run(context.Background(), args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%v: code %d, stderr %q; want 2 and %q", tt.args, code, stderr.String(), tt.want)
		}
	}
}
