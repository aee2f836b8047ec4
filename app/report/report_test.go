package report_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/app/ledger"
	"github.com/bumperdev/bumper/app/report"
	"github.com/bumperdev/bumper/app/wire"
)

func TestUSD(t *testing.T) {
	for _, tc := range []struct {
		micro int64
		want  string
	}{
		{0, "$0.00"}, {4_999, "$0.00"}, {5_000, "$0.01"}, {2_672_634, "$2.67"}, {2_675_000, "$2.68"},
		{123_456_789, "$123.46"}, {-15_000, "-$0.02"},
	} {
		if got := report.USD(tc.micro); got != tc.want {
			t.Errorf("USD(%d) = %q; want %q", tc.micro, got, tc.want)
		}
	}
}

func TestDuration(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "-"}, {20 * time.Second, "<1m"}, {90 * time.Second, "2m"}, {3*time.Hour + 4*time.Minute, "3h04m"},
		{50 * time.Hour, "2d2h"},
	} {
		if got := report.Duration(tc.d); got != tc.want {
			t.Errorf("Duration(%v) = %q; want %q", tc.d, got, tc.want)
		}
	}
}

func TestByBot(t *testing.T) {
	const bot = "bumper[bot]"
	for _, tc := range []struct {
		name string
		c    report.Commit
		want bool
	}{
		{"matched to the bot", report.Commit{AuthorLogin: bot}, true},
		{"matched to a person, whatever its name line", report.Commit{AuthorLogin: "mae", AuthorName: bot}, false},
		{"the bot's noreply address with its id", report.Commit{AuthorEmail: "4242+bumper[bot]@users.noreply.github.com"}, true},
		{"the bot's noreply address without an id", report.Commit{AuthorEmail: "bumper[bot]@users.noreply.ghe.example"}, true},
		{"another bot's noreply address", report.Commit{AuthorEmail: "7+other[bot]@users.noreply.github.com"}, false},
		{"a person's address under the bot's name", report.Commit{AuthorName: bot, AuthorEmail: "mae@example.test"}, false},
		{"the bot's name alone", report.Commit{AuthorName: bot}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := report.ByBot(tc.c, bot); got != tc.want {
				t.Errorf("ByBot(%+v) = %v; want %v", tc.c, got, tc.want)
			}
		})
	}
}

// item makes an item with a record whose attempts cost costs, approved at t0.
func item(repo string, n int, st ledger.State, pull *report.Pull, zeroTouch bool, costs ...int64) report.Item {
	rec := &ledger.Record{Repository: repo, Issue: n, State: st,
		Approvals: []ledger.Approval{{Approval: wire.Approval{By: "mae", At: t0}}}}
	for i, c := range costs {
		stage := wire.Stage(wire.StageImplement)
		if i > 0 {
			stage = wire.StageRevise
		}
		rec.Attempts = append(rec.Attempts, ledger.Attempt{Number: i + 1, Stage: stage, CostMicroUSD: c})
	}
	return report.Item{Repository: repo, Issue: n, State: st, Record: rec, Pull: pull, ZeroTouch: zeroTouch}
}

var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

