package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/firewall"
	"github.com/bumperdev/bumper/firewall/audit"
)

// TestFirewallFlags checks how the flags layer over the config and what they refuse,
// with the flag that fixes it.
func TestFirewallFlags(t *testing.T) {
	tests := []struct {
		name  string
		cfg   firewall.Config
		flags firewallFlags
		want  string
	}{
		{"ok", firewall.Config{}, firewallFlags{Listen: "127.0.0.1:0", Audit: "a", Resolve: []string{"a.test:127.0.0.2", "b.test:[::1]"}}, ""},
		{"config supplies listen and audit", firewall.Config{Listen: "127.0.0.1:0", Audit: "a"}, firewallFlags{Resolve: []string{"a.test:127.0.0.2", "b.test:::1"}}, ""},
		{"no listen", firewall.Config{}, firewallFlags{Audit: "a"}, "no listen address: pass --listen or set listen in the config"},
		{"no audit", firewall.Config{}, firewallFlags{Listen: "x"}, "no audit log: pass --audit FILE or set audit in the config"},
		{"bad resolve", firewall.Config{}, firewallFlags{Listen: "x", Audit: "a", Resolve: []string{"a.test"}}, "want HOST:IP"},
		{"resolve not ip", firewall.Config{}, firewallFlags{Listen: "x", Audit: "a", Resolve: []string{"a.test:b.test"}}, "not an IP address"},
		{"resolve with zone", firewall.Config{}, firewallFlags{Listen: "x", Audit: "a", Resolve: []string{"a.test:[fe80::1%lo]"}}, "not an IP address"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cfg
			fw, err := newFirewall(&c, tc.flags)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), errUsage.Error()) {
					t.Fatalf("newFirewall: %v, want a usage error with %q", err, tc.want)
				}
				return
			}
			if err != nil || fw == nil {
				t.Fatalf("newFirewall: %v", err)
			}
			if c.Resolve["a.test"] != "127.0.0.2" || c.Resolve["b.test"] != "::1" {
				t.Fatalf("resolve map %v", c.Resolve)
			}
		})
	}
	// Flags win over the config and add to its lists.
	c := firewall.Config{Listen: "file:1", Audit: "file.jsonl", Allow: []string{"a.test"}, Resolve: map[string]string{"a.test": "127.0.0.9"}}
	if err := (firewallFlags{Listen: "flag:2", Allow: []string{"b.test"}, Resolve: []string{"a.test:127.0.0.2"}}).apply(&c); err != nil {
		t.Fatal(err)
	}
	if c.Listen != "flag:2" || c.Audit != "file.jsonl" || strings.Join(c.Allow, ",") != "a.test,b.test" || c.Resolve["a.test"] != "127.0.0.2" {
		t.Fatalf("layered config %+v", c)
	}
}

func TestFirewallUsage(t *testing.T) {
	dir := t.TempDir()
	badConfig := filepath.Join(dir, "bad.yml")
	if err := os.WriteFile(badConfig, []byte("allow_list: [a]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A GitHub gateway that does not know the run's repository would serve every
	// repository the token reads: the firewall refuses to start, saying which key to set.
	noRepo := filepath.Join(dir, "no-repo.yml")
	if err := os.WriteFile(noRepo, []byte("gateways:\n  github_api_base: https://api.github.com\n  api_allow: [\"GET /repos/*/*/contents/**\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(firewall.EnvGitHubToken, "ghs_test")
	audit := filepath.Join(dir, "audit.jsonl")
	runCLICases(t, []cliCase{
		{name: "gateway without repository", args: []string{"firewall", "--config", noRepo, "--listen", "127.0.0.1:0", "--audit", audit}, wantCode: 1, wantStderr: "no repository: set the run's repository (gateways.repository: owner/name)"},
		{name: "help", args: []string{"firewall", "--help"}, wantCode: 0, wantStderr: "--resolve"},
		{name: "no listen", args: []string{"firewall", "--audit", audit}, wantCode: 2, wantStderr: "pass --listen"},
		{name: "no audit", args: []string{"firewall", "--listen", "127.0.0.1:0"}, wantCode: 2, wantStderr: "pass --audit FILE"},
		{name: "bad resolve", args: []string{"firewall", "--listen", "127.0.0.1:0", "--audit", audit, "--resolve", "a.test"}, wantCode: 2, wantStderr: "want HOST:IP"},
		{name: "argument", args: []string{"firewall", "--listen", "127.0.0.1:0", "--audit", audit, "extra"}, wantCode: 2, wantStderr: `unexpected argument "extra"`},
		{name: "bad allow entry", args: []string{"firewall", "--listen", "127.0.0.1:0", "--audit", audit, "--allow", "bad entry"}, wantCode: 1, wantStderr: "bad entry"},
		{name: "bad config", args: []string{"firewall", "--config", badConfig}, wantCode: 1, wantStderr: "field allow_list not found"},
		{name: "cannot listen", args: []string{"firewall", "--listen", "256.0.0.1:0", "--audit", audit}, wantCode: 1, wantStderr: "failed to listen on 256.0.0.1:0"},
	})
}

// TestFirewallCommand runs `bumper firewall` as a user would: it says where it listens,
// serves an allowed and a refused request, and on the end of its context (the signal)
// stops with a flushed, verifying audit log.
func TestFirewallCommand(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			bufio.NewReader(c).ReadString('\n')
			io.WriteString(c, "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stdout, stderr syncBuffer // emulator_test.go
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"firewall", "--listen", "127.0.0.1:0", "--audit", auditPath,
			"--allow", "up.test:" + port, "--resolve", "up.test:127.0.0.1"}, &stdout, &stderr)
	}()
	var addr string
	for deadline := time.Now().Add(5 * time.Second); addr == ""; time.Sleep(10 * time.Millisecond) {
		if _, a, ok := strings.Cut(stdout.String(), "bumper firewall listening on "); ok {
			addr = strings.TrimSpace(a)
		}
		select {
		case c := <-code:
			t.Fatalf("firewall exited with %d: %s", c, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("firewall did not say where it listens; stderr: %s", stderr.String())
		}
	}
	exchange := func(raw string) string {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c, raw)
		line, _ := bufio.NewReader(c).ReadString('\n')
		return line
	}
	if got := exchange("GET http://up.test:" + port + "/ HTTP/1.1\r\nHost: up.test:" + port + "\r\n\r\n"); !strings.HasPrefix(got, "HTTP/1.1 204") {
		t.Fatalf("allowed request: %q", got)
	}
	if got := exchange("CONNECT other.test:443 HTTP/1.1\r\n\r\n"); !strings.HasPrefix(got, "HTTP/1.1 403") {
		t.Fatalf("refused request: %q", got)
	}
	cancel()
	select {
	case c := <-code:
		if c != 0 {
			t.Fatalf("exit code %d after the signal; stderr: %s", c, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the firewall did not stop when its context ended")
	}
	if !strings.Contains(stderr.String(), "resolve entry") || !strings.Contains(stderr.String(), "firewall stopped") {
		t.Errorf("log lacks the pin warning or the stop line:\n%s", stderr.String())
	}
	f, err := os.Open(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := audit.Verify(f, "")
	if err != nil || h.Lines != 2 {
		t.Fatalf("audit after the signal: %+v %v", h, err)
	}
}
