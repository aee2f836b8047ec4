package gates

import (
	"os/exec"
	"strings"
	"testing"
)

// BenchmarkGates is the gates' cost on a realistic diff: the last 20 commits of this
// repository (Go, Markdown, JSON schemas, tests: some thousands of added lines), parsed
// and checked with a local OSV. The figure is in docs/gates.md.
func BenchmarkGates(b *testing.B) {
	out, err := exec.Command("git", append(DiffArgs, "HEAD~20...HEAD", "--")...).Output()
	if err != nil {
		b.Skipf("no history to diff here: %v", err)
	}
	msgs, _ := exec.Command("git", "log", "--format=%H%n%B%x00", "HEAD~20..HEAD").Output()
	var commits []Commit
	for _, m := range strings.Split(string(msgs), "\x00") {
		if sha, msg, ok := strings.Cut(strings.TrimSpace(m), "\n"); ok {
			commits = append(commits, Commit{SHA: sha, Message: msg})
		}
	}
	srv, _ := fakeOSV(b)
	files, err := ParseDiff(out)
	if err != nil {
		b.Fatal(err)
	}
	lines := 0
	for _, f := range files {
		lines += len(f.Added)
	}
	b.SetBytes(int64(len(out)))
	for b.Loop() {
		files, err := ParseDiff(out)
		if err != nil {
			b.Fatal(err)
		}
		Check(b.Context(), Input{Files: files, Commits: commits}, Config{OSVURL: srv.URL})
	}
	b.ReportMetric(float64(lines), "added-lines")
	b.ReportMetric(float64(len(files)), "files")
}