func TestBuild(t *testing.T) {
	merged := func(toPull, toMerge time.Duration) *report.Pull {
		return &report.Pull{State: "closed", Merged: true, CreatedAt: t0.Add(toPull), MergedAt: t0.Add(toMerge)}
	}
	items := []report.Item{
		item("acme/a", 1, ledger.Done, merged(time.Hour, 2*time.Hour), true, 1_000_000),
		item("acme/a", 2, ledger.Done, merged(3*time.Hour, 10*time.Hour), false, 1_000_000, 500_000),
		item("acme/a", 3, ledger.Failed, nil, false, 2_000_000),
		item("acme/b", 1, ledger.Stopped, &report.Pull{State: "closed", CreatedAt: t0.Add(time.Hour)}, false, 100_000),
		item("acme/b", 2, ledger.InReview, &report.Pull{State: "open", CreatedAt: t0.Add(2 * time.Hour)}, false),
		{Repository: "acme/b", Issue: 3, State: ledger.Error, Problem: "not signed"},
	}
	r := report.Build(items, []string{"acme/a", "acme/b", "acme/c"}, time.Time{}, true)
	for _, tc := range []struct {
		name                                 string
		s                                    report.Summary
		items, merged, zero, closed, open    int
		runs, rounds, unreadable             int
		spend, perItem, perMerged            int64
		toPullP50, toMergeMean, toMergeCount time.Duration
	}{
		{"acme/a", r.Repositories[0], 3, 2, 1, 0, 0, 4, 1, 0, 4_500_000, 1_500_000, 2_250_000, 2 * time.Hour, 6 * time.Hour, 2},
		{"acme/b", r.Repositories[1], 3, 0, 0, 1, 1, 1, 0, 1, 100_000, 33_333, 0, 90 * time.Minute, 0, 0},
		{"acme/c", r.Repositories[2], 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		{"total", r.Total, 6, 2, 1, 1, 1, 5, 1, 1, 4_600_000, 766_667, 2_300_000, 90 * time.Minute, 6 * time.Hour, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.s
			if s.Repository != tc.name {
				t.Fatalf("summary of %q; want %q", s.Repository, tc.name)
			}
			got := []int64{int64(s.Items), int64(s.Merged), int64(s.ZeroTouch), int64(s.ClosedUnmerged), int64(s.Open),
				int64(s.Runs), int64(s.Rounds), int64(s.Unreadable), s.SpendMicroUSD, s.SpendPerItem(), s.SpendPerMerged(),
				int64(s.ApprovalToPull.P50), int64(s.ApprovalToMerge.Mean), int64(s.ApprovalToMerge.Count)}
			want := []int64{int64(tc.items), int64(tc.merged), int64(tc.zero), int64(tc.closed), int64(tc.open),
				int64(tc.runs), int64(tc.rounds), int64(tc.unreadable), tc.spend, tc.perItem, tc.perMerged,
				int64(tc.toPullP50), int64(tc.toMergeMean), int64(tc.toMergeCount)}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("figures %v; want %v (first difference at %d)", got, want, i)
					break
				}
			}
		})
	}
	if r.Total.States[ledger.Done] != 2 || r.Total.States[ledger.Error] != 1 || len(r.Problems) != 1 {
		t.Errorf("states %v, problems %v; want 2 done, 1 error, one problem", r.Total.States, r.Problems)
	}
}

func TestWrite(t *testing.T) {
	r := report.Build([]report.Item{
		item("acme/a", 1, ledger.Done, &report.Pull{State: "closed", Merged: true, CreatedAt: t0.Add(time.Hour), MergedAt: t0.Add(2 * time.Hour)}, true, 1_234_567),
		item("acme/b", 1, ledger.Failed, nil, false, 10_000),
	}, nil, t0, false)
	for _, tc := range []struct {
		format string
		check  func(t *testing.T, out string)
	}{
		{"table", func(t *testing.T, out string) {
			for _, want := range []string{"metric", "acme/a", "acme/b", "total", "merged zero-touch", "$1.23", "Records unverified", "since 2026-03-02T09:00:00Z"} {
				if !strings.Contains(out, want) {
					t.Errorf("table lacks %q:\n%s", want, out)
				}
			}
		}},
		{"json", func(t *testing.T, out string) {
			var back report.Report
			if err := json.Unmarshal([]byte(out), &back); err != nil {
				t.Fatal(err)
			}
			if back.Total.SpendMicroUSD != 1_244_567 || back.Verified || len(back.Repositories) != 2 {
				t.Errorf("JSON read back %+v", back)
			}
		}},
		{"csv", func(t *testing.T, out string) {
			rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != 4 || rows[0][0] != "repository" || rows[3][0] != "total" || len(rows[0]) != len(report.Table(r)) || !slices.Contains(rows[0], "spend_per_merged_usd") || !slices.Contains(rows[3], "1.24") {
				t.Errorf("CSV rows %v; want a header and acme/a, acme/b and total, one column per metric", rows)
			}
		}},
	} {
		t.Run(tc.format, func(t *testing.T) {
			var b bytes.Buffer
			if err := report.Write(&b, r, tc.format); err != nil {
				t.Fatal(err)
			}
			tc.check(t, b.String())
		})
	}
	if err := report.Write(&bytes.Buffer{}, r, "yaml"); err == nil {
		t.Error("format yaml: no error")
	}
	one := report.ForRepository(r, "acme/a")
	if md := report.Markdown(one); strings.Contains(md, "acme/b") || !strings.Contains(md, "| metric | acme/a |") {
		t.Errorf("the issue of acme/a shows another repository or lacks its own column:\n%s", md)
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"7d", now.AddDate(0, 0, -7), true},
		{"2w", now.AddDate(0, 0, -14), true},
		{"36h", now.Add(-36 * time.Hour), true},
		{"2026-03-01", time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), true},
		{"2026-03-01T08:00:00Z", time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC), true},
		{"all", time.Time{}, true},
		{"0", time.Time{}, true},
		{"-3d", time.Time{}, false},
		{"yesterday", time.Time{}, false},
	} {
		got, err := report.ParseSince(tc.in, now)
		if (err == nil) != tc.ok || !got.Equal(tc.want) {
			t.Errorf("ParseSince(%q) = %v, %v; want %v (ok %v)", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
