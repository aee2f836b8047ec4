package evidencemd

import (
	"fmt"
	"math"
	"time"

	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// confidence writes a decision's confidence with two decimals; one out of range (a
// bundle that was not validated) as "?".
func confidence(c float64) string {
	if math.IsNaN(c) || c < 0 || c > 1 {
		return "?"
	}
	return fmt.Sprintf("%.2f", c)
}

// stamp writes t in UTC to the second.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "(unknown)"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// duration writes milliseconds as "850ms", "12.3s", "4m 5s" or "1h 2m".
func duration(ms int64) string {
	switch {
	case ms < 0:
		return "?"
	case ms < 1000:
		return fmt.Sprintf("%dms", ms)
	case ms < 60_000:
		return fmt.Sprintf("%.1fs", float64(ms)/1000)
	case ms < 3_600_000:
		return fmt.Sprintf("%dm %ds", ms/60_000, ms%60_000/1000)
	}
	return fmt.Sprintf("%dh %dm", ms/3_600_000, ms%3_600_000/60_000)
}

// usd writes micro-USD as dollars: four decimals below $100, two above.
func usd(micro int64) string {
	if micro < 0 {
		return "-" + usd(-micro)
	}
	if micro >= 100_000_000 || micro%10_000 == 0 {
		return fmt.Sprintf("$%s.%02d", commas(micro/1_000_000), micro%1_000_000/10_000)
	}
	return fmt.Sprintf("$%d.%04d", micro/1_000_000, micro%1_000_000/100)
}

// plural writes "1 call" or "2 calls" (or the given plural form).
func plural(n int64, one string, many ...string) string {
	if n == 1 {
		return "1 " + one
	}
	if len(many) > 0 {
		return commas(n) + " " + many[0]
	}
	return commas(n) + " " + one + "s"
}

// size writes a byte count.
func size(n int64) string {
	const k = 1024
	switch {
	case n < k:
		return fmt.Sprintf("%d B", n)
	case n < k*k:
		return fmt.Sprintf("%.1f KiB", float64(n)/k)
	case n < k*k*k:
		return fmt.Sprintf("%.1f MiB", float64(n)/(k*k))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(k*k*k))
}

// commas writes n with thousands separators ("12,345").
func commas(n int64) string { return message.NewPrinter(language.English).Sprint(n) }
