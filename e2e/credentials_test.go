package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bumperdev/bumper/ghemu"
)

// The private registry's credential: a value with a prefix the agent can search for
// without being told the value (npmrealtoken…), and the name the repository asks for.
const (
	privateRegistry = "npm.corp.test"
	otherCorpHost   = "other.corp.test"
	credentialName  = "npm-corp"
	realPrefix      = "npmrealtoken"
	// otherCorpAddr is where other.corp.test is pinned: a loopback address of its own.
	otherCorpAddr = "127.0.0.2"
)

// requestLog records what a test server was sent.
type requestLog struct {
	mu   sync.Mutex
	reqs []string
}

func (l *requestLog) add(r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = append(l.reqs, r.Method+" "+r.URL.RequestURI()+" auth="+r.Header.Get("Authorization"))
}

func (l *requestLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.reqs, "\n")
}

// privateCA makes a CA and a certificate for host signed by it.
func privateCA(t *testing.T, host string) (caPEM []byte, leaf tls.Certificate) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Corp test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// npmTarball is an npm package tarball holding package/package.json and package/index.js.
func npmTarball(t *testing.T, name, version string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range []struct{ name, body string }{
		{"package/package.json", fmt.Sprintf(`{"name":%q,"version":%q,"main":"index.js"}`, name, version)},
		{"package/index.js", "module.exports = { secret: () => 42 };\n"},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), ModTime: time.Unix(0, 0)}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(f.body))
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

// credentialAgent is the scripted agent of TestPrivateRegistryCredential: it searches
// the VM for the credential's value by its prefix (never knowing the value), sends the
// placeholder to another allowed host, reads the private registry itself, and makes a
// change for the pull request.
const credentialAgent = `#!/bin/sh
p="npmreal""token"
env_hits=$(env | grep -c "$p")
environ_hits=$(cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n' | grep -c "$p")
file_hits=$(grep -rla -- "$p" "$HOME" /workspace /tmp 2>/dev/null | wc -l)
echo "leak-scan: env=$env_hits environ=$environ_hits files=$file_hits"
echo "placeholder-probe: $(curl -sS -i -H "Authorization: Bearer $BUMPER_CREDENTIAL_NPM_CORP" "http://other.corp.test/probe" 2>&1 | tr '\r\n' '  ')"
echo "registry-probe: $(curl -sS -o /dev/null -w '%{http_code}' "${BUMPER_CREDENTIAL_NPM_CORP_URL}@corp%2fsecret-lib" 2>&1)"
echo "installed: $(cd "$HOME/deps" && node -e "console.log(require('@corp/secret-lib').secret())")"
for i in $(seq 20); do curl -sS -o /dev/null https://pkgs.example.test/ 2>/dev/null; done
echo "denied-probe: $(curl -sS -v https://pkgs.example.test/ 2>&1 | grep -i 'x-bumper-denied\|< HTTP' | tr '\r\n' '  ') seconds=$(curl -sS -o /dev/null -w '%{time_total}' https://pkgs.example.test/ 2>/dev/null)"
echo "index-probe: $(cd "$HOME/deps" && node "$HOME/npm/package/bin/npm-cli.js" view --fetch-retries=0 --registry https://registry.unlisted.test/ left-pad version 2>&1 | tr '\n' ' ' | cut -c1-400)"
echo "The private package answers 42." > CREDENTIALS.md
`

