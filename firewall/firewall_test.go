package firewall

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/firewall/audit"
)

// TestNew checks what New refuses, in config terms.
func TestNew(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"ok", Config{Listen: "127.0.0.1:0", Audit: "a", Allow: []string{"a.test"}, Resolve: map[string]string{"a.test": "127.0.0.2", "B.test": "::ffff:127.0.0.1"}}, ""},
		{"no listen", Config{Audit: "a"}, "no listen address: set listen in the config"},
		{"no audit", Config{Listen: "x"}, "no audit log: set audit in the config"},
		{"bad allow entry", Config{Listen: "x", Audit: "a", Allow: []string{"bad entry"}}, "bad entry"},
		{"bad resolve name", Config{Listen: "x", Audit: "a", Resolve: map[string]string{"bad name": "127.0.0.1"}}, `resolve entry "bad name"`},
		{"resolve not ip", Config{Listen: "x", Audit: "a", Resolve: map[string]string{"a.test": "b.test"}}, "not an IP address"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fw, err := New(&tc.cfg)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("New: %v, want %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fw.overrides["a.test"].String() != "127.0.0.2" || fw.overrides["b.test"].String() != "127.0.0.1" {
				t.Fatalf("resolve pins %v", fw.overrides)
			}
		})
	}
	if _, err := New(&Config{Audit: "a"}); !errors.Is(err, ErrNoListen) {
		t.Errorf("New without listen: %v, want ErrNoListen", err)
	}
	if _, err := New(&Config{Listen: "x"}); !errors.Is(err, ErrNoAudit) {
		t.Errorf("New without audit: %v, want ErrNoAudit", err)
	}
}

// TestFirewallLifecycle starts a firewall as the command does, sends one allowed and one
// refused request, stops it and checks the lifecycle's promises: start once, Addr, Stop
// idempotent, the audit log flushed and verifying, Wait's answers.
func TestFirewallLifecycle(t *testing.T) {
	_, port := serveTCP(t, func(c net.Conn) {
		bufio.NewReader(c).ReadString('\n')
		io.WriteString(c, "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
	})
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	fw, err := New(&Config{Listen: "127.0.0.1:0", Audit: auditPath, Allow: []string{"up.test:" + port}, Resolve: map[string]string{"up.test": "127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	if fw.Addr() != "" {
		t.Errorf("Addr before Start = %q", fw.Addr())
	}
	if err := fw.Wait(t.Context()); err == nil {
		t.Error("Wait before Start returned no error")
	}
	if err := fw.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := fw.Start(t.Context()); !errors.Is(err, ErrStarted) {
		t.Errorf("second Start = %v, want ErrStarted", err)
	}
	addr := fw.Addr()
	if got := rawExchange(t, addr, "GET http://up.test:"+port+"/ HTTP/1.1\r\nHost: up.test:"+port+"\r\n\r\n"); !strings.HasPrefix(got, "HTTP/1.1 204") {
		t.Fatalf("allowed request: %q", got)
	}
	if got := rawExchange(t, addr, "CONNECT other.test:443 HTTP/1.1\r\n\r\n"); !strings.HasPrefix(got, "HTTP/1.1 403") {
		t.Fatalf("refused request: %q", got)
	}
	short, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if err := fw.Wait(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait on a running firewall = %v, want DeadlineExceeded", err)
	}
	waits := make(chan error, 3)
	for range cap(waits) {
		go func() { waits <- fw.Wait(context.Background()) }()
	}
	if err := fw.Stop(t.Context()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := fw.Stop(t.Context()); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	for range cap(waits) {
		if err := <-waits; err != nil {
			t.Errorf("Wait: %v", err)
		}
	}
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Error("the listener is still open after Stop")
	}
	f, _ := os.Open(auditPath)
	defer f.Close()
	h, err := audit.Verify(f, "")
	if err != nil || h.Lines != 2 {
		t.Fatalf("audit after Stop: %+v %v", h, err)
	}
}

// TestFirewallStopsWithContext: the end of Start's context stops the firewall as Stop
// does, and Wait returns.
func TestFirewallStopsWithContext(t *testing.T) {
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	fw, err := New(&Config{Listen: "127.0.0.1:0", Audit: auditPath, Allow: []string{"allowed.test"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	if err := fw.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rawExchange(t, fw.Addr(), "CONNECT denied.test:443 HTTP/1.1\r\n\r\n"); !strings.HasPrefix(got, "HTTP/1.1 403") {
		t.Fatalf("refused request: %q", got)
	}
	cancel()
	if err := fw.Wait(t.Context()); err != nil {
		t.Fatalf("Wait after the context ended: %v", err)
	}
	data, _ := os.ReadFile(auditPath)
	if !strings.Contains(string(data), "denied.test") {
		t.Fatalf("audit not flushed: %q", data)
	}
}

// TestFirewallStartFailure: a Start that fails undoes what it made, and Wait and a
// second Start say so; Stop before Start means it never starts.
func TestFirewallStartFailure(t *testing.T) {
	dir := t.TempDir()
	fw, err := New(&Config{Listen: "256.0.0.1:0", Audit: filepath.Join(dir, "audit.jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	err = fw.Start(t.Context())
	if err == nil || !strings.Contains(err.Error(), "failed to listen on 256.0.0.1:0") {
		t.Fatalf("Start = %v, want a listen failure", err)
	}
	if werr := fw.Wait(t.Context()); werr == nil || werr.Error() != err.Error() {
		t.Errorf("Wait after a failed Start = %v, want %v", werr, err)
	}
	if err := fw.Start(t.Context()); !errors.Is(err, ErrStarted) {
		t.Errorf("Start after a failed Start = %v, want ErrStarted", err)
	}
	// The audit log was opened, then closed by the cleanup stack: it can be reopened
	// and is empty.
	if data, err := os.ReadFile(filepath.Join(dir, "audit.jsonl")); err != nil || len(data) != 0 {
		t.Errorf("audit log after a failed Start: %q, %v", data, err)
	}

	missing := &Config{Listen: "127.0.0.1:0", Audit: filepath.Join(dir, "no", "such", "dir", "audit.jsonl")}
	fw, err = New(missing)
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Start(t.Context()); err == nil {
		t.Fatal("Start with an audit log that cannot be opened succeeded")
	}

	fw, err = New(&Config{Listen: "127.0.0.1:0", Audit: filepath.Join(dir, "never.jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Stop(t.Context()); err != nil {
		t.Errorf("Stop before Start: %v", err)
	}
	if err := fw.Start(t.Context()); !errors.Is(err, ErrStarted) {
		t.Errorf("Start after Stop = %v, want ErrStarted", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "never.jsonl")); err == nil {
		t.Error("a firewall stopped before Start opened its audit log")
	}
}
