package firewall

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

	"github.com/bumperdev/bumper/firewall/audit"
)

func TestLoadConfig(t *testing.T) {
	c, err := LoadConfig("testdata/firewall.example.yml")
	if err != nil {
		t.Fatalf("example config: %v", err)
	}
	if c.Limits.IdleTimeout != time.Minute || c.Gateway.PushRef != "refs/heads/bumper/12-1" || c.Budget.USD != 5 || len(c.Allow) != 6 {
		t.Fatalf("decoded %+v", c)
	}
	dir := t.TempDir()
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown key", "listen: x\nallow_list: [a]\n", "field allow_list not found"},
		{"wrong type", "limits:\n  idle_timeout: soon\n", "line 2: cannot unmarshal"},
		{"nested unknown", "gateways:\n  token: ghs_x\n", "field token not found"},
		{"empty file", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".yml")
			os.WriteFile(p, []byte(tc.yaml), 0o600)
			_, err := LoadConfig(p)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestApplyFlags(t *testing.T) {
	tests := []struct {
		name  string
		flags Flags
		want  string
	}{
		{"ok", Flags{Listen: "127.0.0.1:0", Audit: "a", Resolve: []string{"a.test:127.0.0.2", "b.test:[::1]"}}, ""},
		{"no listen", Flags{Audit: "a"}, "no listen address"},
		{"no audit", Flags{Listen: "x"}, "no audit log"},
		{"bad resolve", Flags{Listen: "x", Audit: "a", Resolve: []string{"a.test"}}, "want HOST:IP"},
		{"resolve not ip", Flags{Listen: "x", Audit: "a", Resolve: []string{"a.test:b.test"}}, "not an IP address"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &Config{}
			err := c.Apply(tc.flags)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("Apply: %v, want %q", err, tc.want)
			}
			if tc.want == "" && (c.Resolve["a.test"] != "127.0.0.2" || c.Resolve["b.test"] != "::1") {
				t.Fatalf("resolve map %v", c.Resolve)
			}
		})
	}
}

// TestRun starts the firewall as the command does, sends one allowed and one refused
// request, stops it and checks that the audit log was flushed and verifies.
func TestRun(t *testing.T) {
	_, port := serveTCP(t, func(c net.Conn) {
		bufio.NewReader(c).ReadString('\n')
		io.WriteString(c, "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
	})
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	c := &Config{}
	if err := c.Apply(Flags{Listen: "127.0.0.1:0", Audit: auditPath, Allow: []string{"up.test:" + port}, Resolve: []string{"up.test:127.0.0.1"}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addrCh := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- Run(ctx, c, func(a string) { addrCh <- a }) }()
	var addr string
	select {
	case addr = <-addrCh:
	case err := <-done:
		t.Fatalf("Run: %v", err)
	}
	if got := rawExchange(t, addr, "GET http://up.test:"+port+"/ HTTP/1.1\r\nHost: up.test:"+port+"\r\n\r\n"); !strings.HasPrefix(got, "HTTP/1.1 204") {
		t.Fatalf("allowed request: %q", got)
	}
	if got := rawExchange(t, addr, "CONNECT other.test:443 HTTP/1.1\r\n\r\n"); !strings.HasPrefix(got, "HTTP/1.1 403") {
		t.Fatalf("refused request: %q", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	f, _ := os.Open(auditPath)
	defer f.Close()
	h, err := audit.Verify(f, "")
	if err != nil || h.Lines != 2 {
		t.Fatalf("audit after shutdown: %+v %v", h, err)
	}
}

func TestStart(t *testing.T) {
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	c := &Config{}
	if err := c.Apply(Flags{Listen: "127.0.0.1:0", Audit: auditPath, Allow: []string{"allowed.test"}}); err != nil {
		t.Fatal(err)
	}
	fw, err := Start(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if got := rawExchange(t, fw.Addr, "CONNECT denied.test:443 HTTP/1.1\r\n\r\n"); !strings.HasPrefix(got, "HTTP/1.1 403") {
		t.Fatalf("refused request: %q", got)
	}
	if err := fw.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	data, _ := os.ReadFile(auditPath)
	if !strings.Contains(string(data), "denied.test") {
		t.Fatalf("audit not flushed at Stop: %q", data)
	}

	bad := &Config{Listen: "127.0.0.1:0", Audit: auditPath, Allow: []string{"bad entry"}}
	if _, err := Start(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "bad entry") {
		t.Fatalf("Start with a bad allowlist: %v", err)
	}
}
