package sandbox

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bumperdev/bumper/internal/testgate"
	"github.com/bumperdev/bumper/sandbox/image/imagetest"
	"github.com/bumperdev/bumper/sandbox/netns"
)

// hostileScript probes every way out it can think of from inside the guest, as the agent
// user, with only what a minbase Debian has (bash's /dev/tcp, perl for UDP). Each probe
// prints "PROBE <name> open" when it got through and "PROBE <name> blocked" otherwise.
const hostileScript = `
tcp() { # name host port
	if timeout 3 bash -c "exec 3<>/dev/tcp/$2/$3" 2>/dev/null; then echo "PROBE $1 open"; else echo "PROBE $1 blocked"; fi
}
udp_dns() { # name server: sends a real DNS query and waits for any answer
	if timeout 4 perl -MIO::Socket::INET -e '
		my $s = IO::Socket::INET->new(PeerAddr => $ARGV[0], PeerPort => 53, Proto => "udp") or exit 1;
		$s->send(pack("n6", 0x1234, 0x0100, 1, 0, 0, 0) . "\x07example\x03com\x00" . pack("n2", 1, 1));
		my $r = ""; $s->recv($r, 512); exit(length($r) > 0 ? 0 : 1);' "$2" 2>/dev/null
	then echo "PROBE $1 open"; else echo "PROBE $1 blocked"; fi
}
tcp control-proxy 10.0.2.2 3128
tcp metadata 169.254.169.254 80
tcp host-other-port HOSTADDR OTHERPORT
tcp host-ssh HOSTADDR 22
tcp gateway-other-port 10.0.2.2 22
tcp gateway-proxy-neighbor 10.0.2.2 3129
tcp namespace-peer PEERADDR 3128
tcp private-10 10.0.0.1 80
tcp private-192 192.168.1.1 80
tcp private-172 172.17.0.1 80
tcp public-raw-ip 1.1.1.1 443
tcp dns-tcp-public 8.8.8.8 53
tcp dns-tcp-gateway 10.0.2.2 53
udp_dns dns-udp-public 8.8.8.8
udp_dns dns-udp-gateway 10.0.2.2
udp_dns dns-udp-quad9 9.9.9.9
tcp ipv6-public 2606:4700:4700::1111 443
if getent hosts example.com >/dev/null 2>&1; then echo "PROBE resolver open"; else echo "PROBE resolver blocked"; fi
if env | grep -q HOSTSECRET; then echo "PROBE host-env open"; else echo "PROBE host-env blocked"; fi
if grep -q HOSTSECRET /proc/cmdline; then echo "PROBE host-cmdline open"; else echo "PROBE host-cmdline blocked"; fi
if test -e HOSTFILE; then echo "PROBE host-file open"; else echo "PROBE host-file blocked"; fi
if echo 1 > /proc/sys/net/ipv4/ip_forward 2>/dev/null; then echo "PROBE sysctl open"; else echo "PROBE sysctl blocked"; fi
# ARP and ICMP tricks need packet or ICMP sockets, which the agent user cannot open.
if perl -e 'socket(my $s, 17, 3, 0) or exit 1' 2>/dev/null; then echo "PROBE packet-socket open"; else echo "PROBE packet-socket blocked"; fi
if perl -e 'socket(my $s, 2, 2, 1) or socket($s, 2, 3, 1) or exit 1' 2>/dev/null; then echo "PROBE icmp-socket open"; else echo "PROBE icmp-socket blocked"; fi
# The allowed path: the proxy, through the fixed gateway address.
exec 3<>/dev/tcp/10.0.2.2/3128 && printf 'GET http://allowed.example/ HTTP/1.0\r\nHost: allowed.example\r\n\r\n' >&3 && cat <&3
`

// standInPort is where the stand-in proxy listens on the run's host-side address.
const standInPort = 39128

func TestHostileGuest(t *testing.T) {
	testgate.RequiresQEMU(t)
	testgate.RequiresRoot(t)
	im := imagetest.Image(t)
	ctx := testContext(t)
	const secret = "HOSTSECRET"
	t.Setenv("BUMPER_TEST_"+secret, "leak")
	hostFile := t.TempDir()

	id := randomID()
	n, err := netns.Create(netns.Config{ID: id, StateDir: t.TempDir()}, standInPort)
	if err != nil {
		t.Fatalf("netns.Create: %v", err)
	}
	defer n.Close()
	// The stand-in proxy, on the run's host-side address, and a second host service the
	// guest must not reach.
	proxyLn, err := net.Listen("tcp", n.ProxyListenAddr(standInPort))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "PROXIED %s\n", r.URL.String())
	})}
	go srv.Serve(proxyLn)
	defer srv.Close()
	otherLn, err := net.Listen("tcp", n.HostAddr.String()+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer otherLn.Close()
	go func() {
		for {
			c, err := otherLn.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	otherPort := strconv.Itoa(otherLn.Addr().(*net.TCPAddr).Port)

	cfg := testImageConfig(t, im)
	cfg.Network = &Network{TAP: n.TAP}
	m, err := New(ctx, cfg, WithID(id))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	script := strings.NewReplacer("HOSTADDR", n.HostAddr.String(), "OTHERPORT", otherPort,
		"PEERADDR", n.PeerAddr.String(), "HOSTFILE", hostFile).Replace(hostileScript)
	var stdout, stderr bytes.Buffer
	res, err := m.Run(ctx, []string{"bash", "-c", script}, nil, &stdout, io.MultiWriter(&stderr))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := m.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	// The blocks must come from the namespace's firewall (not from, say, a guest without
	// routes): its reject rule has to have counted packets.
	if _, err := exec.LookPath("nft"); err == nil {
		out, err := exec.Command("ip", "netns", "exec", n.Name, "nft", "list", "chain", "inet", netns.TableName, "forward").CombinedOutput()
		if err != nil {
			t.Fatalf("nft list: %v: %s", err, out)
		}
		if m := regexp.MustCompile(`counter packets (\d+)`).FindStringSubmatch(string(out)); m == nil || m[1] == "0" {
			t.Errorf("the forward chain's reject counter did not move:\n%s", out)
		}
	}
	t.Logf("guest output:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	probes := 0
	for _, line := range strings.Split(stdout.String(), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != "PROBE" {
			continue
		}
		probes++
		t.Run(f[1], func(t *testing.T) {
			// The control probe proves a probe can see an open path at all.
			want := "blocked"
			if strings.HasPrefix(f[1], "control-") {
				want = "open"
			}
			if f[2] != want {
				t.Errorf("%s, want %s", line, want)
			}
		})
	}
	if probes != 24 {
		t.Errorf("ran %d probes, want 24 (did the script break?)", probes)
	}
	if !strings.Contains(stdout.String(), "PROXIED http://allowed.example/") {
		t.Errorf("the allowed path through the proxy failed (exit %d)", res.ExitCode)
	}
}
