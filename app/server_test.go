package app

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestWebhookSignatureRequired(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	body := `{"action":"labeled","issue":{"number":1},"label":{"name":"agent:implement"},"installation":{"id":1}}`
	tests := []struct {
		name, sig string
		want      int
	}{
		{"unsigned", "", http.StatusBadRequest},
		{"wrong signature", "sha256=" + strings.Repeat("0", 64), http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, h.hs.URL+h.cfg.Server.WebhookPath, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-GitHub-Event", "issues")
			req.Header.Set("X-GitHub-Delivery", "forged-1")
			if tt.sig != "" {
				req.Header.Set("X-Hub-Signature-256", tt.sig)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}
	if h.srv.svc.Index().SeenDelivery("forged-1") {
		t.Fatal("a forged delivery reached the handlers")
	}
}

// TestRunServesAndShutsDown runs the server as `bumper serve` does: rebuild, listen,
// answer /healthz, and return cleanly when the context ends.
func TestRunServesAndShutsDown(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := h.cfg
	cfg.Server.Address = addr
	cfg.Server.ShutdownTimeout = 5 * time.Second
	srv, err := New(h.ctx, cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(h.ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	var body string
	for i := 0; i < 100; i++ {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(raw)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.HasPrefix(body, "ok") {
		t.Fatalf("/healthz answered %q", body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run returned %v after shutdown", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the context ended")
	}
	if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
		resp.Body.Close()
		t.Fatal("still listening after shutdown")
	}
}
