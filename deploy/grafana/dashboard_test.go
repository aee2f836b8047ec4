// Package grafana holds the Grafana dashboard of serve's metrics (bumper.json); its test
// checks the dashboard against the repository: every metric a panel queries is one
// docs/operating.md documents, and the outcome and spend panels are there.
package grafana

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

type dashboard struct {
	UID    string  `json:"uid"`
	Panels []panel `json:"panels"`
}

type panel struct {
	ID      int    `json:"id"`
	Type    string `json:"type"`
	Title   string `json:"title"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

var metricName = regexp.MustCompile(`\bbumper_[a-z_]+`)

func TestDashboard(t *testing.T) {
	raw, err := os.ReadFile("bumper.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("bumper.json does not parse: %v", err)
	}
	doc, err := os.ReadFile("../../docs/operating.md")
	if err != nil {
		t.Fatal(err)
	}
	var ids []int
	queried := map[string]bool{}
	for _, p := range d.Panels {
		if slices.Contains(ids, p.ID) {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids = append(ids, p.ID)
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q queries nothing", p.Title)
		}
		for _, tg := range p.Targets {
			for _, m := range metricName.FindAllString(tg.Expr, -1) {
				queried[m] = true
				if !strings.Contains(string(doc), "| `"+m+"` |") {
					t.Errorf("panel %q queries %s, which docs/operating.md's metrics table does not list", p.Title, m)
				}
			}
		}
	}
	for _, m := range []string{"bumper_items_outcome_total", "bumper_spend_usd_total"} {
		if !queried[m] {
			t.Errorf("no panel shows %s", m)
		}
	}
}
