package main

import (
	"bytes"
	"context"
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
