package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
	"github.com/bumperdev/bumper/internal/textcut"
	"github.com/bumperdev/bumper/sandbox/netns"
)

// adminSetup is an admin's first hour, as the week begins: `bumper setup --github-url`
// against the emulator, its manifest flow clicked through, the App installed on repos
// through the emulator's pages by admin, and `bumper doctor` passing for each. It
// returns setup's directory (serve.yml, the App's key) and the App's slug.
func adminSetup(t *testing.T, e *ghemu.Emulator, bin, admin string, repos []string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "bumper-app")
	cmd := exec.CommandContext(ctx, bin, "setup", "--url", "https://bumper.example.test", "--org", ghemu.DefaultOrg,
		"--github-url", e.BaseURL(), "--dir", dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pageRE := regexp.MustCompile(`Open (http://127\.0\.0\.1:\d+/) in a browser`)
	lines := bufio.NewScanner(out)
	var local string
	var said strings.Builder
	for local == "" && lines.Scan() {
		said.WriteString(lines.Text() + "\n")
		if m := pageRE.FindStringSubmatch(lines.Text()); m != nil {
			local = m[1]
		}
	}
	if local == "" {
		_ = cmd.Wait()
		t.Fatalf("setup did not serve its page:\n%s%s", said.String(), errb.String())
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	b := emutest.NewBrowser(t)
	b.CreateApp(local, ghemu.DefaultOrg)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("setup: %v\n%s%s", err, said.String(), errb.String())
	}
	var ident struct {
		Slug string `json:"slug"`
	}
	raw, err := os.ReadFile(filepath.Join(dir, "app.json"))
	if err != nil || json.Unmarshal(raw, &ident) != nil || ident.Slug == "" {
		t.Fatalf("setup's app.json: %v\n%s", err, raw)
	}
	b.InstallApp(e, ident.Slug, admin, repos)
	for _, r := range repos {
		doctor := exec.CommandContext(ctx, bin, "doctor", "--host=false", "--config", filepath.Join(dir, "serve.yml"), "--repo", ghemu.DefaultOrg+"/"+r)
		if out, err := doctor.CombinedOutput(); err != nil {
			t.Fatalf("bumper doctor for %s/%s: %v\n%s", ghemu.DefaultOrg, r, err, out)
		}
	}
	return dir, ident.Slug
}

// weekServeConfig writes, beside setup's serve.yml, the configuration the week's
// replicas run with: setup's, with failed deliveries swept for every few seconds (the
// week drops some) and logs at info. It returns its path.
func weekServeConfig(t *testing.T, dir string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "serve.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	section := func(name string) map[string]any {
		m, _ := cfg[name].(map[string]any)
		if m == nil {
			m = map[string]any{}
			cfg[name] = m
		}
		return m
	}
	srv := section("server")
	// A week in minutes: the redelivery sweep every 10 s (default 5 min) and a dispatch
	// whose replica died re-driven after 20 s (default 2 min).
	srv["redeliver_interval"] = "10s"
	srv["dispatch_grace"] = "20s"
	srv["redeliver_window"] = "1h"
	srv["shutdown_timeout"] = "5s"
	out, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "week.yml")
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// replica is one `bumper serve` process of the week, on a fixed address so that a
// restart comes back where the balancer looks for it.
type replica struct {
	t          *testing.T
	bin, cfg   string
	addr, mets string
	logDir     string
	mu         sync.Mutex
	cmd        *exec.Cmd
	starts     int
	peakRSS    int64 // the highest VmHWM of its processes, in KiB
}

// freeAddr is a free loopback address whose port lies below the kernel's ephemeral range
// (ip_local_port_range, 32768 and up by default). A replica comes back on the same
// address after a kill; a port from that range may meanwhile be the local end of one of
// the week's thousands of outgoing connections, and the restart's listen would fail.
func freeAddr(t *testing.T) string {
	t.Helper()
	start := rand.IntN(12000)
	for i := range 12000 {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", 20000+(start+i)%12000))
		if err != nil {
			continue
		}
		addr := ln.Addr().String()
		ln.Close()
		return addr
	}
	t.Fatal("no free loopback port between 20000 and 31999")
	return ""
}

