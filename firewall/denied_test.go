package firewall

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/firewall/audit"
	"github.com/bumperdev/bumper/firewall/gateway"
	"github.com/bumperdev/bumper/internal/denied"
)

// TestDenialsExplainThemselves sends what an agent (or an attacker) would try through a
// real firewall on loopback and checks that every refusal names its kind four times
// over: the X-Bumper-Denied header, the status line's reason phrase (all many clients
// print of a failed CONNECT), the one-line body (with the host and what to change), and
// the audit line's "denied" field.
func TestDenialsExplainThemselves(t *testing.T) {
	_, _, hp, tp := upstreams(t)
	px := startProxy(t, hp, tp, func(o *Options) {
		gw, err := gateway.New(gateway.Config{Audit: o.Audit})
		if err != nil {
			t.Fatal(err)
		}
		o.Gateway = gw
	})
	addHint := `add "pkgs.example.test" to allowlist: in .github/bumper.yml`
	tests := []struct {
		name   string
		raw    string
		status int
		kind   denied.Kind
		phrase string // the status line's reason phrase
		body   []string
	}{
		{"CONNECT to a name not on the allowlist", "CONNECT pkgs.example.test:443 HTTP/1.1\r\nHost: pkgs.example.test:443\r\n\r\n",
			403, denied.Host, "Bumper denied host pkgs.example.test", []string{"bumper firewall: 403 host: pkgs.example.test is not on the allowlist; " + addHint}},
		{"absolute-URI HTTP to a name not on the allowlist", "GET http://pkgs.example.test/simple/ HTTP/1.1\r\nHost: pkgs.example.test\r\n\r\n",
			403, denied.Host, "Bumper denied host pkgs.example.test", []string{"403 host: pkgs.example.test is not on the allowlist; " + addHint}},
		{"upper case and a trailing dot", "CONNECT PKGS.Example.Test.:443 HTTP/1.1\r\n\r\n",
			403, denied.Host, "Bumper denied host pkgs.example.test", []string{addHint}},
		{"a name on the deny list", "CONNECT blocked.allowed.test:443 HTTP/1.1\r\n\r\n",
			403, denied.Host, "Bumper denied host blocked.allowed.test", []string{"blocked.allowed.test is on the deny list"}},
		{"an allowed name on another port", "CONNECT allowed.test:22 HTTP/1.1\r\n\r\n",
			403, denied.Port, "Bumper denied port allowed.test", []string{`port 22 is not allowed for allowed.test`, `add "allowed.test:22" to allowlist:`}},
		{"a name resolving to the metadata address", "CONNECT meta.allowed.test:443 HTTP/1.1\r\n\r\n",
			403, denied.PrivateAddress, "Bumper denied private-address meta.allowed.test", []string{"169.254.169.254", "use a public host name"}},
		{"a name resolving to a private address, plain HTTP", "GET http://ten.allowed.test:" + hp + "/ HTTP/1.1\r\nHost: ten.allowed.test:" + hp + "\r\n\r\n",
			403, denied.PrivateAddress, "Bumper denied private-address ten.allowed.test", []string{"10.1.2.3", "RFC 1918"}},
		{"an IP literal", "CONNECT 93.184.215.14:443 HTTP/1.1\r\n\r\n",
			403, denied.PrivateAddress, "Bumper denied private-address 93.184.215.14", []string{"IP literal 93.184.215.14 is refused"}},
		{"a non-canonical IP literal names no host", "GET http://0x7f.1/ HTTP/1.1\r\nHost: 0x7f.1\r\n\r\n",
			403, denied.PrivateAddress, "Bumper denied private-address", []string{"non-canonical"}},
		{"userinfo", "GET http://allowed.test@evil.test/ HTTP/1.1\r\nHost: evil.test\r\n\r\n",
			403, denied.Credential, "Bumper denied credential", []string{"userinfo"}},
		{"https absolute URI", "GET https://pkgs.example.test/ HTTP/1.1\r\nHost: pkgs.example.test\r\n\r\n",
			400, denied.Method, "Bumper denied method", []string{"use CONNECT"}},
		{"websocket upgrade", "GET http://allowed.test:" + hp + "/ HTTP/1.1\r\nHost: allowed.test:" + hp + "\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
			400, denied.Method, "Bumper denied method", []string{"upgrades"}},
		{"a host with a space and a CR in it", "CONNECT a\rb.test:443 HTTP/1.1\r\n\r\n",
			400, denied.Malformed, "Bumper denied malformed", nil},
		{"garbage", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n",
			400, denied.Malformed, "Bumper denied malformed", nil},
		{"unresolvable", "CONNECT nx.allowed.test:443 HTTP/1.1\r\n\r\n",
			502, denied.Unreachable, "Bumper denied unreachable nx.allowed.test", []string{"could not resolve nx.allowed.test"}},
		{"gateway: git not configured", "GET /git/o/r.git/info/refs?service=git-upload-pack HTTP/1.1\r\nHost: fw\r\n\r\n",
			404, denied.Git, "Not Found", []string{"bumper firewall: 404 git: the git gateway is not configured"}},
		{"gateway: method override", "GET /api/github/repos/o/r HTTP/1.1\r\nHost: fw\r\nX-HTTP-Method-Override: DELETE\r\n\r\n",
			403, denied.Method, "Forbidden", []string{"403 method: method override"}},
		{"gateway: a path no gateway serves", "GET /metadata/v1 HTTP/1.1\r\nHost: fw\r\n\r\n",
			404, denied.Malformed, "Not Found", []string{"404 malformed: no gateway serves this path"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", px.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			io.WriteString(c, tc.raw)
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body := string(b)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %q, want %d", resp.Status, tc.status)
			}
			if want := strconv.Itoa(tc.status) + " " + tc.phrase; resp.Status != want {
				t.Errorf("status line %q, want %q", resp.Status, want)
			}
			if got := resp.Header.Get(denied.Header); got != string(tc.kind) {
				t.Errorf("%s: %q, want %q", denied.Header, got, tc.kind)
			}
			if got := resp.Header.Get("X-Bumper-Firewall"); got != "refused" {
				t.Errorf("X-Bumper-Firewall: %q", got)
			}
			prefix := "bumper firewall: " + strconv.Itoa(tc.status) + " " + string(tc.kind) + ": "
			if !strings.HasPrefix(body, prefix) || strings.Count(strings.TrimSuffix(body, "\n"), "\n") != 0 {
				t.Errorf("body %q, want one line starting %q", body, prefix)
			}
			for _, s := range tc.body {
				if !strings.Contains(body, s) {
					t.Errorf("body %q does not say %q", body, s)
				}
			}
			line := px.waitAudit(t, `"allowed":false`, `"status":`+strconv.Itoa(tc.status), `"denied":"`+string(tc.kind)+`"`)
			var e struct {
				Denied string `json:"denied"`
			}
			if err := json.Unmarshal([]byte(line), &e); err != nil || e.Denied != string(tc.kind) {
				t.Errorf("audit line %s: denied %q (%v)", line, e.Denied, err)
			}
		})
	}
	px.log.Flush()
	f, err := os.Open(px.auditPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := audit.Verify(f, ""); err != nil {
		t.Fatalf("audit chain with the denied field: %v", err)
	}
}

// TestGoClientPrintsTheKind: Go's HTTP client reports a refused CONNECT by its status
// line's reason phrase only (not even the code), so that phrase is what an agent's Go
// tool shows.
func TestGoClientPrintsTheKind(t *testing.T) {
	_, _, hp, tp := upstreams(t)
	px := startProxy(t, hp, tp, nil)
	proxyURL, _ := url.Parse("http://" + px.addr)
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}, Timeout: 5 * time.Second}
	resp, err := client.Get("https://pkgs.example.test/")
	if err == nil {
		resp.Body.Close()
	}
	if err == nil || !strings.Contains(err.Error(), ": Bumper denied host pkgs.example.test") {
		t.Fatalf("Go's error %v does not name the kind and the host", err)
	}
}
