package firewall

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/firewall/audit"
)

// TestInProcessSecretsAndRunFigures: a caller running the firewall in process (bumper
// run) hands the key over in Config.Secrets, which wins over the environment a process
// may have inherited; Usage and AuditHead give the run's figures, still after Stop.
func TestInProcessSecretsAndRunFigures(t *testing.T) {
	sse, err := os.ReadFile("testdata/basic_response.txt")
	if err != nil {
		t.Fatal(err)
	}
	const realKey = "sk-ant-real-in-process"
	t.Setenv(EnvAnthropicKey, "sk-ant-from-the-environment")
	var seen []string
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Header.Get("X-Api-Key"))
		if r.Header.Get("X-Api-Key") != realKey {
			http.Error(w, `{"type":"error","error":{"type":"authentication_error"}}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(sse)
	}))
	defer up.Close()
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	fw, err := New(&Config{Listen: "127.0.0.1:0", Audit: auditPath,
		Gateway: GatewayConfig{AnthropicBase: up.URL, CAFile: writeCA(t, up)},
		Budget:  BudgetConfig{USD: 2},
		Secrets: &Secrets{AnthropicKey: realKey}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := fw.AuditHead(); ok {
		t.Error("AuditHead before Start reports a head")
	}
	if err := fw.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	body := `{"model":"claude-sonnet-4-5","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	req, _ := http.NewRequest(http.MethodPost, "http://"+fw.Addr()+"/anthropic/v1/messages", strings.NewReader(body))
	req.Header.Set("X-Api-Key", "sentinel")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	// The whole stream, so the call is settled (and counted) before the firewall stops.
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(seen) != 1 || seen[0] != realKey {
		t.Fatalf("status %d; upstream saw keys %q, want only the in-process key", resp.StatusCode, seen)
	}
	if err := fw.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	u, ok := fw.Usage()
	if !ok || u.Calls != 1 || u.SpentUSD <= 0 || u.BudgetUSD != 2 {
		t.Fatalf("Usage after Stop = %+v, %v", u, ok)
	}
	head, ok := fw.AuditHead()
	f, err := os.Open(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want, err := audit.Verify(f, "")
	if err != nil || !ok || head != want || head.Lines == 0 {
		t.Fatalf("AuditHead after Stop = %+v (%v), the log verifies to %+v (%v)", head, ok, want, err)
	}
}

// TestUsageWithoutModelGateway: no model gateway, no usage to report.
func TestUsageWithoutModelGateway(t *testing.T) {
	fw, err := New(&Config{Listen: "127.0.0.1:0", Audit: filepath.Join(t.TempDir(), "a.jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer fw.Stop(t.Context())
	if _, ok := fw.Usage(); ok {
		t.Fatal("Usage reports a meter without a model gateway")
	}
}
