package gates

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"
)

// fakeOSV is OSV's batch API over testdata/osv-advisories.json, as api.osv.dev answers
// POST /v1/querybatch. It counts the queries it was asked.
func fakeOSV(t testing.TB) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	data, err := os.ReadFile("testdata/osv-advisories.json")
	if err != nil {
		t.Fatal(err)
	}
	var advisories []struct {
		Ecosystem, Name, Version string
		IDs                      []string
	}
	if err := json.Unmarshal(data, &advisories); err != nil {
		t.Fatal(err)
	}
	var asked atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/querybatch" {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		var req struct{ Queries []osvQuery }
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		type vuln struct {
			ID       string `json:"id"`
			Modified string `json:"modified"`
		}
		type result struct {
			Vulns []vuln `json:"vulns,omitempty"`
		}
		resp := struct {
			Results []result `json:"results"`
		}{Results: make([]result, len(req.Queries))}
		for i, q := range req.Queries {
			asked.Add(1)
			for _, a := range advisories {
				if a.Ecosystem == q.Package.Ecosystem && a.Name == q.Package.Name && a.Version == q.Version {
					for _, id := range a.IDs {
						resp.Results[i].Vulns = append(resp.Results[i].Vulns, vuln{ID: id, Modified: "2024-01-01T00:00:00Z"})
					}
				}
			}
		}
		_ = json.NewEncoder(w).Encode(resp)
	}))
	t.Cleanup(srv.Close)
	return srv, &asked
}

// TestOSVUnreachable: an OSV that cannot be reached, or answers what is not its
// response, is a finding that says so, never a silent pass.
func TestOSVUnreachable(t *testing.T) {
	down := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	down.Close()
	wrong := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"results":[]}`)) }))
	defer wrong.Close()
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "busy", http.StatusServiceUnavailable) }))
	defer failing.Close()
	files := []File{{Path: "go.mod", Added: []Line{{N: 5, Text: "\tgithub.com/pkg/errors v0.9.1"}}}}
	for name, url := range map[string]string{"closed": down.URL, "short answer": wrong.URL, "503": failing.URL} {
		t.Run(name, func(t *testing.T) {
			r := Check(t.Context(), Input{Files: files}, Config{OSVURL: url})
			if r.OSV == nil || r.OSV.Checked || r.OSV.Error == "" {
				t.Fatalf("OSV = %+v, want not checked, with why", r.OSV)
			}
			if len(r.ForReview()) != 1 || r.ForReview()[0].Gate != GateDependencies {
				t.Fatalf("findings %+v: want one dependencies finding saying OSV was not asked", r.Findings)
			}
		})
	}
}
