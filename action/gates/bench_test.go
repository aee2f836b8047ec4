package gates

import (
	"bytes"
	"os"
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

// BenchmarkMaskLines is the job log's masking (what runs in the VM, streamed through
// MaskLines in the blocks of complete lines the job log gets) on two kinds of output:
// this repository's history with patches (text full of the words "token", "key" and
// "secret" that wake the generic rule) and Claude Code's stream-json as recorded through
// Bumper's gateway (each event names "input_tokens"). The figure is in
// docs/benchmarks.md.
func BenchmarkMaskLines(b *testing.B) {
	history, err := exec.Command("git", "log", "-p", "-200", "--no-color").Output()
	if err != nil || len(history) < 1<<20 {
		b.Skipf("no history to read here: %v", err)
	}
	stream, err := os.ReadFile("../harness/testdata/claude-code/real-2.1.328-through-bumper-gateway.stream.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	for _, in := range []struct {
		name string
		data []byte
	}{
		{"history", history[:1<<20]},
		{"stream-json", bytes.Repeat(stream, (1<<20)/len(stream)+1)[:1<<20]},
	} {
		// Blocks as the job log gets them: the complete lines of 32 KiB writes.
		var blocks [][]byte
		for rest := in.data; len(rest) > 0; {
			n := min(len(rest), 32<<10)
			if i := bytes.LastIndexByte(rest[:n], '\n'); i >= 0 && n < len(rest) {
				n = i + 1
			}
			blocks, rest = append(blocks, rest[:n]), rest[n:]
		}
		b.Run(in.name, func(b *testing.B) {
			b.SetBytes(int64(len(in.data)))
			for b.Loop() {
				for _, bl := range blocks {
					MaskLines(bl)
				}
			}
		})
	}
}
