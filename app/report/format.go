package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bumperdev/bumper/app/ledger"
)

// Formats are the names --format takes.
var Formats = []string{"table", "json", "csv"}

// Write writes the report in one of Formats.
func Write(w io.Writer, r Report, format string) error {
	var err error
	switch format {
	case "table":
		err = writeTable(w, r)
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		err = enc.Encode(r)
	case "csv":
		err = writeCSV(w, r)
	default:
		return fmt.Errorf("failed to write the report: format %q is not one of %s", format, strings.Join(Formats, ", "))
	}
	if err != nil {
		return fmt.Errorf("failed to write the report: %w", err)
	}
	return nil
}

// metric is one row of the table: its name, its CSV column, and how to read it off a
// summary for people (text) and for programs (raw: plain numbers, dollars without a
// sign, durations in seconds).
type metric struct {
	name, key string
	text, raw func(Summary) string
}

func metrics() []metric {
	same := func(name, key string, f func(Summary) string) metric { return metric{name, key, f, f} }
	count := func(name, key string, f func(Summary) int) metric {
		return same(name, key, func(s Summary) string { return strconv.Itoa(f(s)) })
	}
	perItem := func(name, key string, f func(Summary) int) metric {
		return metric{name, key, func(s Summary) string {
			if s.Items == 0 {
				return "-"
			}
			return strconv.FormatFloat(float64(f(s))/float64(s.Items), 'f', 2, 64)
		}, func(s Summary) string {
			if s.Items == 0 {
				return ""
			}
			return strconv.FormatFloat(float64(f(s))/float64(s.Items), 'f', 2, 64)
		}}
	}
	dur := func(name, key string, f func(Summary) time.Duration) metric {
		return metric{name, key, func(s Summary) string { return Duration(f(s)) },
			func(s Summary) string { return strconv.FormatInt(int64(f(s)/time.Second), 10) }}
	}
	usd := func(name, key string, f func(Summary) int64, none func(Summary) bool) metric {
		return metric{name, key, func(s Summary) string {
			if none(s) {
				return "-"
			}
			return USD(f(s))
		}, func(s Summary) string {
			if none(s) {
				return ""
			}
			return strings.Replace(USD(f(s)), "$", "", 1)
		}}
	}
	never := func(Summary) bool { return false }
	ms := []metric{count("items", "items", func(s Summary) int { return s.Items })}
	for _, st := range ledger.States() {
		ms = append(ms, count("state "+string(st), "state_"+strings.ReplaceAll(string(st), "-", "_"), func(s Summary) int { return s.States[st] }))
	}
	return append(ms,
		count("pull requests merged (accepted)", "merged", func(s Summary) int { return s.Merged }),
		count("merged zero-touch", "zero_touch", func(s Summary) int { return s.ZeroTouch }),
		count("pull requests closed unmerged", "closed_unmerged", func(s Summary) int { return s.ClosedUnmerged }),
		count("pull requests open (pending)", "open", func(s Summary) int { return s.Open }),
		perItem("runs per item", "runs_per_item", func(s Summary) int { return s.Runs }),
		perItem("attempts per item", "attempts_per_item", func(s Summary) int { return s.Attempts }),
		perItem("rounds per item", "rounds_per_item", func(s Summary) int { return s.Rounds }),
		dur("approval to pull request p50", "approval_to_pull_p50_s", func(s Summary) time.Duration { return s.ApprovalToPull.P50 }),
		dur("approval to pull request mean", "approval_to_pull_mean_s", func(s Summary) time.Duration { return s.ApprovalToPull.Mean }),
		dur("approval to merge p50", "approval_to_merge_p50_s", func(s Summary) time.Duration { return s.ApprovalToMerge.P50 }),
		dur("approval to merge mean", "approval_to_merge_mean_s", func(s Summary) time.Duration { return s.ApprovalToMerge.Mean }),
		usd("model spend", "spend_usd", func(s Summary) int64 { return s.SpendMicroUSD }, never),
		usd("model spend per item", "spend_per_item_usd", Summary.SpendPerItem, func(s Summary) bool { return s.Items == 0 }),
		usd("model spend per merged pull request", "spend_per_merged_usd", Summary.SpendPerMerged, func(s Summary) bool { return s.Merged == 0 }),
		count("unreadable records", "unreadable", func(s Summary) int { return s.Unreadable }),
	)
}

