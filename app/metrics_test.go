package app

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/bumperdev/bumper/app/wire"
	"github.com/bumperdev/bumper/ghemu"
)

// scrape reads serve's /metrics with Prometheus' own text parser.
func scrape(t testing.TB, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics answered %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams
}

// sample finds the value of the series of family name whose labels include labels; ok
// is false when there is none.
func sample(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// TestMetrics drives serve through a labelled issue, an /approve and runner exchanges
// (granted and refused), plus webhooks it rejects, ignores and fails, then reads each
// count back from /metrics.
func TestMetrics(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	_, run := h.approved()

	good := exchangeRequest(h, run, h.runnerToken(run))
	replay := good
	replay.Nonce = "not-the-nonce"
	forged := good
	forged.OIDCToken = "not.a.token"
	for _, ex := range []struct {
		name string
		req  any
		want int
	}{
		{"wrong nonce", replay, http.StatusForbidden},
		{"forged OIDC token", forged, http.StatusForbidden},
		{"granted", good, http.StatusOK},
		{"granted twice", good, http.StatusForbidden},
		{"no JSON", "{", http.StatusBadRequest},
	} {
		if code, body := h.post(http.MethodPost, wire.PathTokenExchange, "", ex.req); code != ex.want {
			t.Fatalf("%s: exchange answered %d, want %d: %s", ex.name, code, ex.want, body)
		}
	}
	// Unsigned: rejected, and its made-up event name is not a label value.
	for _, event := range []string{"issues", "made_up_event"} {
		req, _ := http.NewRequest(http.MethodPost, h.hs.URL+h.cfg.Server.WebhookPath, strings.NewReader("{}"))
		req.Header.Set("X-GitHub-Event", event)
		req.Header.Set("X-GitHub-Delivery", "forged-"+event)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	// Signed, but no handler takes it.
	h.deliver("star", "star", map[string]any{"action": "created"})
	// Signed and handled, for an installation GitHub does not know: the handler fails,
	// and the answer is a 500, so that the redelivery sweep has GitHub send it again.
	if code := h.deliverAnswered("issues", "lost", map[string]any{"action": "labeled", "issue": map[string]any{"number": 9},
		"label": map[string]any{"name": "agent:implement"}, "sender": map[string]any{"login": ghemu.DefaultMaintainer},
		"repository":   map[string]any{"full_name": "nobody/nothing", "name": "nothing", "owner": map[string]any{"login": "nobody"}},
		"installation": map[string]any{"id": 987654321}}); code != http.StatusInternalServerError {
		t.Errorf("a delivery whose handling failed was answered %d, want 500", code)
	}

	fams := scrape(t, h.hs.URL)
	account := strings.ToLower(ghemu.DefaultOrg)
	tests := []struct {
		name   string
		metric string
		labels map[string]string
		// want is the exact value; min, when set, a lower bound instead (deliveries
		// caused by serve's own comments vary with its wording).
		want, min float64
	}{
		{"labelled issue handled", "bumper_webhook_deliveries_total", map[string]string{"event": "issues", "outcome": "handled"}, 0, 1},
		{"approve comment handled", "bumper_webhook_deliveries_total", map[string]string{"event": "issue_comment", "outcome": "handled"}, 0, 1},
		{"unsigned delivery rejected", "bumper_webhook_deliveries_total", map[string]string{"event": "issues", "outcome": "rejected"}, 1, 0},
		{"unknown event name bounded", "bumper_webhook_deliveries_total", map[string]string{"event": "other", "outcome": "rejected"}, 1, 0},
		{"event without handler ignored", "bumper_webhook_deliveries_total", map[string]string{"event": "star", "outcome": "ignored"}, 1, 0},
		{"handler error failed", "bumper_webhook_deliveries_total", map[string]string{"event": "issues", "outcome": "failed"}, 1, 0},
		{"handling timed", "bumper_webhook_handling_seconds", map[string]string{"event": "issue_comment"}, 0, 1},
		{"dispatch counted", "bumper_dispatches_total", map[string]string{"stage": "implement", "result": "dispatched"}, 1, 0},
		{"exchange granted", "bumper_token_exchanges_total", map[string]string{"outcome": "granted"}, 1, 0},
		{"nonce refusal", "bumper_token_exchanges_total", map[string]string{"outcome": "refused", "reason": "nonce"}, 2, 0},
		{"OIDC refusal", "bumper_token_exchanges_total", map[string]string{"outcome": "refused", "reason": "oidc"}, 1, 0},
		{"bad request refusal", "bumper_token_exchanges_total", map[string]string{"outcome": "refused", "reason": "bad_request"}, 1, 0},
		{"running item", "bumper_work_items", map[string]string{"state": "running"}, 1, 0},
		{"no item done", "bumper_work_items", map[string]string{"state": "done"}, 0, 0},
		{"no item ended yet, reported at 0", "bumper_items_outcome_total", map[string]string{"outcome": "done"}, 0, 0},
		{"no spend reported yet", "bumper_spend_usd_total", nil, 0, 0},
		{"GitHub reads", "bumper_github_api_requests_total", map[string]string{"method": "GET", "status_class": "2xx"}, 0, 1},
		{"GitHub writes", "bumper_github_api_requests_total", map[string]string{"method": "POST", "status_class": "2xx"}, 0, 1},
		{"installation's budget", "bumper_github_rate_limit_remaining", map[string]string{"account": account, "resource": "core"}, 0, 1},
		{"App's budget", "bumper_github_rate_limit_remaining", map[string]string{"account": "app", "resource": "core"}, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := sample(fams, tt.metric, tt.labels)
			switch {
			case !ok:
				t.Fatalf("no %s%v", tt.metric, tt.labels)
			case tt.min > 0 && got < tt.min:
				t.Fatalf("%s%v = %v, want at least %v", tt.metric, tt.labels, got, tt.min)
			case tt.min == 0 && got != tt.want:
				t.Fatalf("%s%v = %v, want %v", tt.metric, tt.labels, got, tt.want)
			}
		})
	}
	t.Run("budget below GitHub's limit", func(t *testing.T) {
		got, _ := sample(fams, "bumper_github_rate_limit_remaining", map[string]string{"account": account})
		if got >= 5000 {
			t.Fatalf("remaining %v: serve's requests were not taken off the budget", got)
		}
	})
	t.Run("no raw refusal text", func(t *testing.T) {
		for _, m := range fams["bumper_token_exchanges_total"].GetMetric() {
			for _, l := range m.GetLabel() {
				if strings.Contains(l.GetValue(), " ") {
					t.Fatalf("label %s=%q", l.GetName(), l.GetValue())
				}
			}
		}
	})
}

// TestReadiness checks /readyz answers 503 until the start-up rebuild succeeded, while
// /healthz answers from the start.
func TestReadiness(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	srv, err := New(h.ctx, h.cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	steps := []struct {
		name     string
		before   func()
		path     string
		wantCode int
		wantBody string
	}{
		{"alive before the rebuild", nil, "/healthz", http.StatusOK, "ok 0 work items"},
		{"not ready before the rebuild", nil, "/readyz", http.StatusServiceUnavailable, "not ready: the start-up rebuild"},
		{"ready after the rebuild", func() {
			if _, err := srv.Rebuild(h.ctx); err != nil {
				t.Fatal(err)
			}
		}, "/readyz", http.StatusOK, "ready"},
		{"still alive", nil, "/healthz", http.StatusOK, "ok"},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if st.before != nil {
				st.before()
			}
			code, body := probe(t, hs.URL+st.path)
			if code != st.wantCode || !strings.HasPrefix(body, st.wantBody) {
				t.Fatalf("%s answered %d %q, want %d %q", st.path, code, body, st.wantCode, st.wantBody)
			}
		})
	}
}