func newReplica(t *testing.T, bin, cfg, logDir string) *replica {
	r := &replica{t: t, bin: bin, cfg: cfg, addr: freeAddr(t), mets: freeAddr(t), logDir: logDir}
	r.start()
	t.Cleanup(func() { r.kill(syscall.SIGTERM) })
	return r
}

// start starts the process and waits until /readyz on its metrics address answers 200
// (its ledger index rebuilt from GitHub).
func (r *replica) start() {
	r.t.Helper()
	r.mu.Lock()
	r.starts++
	logf, err := os.Create(filepath.Join(r.logDir, fmt.Sprintf("serve-%s-%d.log", strings.ReplaceAll(r.addr, ":", "_"), r.starts)))
	if err != nil {
		r.mu.Unlock()
		r.t.Fatal(err)
	}
	cmd := exec.Command(r.bin, "serve", "--config", r.cfg)
	cmd.Env = append(os.Environ(), "BUMPER_ADDRESS="+r.addr, "BUMPER_METRICS_ADDRESS="+r.mets, "BUMPER_LOG_LEVEL=info")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		r.mu.Unlock()
		r.t.Fatal(err)
	}
	r.cmd = cmd
	r.mu.Unlock()
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(exited) }()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + r.mets + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-exited:
			r.t.Fatalf("serve on %s exited before it was ready (%v); the end of its log:\n%s", r.addr, cmd.ProcessState, tail(logf.Name()))
		case <-time.After(100 * time.Millisecond):
		}
	}
	r.t.Fatalf("serve on %s was not ready within 2 minutes; the end of its log:\n%s", r.addr, tail(logf.Name()))
}

// tail is the end of a file, for a failure's message: the test's temporary directory,
// and the log with it, is gone once the test ends.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return textcut.Tail(string(b), 4<<10)
}

// kill sends sig and waits for the process to go.
func (r *replica) kill(sig syscall.Signal) {
	r.mu.Lock()
	cmd := r.cmd
	r.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	r.notePeak(cmd.Process.Pid)
	_ = cmd.Process.Signal(sig)
	deadline := time.Now().Add(30 * time.Second)
	for processAlive(cmd.Process.Pid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
}

// pid is the running process's.
func (r *replica) pid() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil || r.cmd.Process == nil {
		return 0
	}
	return r.cmd.Process.Pid
}

func (r *replica) notePeak(pid int) {
	if hwm := procKiB(pid, "VmHWM"); hwm > 0 {
		r.mu.Lock()
		r.peakRSS = max(r.peakRSS, hwm)
		r.mu.Unlock()
	}
}

// procKiB reads a "Key: N kB" line of /proc/PID/status.
func procKiB(pid int, key string) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

// balancer is a round-robin load balancer in front of the replicas, as a deployment
// has one: a replica that refuses the connection (down, restarting) is passed over for
// the next, as a balancer's passive health check does; what reached a replica is never
// sent twice.
type balancer struct {
	backends []string
	next     atomic.Uint64
	proxy    *httputil.ReverseProxy
	skipped  atomic.Int64
}

type backendKey struct{}

func newBalancer(backends ...string) *balancer {
	b := &balancer{backends: backends}
	b.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(&url.URL{Scheme: "http", Host: pr.In.Context().Value(backendKey{}).(string)})
			pr.Out.Host = pr.In.Host
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, "bad gateway: "+err.Error(), http.StatusBadGateway)
		},
	}
	return b
}

func (b *balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := b.next.Add(1)
	for i := range uint64(len(b.backends)) {
		addr := b.backends[(start+i)%uint64(len(b.backends))]
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			b.skipped.Add(1)
			continue
		}
		c.Close()
		b.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), backendKey{}, addr)))
		return
	}
	http.Error(w, "no replica is up", http.StatusServiceUnavailable)
}

// hostSampler watches the host while the week runs: the memory of Bumper's processes
// (serve, `bumper run` with its firewall, QEMU) and the sandbox's run records owned by
// the week's runners, for the leftovers count at the end.
type hostSampler struct {
	bin  string
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	// peakKiB is the highest sum of resident memory of Bumper's processes seen at once;
	// peakRunKiB the highest of one `bumper run`, peakQEMUKiB of one QEMU.
	peakKiB, peakRunKiB, peakQEMUKiB int64
	records                          map[string]runRecord
}

