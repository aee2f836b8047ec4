// Package doctor is `bumper doctor`'s report: findings from the runner host's checks
// and the App's, each saying what is wrong and the exact fix, rendered for people or,
// in a stable JSON shape, for machines. The checks themselves live with what they
// check (action/hostdoctor for the host, app/appdoctor for the App and a repository).
package doctorreport

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Status is a finding's weight.
type Status string

// The statuses. Blocking means a run cannot happen (or cannot be trusted to) until it
// is fixed; a warning is worth fixing but no run waits on it.
const (
	OK       Status = "ok"
	Warning  Status = "warning"
	Blocking Status = "blocking"
)

// Finding is one check's result.
type Finding struct {
	// Check is a stable identifier such as "host.kvm" or "repo.workflow".
	Check  string `json:"check"`
	Status Status `json:"status"`
	// Detail is what was found.
	Detail string `json:"detail"`
	// Fix is the exact thing to do; empty when Status is ok.
	Fix string `json:"fix,omitempty"`
}

// Schema names the JSON shape; it changes only with a new name.
const Schema = "bumper-doctor/v1"

// Report is every finding, in the order they were checked.
type Report struct {
	Schema   string    `json:"schema"`
	OK       bool      `json:"ok"`
	Blocking int       `json:"blocking"`
	Warnings int       `json:"warnings"`
	Findings []Finding `json:"findings"`
}

// NewReport counts the findings.
func NewReport(findings []Finding) Report {
	r := Report{Schema: Schema, Findings: findings}
	if r.Findings == nil {
		r.Findings = []Finding{}
	}
	for _, f := range findings {
		switch f.Status {
		case Blocking:
			r.Blocking++
		case Warning:
			r.Warnings++
		}
	}
	r.OK = r.Blocking == 0
	return r
}

// WriteJSON writes the report as one JSON document.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("failed to write the report: %w", err)
	}
	return nil
}

// WriteText writes the report for a person: one finding a line, its fix under it.
func (r Report) WriteText(w io.Writer) {
	mark := map[Status]string{OK: "ok", Warning: "WARN", Blocking: "BLOCK"}
	for _, f := range r.Findings {
		fmt.Fprintf(w, "%-5s %s: %s\n", mark[f.Status], f.Check, oneLine(f.Detail))
		if f.Fix != "" {
			fmt.Fprintf(w, "      fix: %s\n", oneLine(f.Fix))
		}
	}
	switch {
	case r.Blocking > 0:
		fmt.Fprintf(w, "\n%d blocking, %d warnings: runs cannot work until the blocking ones are fixed.\n", r.Blocking, r.Warnings)
	case r.Warnings > 0:
		fmt.Fprintf(w, "\nNothing blocks a run; %d warnings.\n", r.Warnings)
	default:
		fmt.Fprintln(w, "\nEverything checked is in order.")
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