// TestPrivateRegistryCredential: a repository whose environment setup runs npm ci of a
// private package from a registry that requires a token gets its pull request; the
// runner host's credentials file holds the token, the firewall adds it toward the
// registry only, and nothing in the VM (environment, every process's environ, the home,
// the workspace) holds it. A placeholder sent to another allowed host is refused and that
// host sees nothing. Then the runner host stops granting the credential to the
// repository: the next run fails at its exchange, saying so.
func TestPrivateRegistryCredential(t *testing.T) {
	real := realPrefix + strings.Repeat("5f3a", 8)
	caPEM, leaf := privateCA(t, privateRegistry)
	tgz := npmTarball(t, "@corp/secret-lib", "1.0.0")
	sum := sha512.Sum512(tgz)
	integrity := "sha512-" + base64.StdEncoding.EncodeToString(sum[:])

	registry := &requestLog{}
	reg := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		registry.add(r)
		if r.Header.Get("Authorization") != "Bearer "+real {
			http.Error(rw, `{"error":"token required"}`, http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/@corp/secret-lib", "/@corp%2fsecret-lib":
			rw.Header().Set("Content-Type", "application/json")
			json.NewEncoder(rw).Encode(map[string]any{"name": "@corp/secret-lib", "dist-tags": map[string]string{"latest": "1.0.0"},
				"versions": map[string]any{"1.0.0": map[string]any{"name": "@corp/secret-lib", "version": "1.0.0",
					"dist": map[string]string{"tarball": "https://" + privateRegistry + "/@corp/secret-lib/-/secret-lib-1.0.0.tgz", "integrity": integrity}}}})
		case "/@corp/secret-lib/-/secret-lib-1.0.0.tgz":
			rw.Header().Set("Content-Type", "application/octet-stream")
			rw.Write(tgz)
		default:
			http.NotFound(rw, r)
		}
	}))
	reg.TLS = &tls.Config{Certificates: []tls.Certificate{leaf}}
	reg.StartTLS()
	t.Cleanup(reg.Close)
	other := &requestLog{}
	// The other host is allowed as the allowlist allows a pinned host: port 80 for plain
	// HTTP, so it listens there, on an address of its own.
	otherLn, err := net.Listen("tcp", otherCorpAddr+":80")
	if err != nil {
		t.Fatalf("the other host needs port 80 on %s (root): %v", otherCorpAddr, err)
	}
	otherSrv := &httptest.Server{Listener: otherLn, Config: &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { other.add(r) })}}
	otherSrv.Start()
	t.Cleanup(otherSrv.Close)
	_, regPort, _ := net.SplitHostPort(reg.Listener.Addr().String())

	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	valueFile := write("npm-corp.token", []byte(real+"\n"))
	caFile := write("corp-ca.pem", caPEM)
	credFile := func(repos string) {
		write("credentials.yml", fmt.Appendf(nil, "version: 1\ncredentials:\n  - name: %s\n    hosts: [%s:%s]\n    auth: bearer\n    file: %s\n    ca_file: %s\n    repositories: [%s]\n",
			credentialName, privateRegistry, regPort, valueFile, caFile, repos))
	}
	credFile(ghemu.DefaultOrg + "/" + ghemu.DefaultRepo)
	pins := append(registryPins(t, "proxy.golang.org", "registry.npmjs.org"), privateRegistry+":127.0.0.1", otherCorpHost+":"+otherCorpAddr)

	lock := map[string]any{"name": "widgets", "version": "1.0.0", "lockfileVersion": 3, "requires": true,
		"packages": map[string]any{
			"":                              map[string]any{"name": "widgets", "version": "1.0.0", "dependencies": map[string]string{"@corp/secret-lib": "1.0.0"}},
			"node_modules/@corp/secret-lib": map[string]any{"version": "1.0.0", "resolved": "http://" + privateRegistry + "/@corp/secret-lib/-/secret-lib-1.0.0.tgz", "integrity": integrity},
		}}
	lockJSON, _ := json.MarshalIndent(lock, "", "  ")
	policy := "version: 1\n" +
		"harness:\n  name: command\n  command: sh .bumper/agent.sh\n" +
		"verification:\n  - test \"$(cd \"$HOME/deps\" && node -e \"console.log(require('@corp/secret-lib').secret())\")\" = 42\n" +
		"bounds:\n  verification_rounds: 1\n  wall_time: 20m\n" +
		"reviewer: false\n" +
		"credentials: [" + credentialName + "]\n" +
		"allowlist: [" + otherCorpHost + "]\n" +
		"environment:\n  packages: [nodejs, curl]\n  setup: scripts/env-setup.sh\n  inputs: [package.json, package-lock.json, .npmrc]\n" +
		"  allow: [registry.npmjs.org]\n"
	w := newWorld(t, options{ownImages: true, runnerEnv: []string{
		"BUMPER_CA_FILE=" + hostCABundle,
		"BUMPER_CREDENTIALS=" + filepath.Join(dir, "credentials.yml"),
		"BUMPER_FIREWALL_RESOLVE=" + strings.Join(pins, ","),
	}, files: func(f map[string]string) {
		for _, name := range []string{"widgets.sh", "test.sh"} {
			delete(f, name)
		}
		f["package.json"] = `{"name":"widgets","version":"1.0.0","private":true,"dependencies":{"@corp/secret-lib":"1.0.0"}}` + "\n"
		f["package-lock.json"] = string(lockJSON) + "\n"
		// The documented way (docs/credentials.md): the scope's registry is the
		// credential's plain-HTTP URL, and its token the placeholder.
		f[".npmrc"] = "@corp:registry=http://" + privateRegistry + "/\n//" + privateRegistry + "/:_authToken=${BUMPER_CREDENTIAL_NPM_CORP}\nupdate-notifier=false\n"
		f["scripts/env-setup.sh"] = npmSetup
		f[".bumper/agent.sh"] = credentialAgent
		f[".github/bumper.yml"] = policy
	}})
	r := w.runIssue("Use the private package", "Say what the private package answers.", "success")
	log := r.log
	if env := r.ev.Environment; env == nil || env.ImageDigest == env.BaseImageDigest {
		t.Fatalf("environment %+v", env)
	}
	agentLog, _ := os.ReadFile(filepath.Join(r.out, "agent-round-1.log"))
	for _, want := range []string{"leak-scan: env=0 environ=0 files=0", "registry-probe: 200", "installed: 42"} {
		if !strings.Contains(string(agentLog), want) {
			t.Fatalf("the agent's log lacks %q:\n%s", want, agentLog)
		}
	}
	probe := ""
	for _, line := range strings.Split(string(agentLog), "\n") {
		if strings.HasPrefix(line, "placeholder-probe:") {
			probe = line
		}
	}
	if !strings.Contains(probe, " 403 ") || !strings.Contains(probe, "X-Bumper-Denied: credential") || !strings.Contains(probe, "placeholder of credential "+credentialName) {
		t.Fatalf("the placeholder sent to another allowed host: %q", probe)
	}
	// Denials that explain themselves: the kind is in what curl shows, the evidence
	// holds both denied hosts once each with the change that would allow them, and the
	// pull request says so in one line.
	for _, want := range []string{"X-Bumper-Denied: host", "403 Bumper denied host pkgs.example.test"} {
		if !strings.Contains(string(agentLog), want) {
			t.Fatalf("the agent's log lacks %q:\n%s", want, agentLog)
		}
	}
	for _, line := range strings.Split(string(agentLog), "\n") {
		if strings.HasPrefix(line, "denied-probe:") || strings.HasPrefix(line, "index-probe:") {
			t.Log(line)
		}
	}
	d := r.ev.Egress.Denials
	if d == nil || len(d.Hosts) != 2 || !strings.Contains(d.Patch, "pkgs.example.test") || !strings.Contains(d.Patch, "registry.unlisted.test") {
		t.Fatalf("the evidence's denials: %+v", d)
	}
	pr := w.pull(t, r.ev.PullRequest)
	if strings.Count(pr.GetBody(), "hosts were denied") != 1 || !strings.Contains(pr.GetBody(), "**2 hosts were denied**") {
		t.Fatalf("the pull request's body:\n%s", pr.GetBody())
	}
	if got := other.String(); got != "" {
		t.Fatalf("the other host was reached: %q", got)
	}
	got := registry.String()
	// The setup ran npm ci when this host had not built the environment yet; the
	// agent's own probe reached the registry either way.
	installed := !r.ev.Environment.Built || strings.Contains(got, "GET /@corp/secret-lib/-/secret-lib-1.0.0.tgz auth=Bearer "+real)
	if !installed || strings.Contains(got, "placeholder") || strings.Count(got, "auth=Bearer "+real) != strings.Count(got, "\n")+1 {
		t.Fatalf("the registry saw:\n%s", got)
	}
	if len(r.ev.Credentials) != 1 || r.ev.Credentials[0].Name != credentialName {
		t.Fatalf("evidence credentials %+v", r.ev.Credentials)
	}
	for _, name := range []string{"audit.jsonl", "environment-audit.jsonl", "evidence.json", "agent-round-1.log"} {
		if b, _ := os.ReadFile(filepath.Join(r.out, name)); bytes.Contains(b, []byte(real)) {
			t.Fatalf("%s holds the credential's value", name)
		}
	}
	if strings.Contains(log, real) {
		t.Fatal("the job log holds the credential's value")
	}

	// The runner host's admin narrows the credential to another repository.
	credFile(ghemu.DefaultOrg + "/someone-else")
	r2 := w.runIssue("Use the private package again", "Again.", "failure")
	if !strings.Contains(r2.log, "is not granted to "+strings.ToLower(ghemu.DefaultOrg+"/"+ghemu.DefaultRepo)) {
		t.Fatalf("the refused run's log:\n%s", r2.log)
	}
}

// npmSetup is the environment's setup: npm itself from the public registry (Debian's
// nodejs has none), then npm ci of the lock file, whose private package comes from the
// private registry through the firewall, into ~/deps, which the image keeps.
const npmSetup = `#!/bin/sh
set -eu
curl -fsS https://registry.npmjs.org/npm/-/npm-10.8.2.tgz -o /tmp/npm.tgz
mkdir -p "$HOME/npm" && tar -xzf /tmp/npm.tgz -C "$HOME/npm" && rm /tmp/npm.tgz
mkdir -p "$HOME/deps" && cp package.json package-lock.json .npmrc "$HOME/deps/"
cd "$HOME/deps"
node "$HOME/npm/package/bin/npm-cli.js" ci --no-audit --no-fund
test -f node_modules/@corp/secret-lib/index.js
`