func startSampler(bin string) *hostSampler {
	s := &hostSampler{bin: bin, stop: make(chan struct{}), done: make(chan struct{}), records: map[string]runRecord{}}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			s.sample()
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *hostSampler) sample() {
	ours := map[int]bool{}
	var total, run, qemu int64
	for _, pid := range pids() {
		argv := cmdline(pid)
		if len(argv) == 0 {
			continue
		}
		rss := procKiB(pid, "VmRSS")
		switch {
		case argv[0] == s.bin:
			ours[pid] = true
			total += rss
			if len(argv) > 1 && argv[1] == "run" {
				run = max(run, rss)
			}
		case strings.HasPrefix(filepath.Base(argv[0]), "qemu-system"):
			if ours[ppid(pid)] || strings.Contains(strings.Join(argv, " "), "bumper-") {
				total += rss
				qemu = max(qemu, rss)
			}
		}
	}
	entries, _ := os.ReadDir(filepath.Join(stateDir, "runs"))
	s.mu.Lock()
	defer s.mu.Unlock()
	s.peakKiB, s.peakRunKiB, s.peakQEMUKiB = max(s.peakKiB, total), max(s.peakRunKiB, run), max(s.peakQEMUKiB, qemu)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(stateDir, "runs", e.Name()))
		if err != nil {
			continue
		}
		var r runRecord
		if json.Unmarshal(data, &r) == nil && ours[r.OwnerPID] {
			s.records[r.ID] = r
		}
	}
}

func (s *hostSampler) finish() {
	close(s.stop)
	<-s.done
}

// ppid is a process's parent.
func ppid(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		if f := strings.Fields(s[i+1:]); len(f) > 1 {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}

// leftovers lists what is left of the week's runs on the host: run records, QEMU
// processes, network namespaces (which hold the run's TAP device and nftables table),
// host veths, mounts, run directories (with the overlay files in them).
func (s *hostSampler) leftovers() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	mounts, _ := os.ReadFile("/proc/self/mounts")
	var out []string
	for _, r := range s.records {
		ns, veth := netns.Names(r.ID)
		if _, err := os.Stat(filepath.Join(stateDir, "runs", r.ID+".json")); err == nil {
			out = append(out, "run record "+r.ID)
		}
		if r.QEMUPID > 0 && processAlive(r.QEMUPID) && strings.HasPrefix(filepath.Base(firstArg(r.QEMUPID)), "qemu-system") {
			out = append(out, fmt.Sprintf("QEMU %d of run %s", r.QEMUPID, r.ID))
		}
		if _, err := os.Stat(filepath.Join("/run/netns", ns)); err == nil {
			out = append(out, "network namespace "+ns)
		}
		if _, err := net.InterfaceByName(veth); err == nil {
			out = append(out, "veth "+veth)
		}
		if r.RunDir != "" {
			if _, err := os.Stat(r.RunDir); err == nil {
				out = append(out, "run directory "+r.RunDir)
			}
			if strings.Contains(string(mounts), r.RunDir) {
				out = append(out, "mount under "+r.RunDir)
			}
		}
		if strings.Contains(string(mounts), ns) {
			out = append(out, "mount of "+ns)
		}
	}
	return out
}

func firstArg(pid int) string {
	if argv := cmdline(pid); len(argv) > 0 {
		return argv[0]
	}
	return ""
}

// runPID is the `bumper run` process of the workflow run id, found by the
// GITHUB_RUN_ID the local runner gave it.
func runPID(bin string, id int64) (int, error) {
	want := "GITHUB_RUN_ID=" + strconv.FormatInt(id, 10)
	for _, pid := range pids() {
		argv := cmdline(pid)
		if len(argv) < 2 || argv[0] != bin || argv[1] != "run" {
			continue
		}
		env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
		if err != nil {
			continue
		}
		for _, kv := range strings.Split(string(env), "\x00") {
			if kv == want {
				return pid, nil
			}
		}
	}
	return 0, errors.New("no `bumper run` process of run " + strconv.FormatInt(id, 10))
}
