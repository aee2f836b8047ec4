package netns

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/internal/testgate"
)

func skipUnlessRoot(t *testing.T) {
	t.Helper()
	testgate.RequiresRoot(t)
	testgate.Command(t, "ip", "iproute2")
}

func TestCreateAndClose(t *testing.T) {
	skipUnlessRoot(t)
	state := t.TempDir()
	a, err := Create(Config{ID: "t1" + randSuffix(t), StateDir: state}, 40001)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	b, err := Create(Config{ID: "t2" + randSuffix(t), StateDir: state}, 40002)
	if err != nil {
		a.Close()
		t.Fatalf("second Create: %v", err)
	}
	if a.HostAddr == b.HostAddr || a.Name == b.Name || a.HostVeth == b.HostVeth {
		t.Errorf("two runs collide: %v %s %s and %v %s %s", a.HostAddr, a.Name, a.HostVeth, b.HostAddr, b.Name, b.HostVeth)
	}
	checks := []struct {
		name string
		args []string
		want []string
	}{
		{"nft table", []string{"netns", "exec", a.Name, "nft", "list", "table", "inet", TableName},
			[]string{"policy drop", "dnat ip to " + a.HostAddr.String() + ":40001", "masquerade", "reject"}},
		{"tap and veth", []string{"-n", a.Name, "-br", "addr"}, []string{TAPName, "10.0.2.2/24", PeerName, a.PeerAddr.String() + "/30"}},
		{"ipv6 off", []string{"netns", "exec", a.Name, "cat", "/proc/sys/net/ipv6/conf/all/disable_ipv6"}, []string{"1"}},
		{"forwarding on", []string{"netns", "exec", a.Name, "cat", "/proc/sys/net/ipv4/ip_forward"}, []string{"1"}},
		{"no default route", []string{"-n", a.Name, "route", "show", "default"}, nil},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			bin := "ip"
			out, err := exec.Command(bin, c.args...).CombinedOutput()
			if err != nil {
				t.Fatalf("ip %v: %v: %s", c.args, err, out)
			}
			if c.want == nil && strings.TrimSpace(string(out)) != "" {
				t.Errorf("ip %v = %q, want nothing", c.args, out)
			}
			for _, w := range c.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("ip %v output lacks %q:\n%s", c.args, w, out)
				}
			}
		})
	}
	leases := map[*Net]string{a: a.lease, b: b.lease}
	for _, n := range []*Net{a, b} {
		if err := n.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := n.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		if _, err := os.Stat(filepath.Join("/run/netns", n.Name)); err == nil {
			t.Errorf("namespace %s still exists", n.Name)
		}
		if out, _ := exec.Command("ip", "link", "show", n.HostVeth).CombinedOutput(); !strings.Contains(string(out), "does not exist") {
			t.Errorf("veth %s still exists: %s", n.HostVeth, out)
		}
	}
	for _, n := range []*Net{a, b} {
		lease, id := leases[n], strings.TrimPrefix(n.Name, "bumper-")
		// Other packages' tests share the host's lease directory and may take the same
		// number as soon as it is free, so the lease is left only if it still names this run.
		if got, err := os.ReadFile(lease); err == nil && string(got) == id {
			t.Errorf("the address lease %s of %s is left", lease, n.Name)
		}
		if filepath.Dir(lease) != DefaultLeaseDir {
			t.Errorf("lease %s is not in the host's lease directory %s, whatever the state directory", lease, DefaultLeaseDir)
		}
	}
}

func TestCreateRejects(t *testing.T) {
	tests := []struct {
		name string
		id   string
		port int
		want string
	}{
		{"empty id", "", 1, "1-8 characters"},
		{"long id", "abcdefghi", 1, "1-8 characters"},
		{"bad chars", "a/b", 1, "1-8 characters"},
		{"port zero", "ok", 0, "out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Create(Config{ID: tt.id, StateDir: t.TempDir()}, tt.port)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Create = %v, want %q", err, tt.want)
			}
		})
	}
}

func randSuffix(t *testing.T) string {
	t.Helper()
	return fmt.Sprintf("%x", os.Getpid()%0xffff)
}

// TestProbe: as root the probe can do everything Create needs, and leaves nothing in the
// host's namespace (no TAP, no bumper table).
func TestProbe(t *testing.T) {
	skipUnlessRoot(t)
	testgate.Command(t, "nft", "nftables")
	r := Probe()
	if r.Namespace != nil || r.TAP != nil || r.Firewall != nil {
		t.Fatalf("Probe as root: %+v", r)
	}
	if out, err := exec.Command("ip", "-br", "link", "show", TAPName).CombinedOutput(); err == nil {
		t.Errorf("the probe left %s in the host's namespace: %s", TAPName, out)
	}
	out, err := exec.Command("nft", "list", "tables").CombinedOutput()
	if err != nil {
		t.Fatalf("nft list tables: %v: %s", err, out)
	}
	if strings.Contains(string(out), "inet "+TableName) {
		t.Errorf("the probe left table inet %s in the host's namespace:\n%s", TableName, out)
	}
}

// TestSecondCloseKeepsAnotherRunsLease: once a run's lease is released, the next run may
// take the same address at once; closing the first run again must not free it, or a
// third run would share the second's network.
func TestSecondCloseKeepsAnotherRunsLease(t *testing.T) {
	dir := t.TempDir()
	first := &Net{}
	var err error
	first.lease, _, _, err = reserve(dir, "first")
	if err != nil {
		t.Fatalf("reserve: %v", err)
	}
	if err := first.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	second, _, _, err := reserve(dir, "second")
	if err != nil {
		t.Fatalf("reserve: %v", err)
	}
	if err := first.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if got, err := os.ReadFile(second); err != nil || string(got) != "second" {
		t.Fatalf("the second run's lease %s = %q, %v after the first run closed twice; want it kept", second, got, err)
	}
}
