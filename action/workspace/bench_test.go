package workspace

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bumperdev/bumper/firewall"
	"github.com/bumperdev/bumper/internal/testgate"
	"github.com/bumperdev/bumper/sandbox"
	"github.com/bumperdev/bumper/sandbox/image/imagetest"
)

// benchRuns is how many times each figure is measured; the medians are reported.
// BUMPER_BENCH_RUNS changes it; the in-VM clone, at ~20 s a run, gets at most 3.
func benchRuns() int {
	if n, err := strconv.Atoi(os.Getenv("BUMPER_BENCH_RUNS")); err == nil && n > 0 {
		return n
	}
	return 5
}

// firstLine records when its first byte arrives and keeps what it is given.
type firstLine struct {
	mu sync.Mutex
	at time.Time
	b  bytes.Buffer
}

func (f *firstLine) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.at.IsZero() && len(p) > 0 {
		f.at = time.Now()
	}
	return f.b.Write(p)
}

// BenchmarkWorkspaceToVM measures, for a 50 MB repository (fifty 1 MiB files of random
// bytes, the shape of the sandbox benchmark's in-VM clone) served by the emulator's git
// server through the firewall's git gateway, the time from the start of Prepare to the
// VM's first output of `git -C /workspace/repo log -1 --format=%H`, split into its
// parts, for a warm restore and a cold boot; the agent's first `git status` in the VM;
// and, for comparison, `git clone --depth 1` of the same repository inside the VM
// through the gateway. Run as root:
//
//	go test -run '^$' -bench WorkspaceToVM -benchtime 1x ./action/workspace/
func BenchmarkWorkspaceToVM(b *testing.B) {
	testgate.RequiresQEMU(b)
	testgate.Command(b, "git", "git")
	im := imagetest.Image(b)
	ctx := testCtx(b)
	h := newGitHost(b)
	src := scratch(b)
	writeRandomFiles(b, src, 50, 1<<20)
	hostGit(b, src, nil, "add", ".")
	hostGit(b, src, nil, "commit", "-q", "-m", "data")
	base := h.publish(b, src, hostGit(b, src, nil, "rev-parse", "HEAD"))
	if err := h.e.Git().MoveRef(ctx, owner, repo, "refs/heads/main", base, true); err != nil {
		b.Fatal(err)
	}
	h.repack(b) // as GitHub keeps repositories: packed, so a fetch reuses the pack's data

	warmCfg := vmConfig(b, im)
	warmCfg.SnapshotDir = filepath.Join(b.TempDir(), "snapshots")
	if _, err := sandbox.PrepareSnapshot(ctx, warmCfg); err != nil {
		b.Fatalf("PrepareSnapshot: %v", err)
	}
	script := `git -C ` + GuestRepo + ` log -1 --format=%H
s=$(date +%s%N); git -C ` + GuestRepo + ` status --porcelain | wc -l; e=$(date +%s%N); echo status $(( (e - s) / 1000000 ))
s=$(date +%s%N); git -C ` + GuestRepo + ` -c core.checkStat=default -c core.trustCtime=true status --porcelain | wc -l; e=$(date +%s%N); echo fullstatus $(( (e - s) / 1000000 ))`

	type sample struct {
		total, prepare, fetch, checkout, disk, boot, command, other time.Duration
		status, fullStatus                                          time.Duration
	}
	var warm, cold []sample
	var fetched int64
	var diskContent int64
	var boots []string
	measure := func(cfg sandbox.Config) sample {
		start := time.Now()
		w, err := Prepare(ctx, h.options(b, base))
		if err != nil {
			b.Fatalf("Prepare: %v", err)
		}
		defer w.Close()
		var s sample
		s.prepare = time.Since(start)
		for _, st := range w.Steps {
			switch st.Name {
			case "fetch":
				s.fetch = st.Duration
			case "checkout":
				s.checkout = st.Duration
			}
		}
		fetched = w.FetchedBytes
		diskContent = dirBytes(b, w.Dir)
		cfg.WorkspaceDir = w.Dir
		out := &firstLine{}
		rep, err := sandbox.Run(ctx, sandbox.Spec{Config: cfg, Argv: []string{"sh", "-c", script}, Stdout: out, Stderr: out})
		if err != nil || rep.ExitCode != 0 || out.at.IsZero() {
			b.Fatalf("sandbox.Run: %v %+v\n%s", err, rep, out.b.String())
		}
		lines := strings.Fields(out.b.String())
		if len(lines) < 7 || lines[0] != base || lines[1] != "0" || lines[4] != "0" {
			b.Fatalf("the guest saw %q, want %s and a clean status", out.b.String(), base)
		}
		ms := func(s string) time.Duration { n, _ := strconv.Atoi(s); return time.Duration(n) * time.Millisecond }
		s.status, s.fullStatus = ms(lines[3]), ms(lines[6])
		s.total = out.at.Sub(start)
		for _, st := range rep.Steps {
			if st.Name == sandbox.StepWorkspaceDisk {
				s.disk = st.Duration
			}
		}
		s.boot = rep.Ready - s.disk
		s.command = rep.FirstOutput - rep.Ready
		s.other = s.total - s.prepare - rep.FirstOutput
		boots = append(boots, rep.Boot.Mode)
		return s
	}
	for range b.N {
		for range benchRuns() {
			warm = append(warm, measure(warmCfg))
			cold = append(cold, measure(vmConfig(b, im)))
		}
	}
	clones := h.cloneInVM(ctx, b, vmConfig(b, im), min(benchRuns(), 3))

	med := func(ss []sample, f func(sample) time.Duration) time.Duration {
		ds := make([]time.Duration, len(ss))
		for i, s := range ss {
			ds[i] = f(s)
		}
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	all := func(ss []sample, f func(sample) time.Duration) string {
		var parts []string
		for _, s := range ss {
			parts = append(parts, fmt.Sprintf("%.0f", msOf(f(s))))
		}
		return strings.Join(parts, " ")
	}
	w := os.Stderr
	fmt.Fprintf(w, "\nworkspace to VM, 50 MB repository through the firewall's git gateway (%d runs each, medians in ms; fetched %d bytes, workspace %d bytes; boots %v)\n",
		len(warm), fetched, diskContent, boots)
	rows := []struct {
		name string
		f    func(sample) time.Duration
	}{
		{"total: Prepare start to first output", func(s sample) time.Duration { return s.total }},
		{"  Prepare (host)", func(s sample) time.Duration { return s.prepare }},
		{"    fetch through the gateway", func(s sample) time.Duration { return s.fetch }},
		{"    checkout", func(s sample) time.Duration { return s.checkout }},
		{"  workspace disk (mkfs.ext4 -d)", func(s sample) time.Duration { return s.disk }},
		{"  VM start to command sent (1)", func(s sample) time.Duration { return s.boot }},
		{"  command sent to its first output (2)", func(s sample) time.Duration { return s.command }},
		{"  other (snapshot lookup, gaps)", func(s sample) time.Duration { return s.other }},
		{"first git status in the VM", func(s sample) time.Duration { return s.status }},
		{"  the same comparing every stat field", func(s sample) time.Duration { return s.fullStatus }},
	}
	fmt.Fprintf(w, "  %-40s %8s %8s   warm runs | cold runs\n", "", "warm", "cold")
	for _, r := range rows {
		fmt.Fprintf(w, "  %-40s %8.0f %8.0f   %s | %s\n", r.name, msOf(med(warm, r.f)), msOf(med(cold, r.f)), all(warm, r.f), all(cold, r.f))
	}
	slices.Sort(clones)
	var cs []string
	for _, c := range clones {
		cs = append(cs, fmt.Sprintf("%.0f", msOf(c)))
	}
	fmt.Fprintf(w, "  %-40s %8.0f            %s\n", "git clone --depth 1 in the VM (gateway)", msOf(clones[len(clones)/2]), strings.Join(cs, " "))
	fmt.Fprintf(w, "  (1) cold: the boot up to the agent's hello; warm: QEMU's start up to the agent channel, when the\n"+
		"      request is sent. (2) warm: includes QEMU loading the saved state; then git runs under emulation.\n")
	b.ReportMetric(msOf(med(warm, func(s sample) time.Duration { return s.total })), "warm-total-ms")
	b.ReportMetric(msOf(med(cold, func(s sample) time.Duration { return s.total })), "cold-total-ms")
	b.ReportMetric(msOf(clones[len(clones)/2]), "vm-clone-ms")
}

// cloneInVM clones the repository inside VMs (cold boots, a NIC behind a firewall of
// its own with the same git gateway) and returns the clone times measured in the guest.
func (h *gitHost) cloneInVM(ctx context.Context, b *testing.B, cfg sandbox.Config, runs int) []time.Duration {
	b.Helper()
	testgate.RequiresRoot(b)
	tokenFile := filepath.Join(b.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(h.token), 0o600); err != nil {
		b.Fatal(err)
	}
	start := func(ctx context.Context, listen string) (func() error, error) {
		fw, err := firewall.New(&firewall.Config{Listen: listen, Audit: filepath.Join(b.TempDir(), "audit.jsonl"),
			Gateway: firewall.GatewayConfig{GitBase: h.e.BaseURL(), Repository: owner + "/" + repo, TokenFile: tokenFile}})
		if err != nil {
			return nil, err
		}
		if err := fw.Start(ctx); err != nil {
			return nil, err
		}
		return func() error { return fw.Stop(context.Background()) }, nil
	}
	var out []time.Duration
	for range runs {
		var buf bytes.Buffer
		rep, err := sandbox.Run(ctx, sandbox.Spec{Config: cfg, StartProxy: start, Env: []string{"no_proxy=10.0.2.2", "NO_PROXY=10.0.2.2"},
			Argv:   []string{"sh", "-c", `s=$(date +%s%N); git clone -q --depth 1 http://10.0.2.2:3128/git/` + owner + `/` + repo + `.git /workspace/clone && e=$(date +%s%N) && echo $(( (e - s) / 1000000 ))`},
			Stdout: &buf, Stderr: &buf})
		if err != nil || rep.ExitCode != 0 {
			b.Fatalf("git clone in the VM: %v %+v\n%s", err, rep, buf.String())
		}
		n, err := strconv.Atoi(strings.TrimSpace(buf.String()))
		if err != nil {
			b.Fatalf("clone timing %q", buf.String())
		}
		out = append(out, time.Duration(n)*time.Millisecond)
	}
	return out
}

// repack packs the emulator's copy of the repository, as GitHub keeps its own.
func (h *gitHost) repack(b testing.TB) {
	b.Helper()
	var dir string
	_ = filepath.WalkDir(h.stateDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == repo+".git" {
			dir = p
			return filepath.SkipAll
		}
		return nil
	})
	if dir == "" {
		b.Fatal("the emulator's repository was not found")
	}
	if out, err := exec.Command("git", "-C", dir, "repack", "-a", "-d", "-q").CombinedOutput(); err != nil {
		b.Fatalf("repack: %v: %s", err, out)
	}
}

func writeRandomFiles(b *testing.B, dir string, n, size int) {
	b.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, size)
	for i := range n {
		for j := 0; j < len(buf); j += 8 {
			v := r.Uint64()
			for k := range 8 {
				buf[j+k] = byte(v >> (8 * k))
			}
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("blob%03d.bin", i)), buf, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

func dirBytes(b *testing.B, dir string) int64 {
	b.Helper()
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
