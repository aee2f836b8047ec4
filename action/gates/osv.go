package gates

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/bumperdev/bumper/internal/textcut"
)

// osvBatch bounds the queries of one request (OSV takes 1000).
const osvBatch = 1000

// osvTimeout bounds the lookup when the caller's client has no timeout.
const osvTimeout = 30 * time.Second

type osvQuery struct {
	Package struct {
		Name      string `json:"name"`
		Ecosystem string `json:"ecosystem"`
	} `json:"package"`
	Version string `json:"version"`
}

type osvResponse struct {
	Results []struct {
		Vulns []struct {
			ID string `json:"id"`
		} `json:"vulns"`
	} `json:"results"`
}

// checkOSV asks OSV's batch API about each dependency with a version and records its
// advisories; a dependency with an advisory is a finding. An OSV that cannot be reached
// or answers what cannot be read is a finding too: what was not checked is said.
func checkOSV(ctx context.Context, cfg Config, deps []Dependency, findings []Finding) (*OSV, []Finding) {
	base := strings.TrimRight(cfg.OSVURL, "/")
	if base == "" {
		base = DefaultOSVURL
	}
	st := &OSV{URL: base, Checked: true}
	var idx []int
	for i, d := range deps {
		if d.Version != "" {
			idx = append(idx, i)
		}
	}
	for start := 0; start < len(idx); start += osvBatch {
		part := idx[start:min(start+osvBatch, len(idx))]
		ids, err := queryOSV(ctx, cfg, base, deps, part)
		if err != nil {
			st.Checked, st.Error = false, textcut.Fit(err.Error(), MaxMessage, textcut.Ellipsis)
			findings = append(findings, Finding{Gate: GateDependencies, File: deps[part[0]].File, Action: cfg.ActionOf(GateDependencies),
				Message: fmt.Sprintf("%d dependencies were not checked for advisories: %s", len(idx)-start, err)})
			break
		}
		for k, i := range part {
			deps[i].Advisories = ids[k]
			if len(ids[k]) > 0 {
				d := deps[i]
				findings = append(findings, Finding{Gate: GateDependencies, File: d.File, Line: d.Line, Action: cfg.ActionOf(GateDependencies),
					Message: fmt.Sprintf("%s %s %s has known advisories: %s", d.Ecosystem, d.Name, d.Version, strings.Join(d.Advisories, ", "))})
			}
		}
	}
	return st, findings
}

// queryOSV posts one batch and returns each query's advisory ids.
func queryOSV(ctx context.Context, cfg Config, base string, deps []Dependency, part []int) ([][]string, error) {
	qs := make([]osvQuery, len(part))
	for k, i := range part {
		qs[k].Package.Name, qs[k].Package.Ecosystem, qs[k].Version = deps[i].Name, deps[i].Ecosystem, deps[i].Version
		if deps[i].Ecosystem == ecoGo {
			// OSV's Go versions are written without go.mod's v.
			qs[k].Version = strings.TrimPrefix(qs[k].Version, "v")
		}
	}
	body, err := json.Marshal(map[string]any{"queries": qs})
	if err != nil {
		return nil, fmt.Errorf("failed to encode the OSV query: %w", err)
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: osvTimeout}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/querybatch", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("failed to ask OSV at %s: %w", base, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("OSV at %s could not be reached: %w", base, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return nil, fmt.Errorf("failed to read OSV's answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("OSV at %s answered %s", base, resp.Status)
	}
	var r osvResponse
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("OSV's answer is not its batch response: %w", err)
	}
	if len(r.Results) != len(part) {
		return nil, fmt.Errorf("OSV answered %d results for %d queries", len(r.Results), len(part))
	}
	out := make([][]string, len(part))
	for k, res := range r.Results {
		for _, v := range res.Vulns {
			if len(out[k]) < 1000 && v.ID != "" {
				out[k] = append(out[k], textcut.Fit(v.ID, 200, textcut.Ellipsis))
			}
		}
	}
	return out, nil
}