// columns are the report's summaries in column order: each repository, then the total
// (left out when there is one repository: it would repeat it).
func columns(r Report) []Summary {
	if len(r.Repositories) == 1 {
		return r.Repositories
	}
	return append(append([]Summary(nil), r.Repositories...), r.Total)
}

// Table is the report as rows: a header (the metric's column, then one per summary) and
// one row per metric.
func Table(r Report) [][]string {
	cols := columns(r)
	head := []string{"metric"}
	for _, s := range cols {
		head = append(head, s.Repository)
	}
	rows := [][]string{head}
	for _, m := range metrics() {
		row := []string{m.name}
		for _, s := range cols {
			row = append(row, m.text(s))
		}
		rows = append(rows, row)
	}
	return rows
}

// USD writes micro-USD as dollars to the cent, rounded half up.
func USD(micro int64) string {
	sign := ""
	if micro < 0 {
		sign, micro = "-", -micro
	}
	cents := (micro + 5_000) / 10_000
	return fmt.Sprintf("%s$%d.%02d", sign, cents/100, cents%100)
}

// Duration writes a duration to the minute ("-" for none).
func Duration(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	d = d.Round(time.Minute)
	if d == 0 {
		return "<1m"
	}
	h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
	switch {
	case h >= 24:
		return fmt.Sprintf("%dd%dh", h/24, h%24)
	case h > 0:
		return fmt.Sprintf("%dh%02dm", h, m)
	default:
		return fmt.Sprintf("%dm", m)
	}
}

// Notes are what a reader must know to read the figures: the window, whether the
// records were verified, the records that could not be read.
func Notes(r Report) []string {
	var out []string
	if r.Since.IsZero() {
		out = append(out, "Items: every issue with a bumper: state label.")
	} else {
		out = append(out, "Items: issues with a bumper: state label created or updated since "+r.Since.UTC().Format(time.RFC3339)+".")
	}
	if !r.Verified {
		out = append(out, "Records unverified: their signatures were not checked (give serve's configuration with its run_token_key to check them).")
	}
	for _, p := range r.Problems {
		out = append(out, "Unreadable record: "+p)
	}
	return out
}

func writeTable(w io.Writer, r Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i, row := range Table(r) {
		fmt.Fprintln(tw, strings.Join(row, "\t"))
		if i == 0 {
			dashes := make([]string, len(row))
			for j, c := range row {
				dashes[j] = strings.Repeat("-", len(c))
			}
			fmt.Fprintln(tw, strings.Join(dashes, "\t"))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range Notes(r) {
		if _, err := fmt.Fprintln(w, n); err != nil {
			return err
		}
	}
	return nil
}

// writeCSV writes one record per summary (every repository, then the total) under a
// header of the metrics' keys: the table turned on its side, one row per repository,
// with plain numbers (dollars without a sign, durations in seconds, empty for none).
func writeCSV(w io.Writer, r Report) error {
	cw := csv.NewWriter(w)
	ms := metrics()
	head := []string{"repository"}
	for _, m := range ms {
		head = append(head, m.key)
	}
	if err := cw.Write(head); err != nil {
		return err
	}
	for _, s := range append(append([]Summary(nil), r.Repositories...), r.Total) {
		row := []string{s.Repository}
		for _, m := range ms {
			row = append(row, m.raw(s))
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// Markdown is the body of the `bumper:report` issue: the same table, and the notes. The
// unreadable records are counted, not quoted: their errors may quote what someone else
// wrote into a status comment. It holds no time of its own, so a report of the same
// figures is the same body (the edit time says when it last changed).
func Markdown(r Report) string {
	var b strings.Builder
	b.WriteString(marker + "\n")
	b.WriteString("What Bumper's work items came to, kept up to date by `bumper report --post` (docs/report.md): " +
		"the body is rewritten in place, so edits to it are lost.\n\n")
	for i, row := range Table(r) {
		cells := make([]string, len(row))
		for j, c := range row {
			cells[j] = strings.ReplaceAll(c, "|", `\|`)
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
		if i == 0 {
			b.WriteString("|" + strings.Repeat("---|", len(row)) + "\n")
		}
	}
	b.WriteString("\n")
	problems := r.Problems
	r.Problems = nil
	for _, n := range Notes(r) {
		b.WriteString("- " + n + "\n")
	}
	if len(problems) > 0 {
		fmt.Fprintf(&b, "- %d record(s) could not be read; `bumper report` names them.\n", len(problems))
	}
	return b.String()
}

// marker opens the report issue's body.
const marker = "<!-- bumper:report -->"