// TestMetricsListener runs serve with server.metrics_address: /metrics is served there
// and not on the webhook listener, and both answer the probes.
func TestMetricsListener(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	free := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return ln.Addr().String()
	}
	cfg := h.cfg
	cfg.Server.Address, cfg.Server.MetricsAddress = free(), free()
	cfg.Server.ShutdownTimeout = 5 * time.Second
	srv, err := New(h.ctx, cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(h.ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	get := func(addr, path string) (int, error) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	// Wait until the webhook listener is up, which is after the rebuild.
	for i := 0; ; i++ {
		if code, err := get(cfg.Server.Address, "/readyz"); err == nil && code == http.StatusOK {
			break
		}
		if i == 200 {
			t.Fatal("serve never became ready")
		}
		time.Sleep(25 * time.Millisecond)
	}
	tests := []struct {
		name, addr, path string
		want             int
	}{
		{"metrics on the metrics listener", cfg.Server.MetricsAddress, "/metrics", http.StatusOK},
		{"ready on the metrics listener", cfg.Server.MetricsAddress, "/readyz", http.StatusOK},
		{"alive on the metrics listener", cfg.Server.MetricsAddress, "/healthz", http.StatusOK},
		{"no metrics on the webhook listener", cfg.Server.Address, "/metrics", http.StatusNotFound},
		{"alive on the webhook listener", cfg.Server.Address, "/healthz", http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, err := get(tt.addr, tt.path)
			if err != nil || code != tt.want {
				t.Fatalf("GET %s%s: %d %v, want %d", tt.addr, tt.path, code, err, tt.want)
			}
		})
	}
}
