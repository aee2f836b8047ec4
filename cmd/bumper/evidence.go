package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bumperdev/bumper/app/setup"
	"github.com/bumperdev/bumper/internal/attest"
)

const evidenceUsage = "bumper evidence verify [--key PEM | --url SERVE] [--evidence evidence.json] [--head SHA] [--repo OWNER/NAME] FILE\n" +
	"       bumper evidence keygen [--dir DIR]"

// runEvidence is `bumper evidence`: verify a run's signed statement offline, or make
// serve's attestation key.
func runEvidence(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "verify":
			return runEvidenceVerify(ctx, args[1:], stdout, stderr)
		case "keygen":
			return runEvidenceKeygen(args[1:], stdout, stderr)
		case "-h", "--help":
			fmt.Fprintln(stderr, "Usage: "+evidenceUsage)
			return nil
		}
	}
	return fmt.Errorf("%w: want '%s'", errUsage, strings.ReplaceAll(evidenceUsage, "\n       ", "' or '"))
}

// maxKeyDoc bounds serve's published keys and a key file as read here.
const maxKeyDoc = 64 << 10

func runEvidenceVerify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("evidence verify", "[--key PEM | --url SERVE] [--evidence evidence.json] [--head SHA] [--repo OWNER/NAME] FILE", stderr)
	keyFile := fs.String("key", "", "serve's attestation public key(s), PEM (attestation-public-key.pem from bumper setup)")
	serveURL := fs.String("url", "", "serve's base URL: fetch its public keys from URL"+attest.KeyPath)
	evidencePath := fs.String("evidence", "", "the run's evidence.json (default: evidence.json beside FILE)")
	head := fs.String("head", "", "the head commit the statement must name (default: evidence.json's head_commit)")
	repo := fs.String("repo", "", "the repository whose work item the statement must be about, OWNER/NAME")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: evidence verify takes exactly one FILE (evidence.intoto.jsonl)", errUsage)
	}
	if (*keyFile == "") == (*serveURL == "") {
		return fmt.Errorf("%w: give serve's public key with exactly one of --key PEM and --url SERVE", errUsage)
	}
	keys, err := trustedKeys(ctx, *keyFile, *serveURL)
	if err != nil {
		return err
	}
	file := fs.Arg(0)
	if *evidencePath == "" {
		*evidencePath = filepath.Join(filepath.Dir(file), attest.EvidenceName)
	}
	fail := func(format string, args ...any) error {
		fmt.Fprintf(stdout, "FAIL %s: %s\n", file, fmt.Sprintf(format, args...))
		return exitError{code: 1}
	}
	raw, err := readBounded(file, attest.MaxEnvelopeBytes+1)
	if err != nil {
		return fail("%v", err)
	}
	line, err := attest.ReadBundle(raw)
	if err != nil {
		return fail("%v", err)
	}
	got, err := attest.Verify(ctx, line, keys)
	if err != nil {
		return fail("%v", err)
	}
	evidence, err := os.ReadFile(*evidencePath)
	if err != nil {
		return fail("failed to read the evidence it attests: %v (--evidence names it)", err)
	}
	if err := got.CheckEvidence(evidence); err != nil {
		return fail("%s: %v", *evidencePath, err)
	}
	want := *head
	if want == "" {
		// The evidence's own head, now that the evidence is the one signed.
		var ev struct {
			HeadCommit string `json:"head_commit"`
		}
		if err := json.Unmarshal(evidence, &ev); err != nil || ev.HeadCommit == "" {
			return fail("%s names no head_commit: give the head with --head SHA", *evidencePath)
		}
		want = ev.HeadCommit
	}
	if err := got.CheckCommit(want); err != nil {
		return fail("%v", err)
	}
	p := got.Predicate
	if r, _, _ := strings.Cut(p.WorkItem, "#"); *repo != "" && !strings.EqualFold(r, *repo) {
		return fail("the statement is about work item %s, not one of %s", p.WorkItem, *repo)
	}
	fmt.Fprintf(stdout, "ok %s: serve (key %s) attests %s at %s, commit %s, %s sha256:%s\n", file, got.KeyID, p.WorkItem,
		p.AttestedAt.Format(time.RFC3339), got.Commit, attest.EvidenceName, got.EvidenceSHA256)
	approvers := make([]string, len(p.Approval.Approvers))
	for i, a := range p.Approval.Approvers {
		approvers[i] = "@" + a.Login
	}
	fmt.Fprintf(stdout, "  %s attempt %d, approval %s by %s, policy %s\n", p.Stage, p.Attempt, p.Approval.Revision, strings.Join(approvers, ", "), p.PolicyVersion)
	c := p.RunnerClaims
	fmt.Fprintf(stdout, "  the runner's claims: image %s, harness %s %s, verification %s, %d gate result(s), cost %d µUSD\n",
		c.ImageDigest, c.Harness.Name, c.Harness.Version, c.Verification, len(c.Gates), c.CostMicroUSD)
	// What was not checked against anything but the files themselves, said: any genuine
	// statement agrees with its own evidence.
	var unchecked []string
	if *head == "" {
		unchecked = append(unchecked, "the commit is evidence.json's own: --head SHA checks it is the pull request's head")
	}
	if *repo == "" {
		unchecked = append(unchecked, "--repo OWNER/NAME checks the work item is that repository's")
	}
	for _, u := range unchecked {
		fmt.Fprintf(stdout, "  not checked: %s\n", u)
	}
	return nil
}

// trustedKeys reads serve's public keys from a file or from serve.
func trustedKeys(ctx context.Context, keyFile, serveURL string) ([]attest.PublicKey, error) {
	var raw []byte
	var err error
	if keyFile != "" {
		if raw, err = readBounded(keyFile, maxKeyDoc); err != nil {
			return nil, err
		}
	} else if raw, err = fetchKeys(ctx, serveURL); err != nil {
		return nil, err
	}
	keys, err := attest.ParsePublicKeys(raw)
	if err != nil {
		return nil, fmt.Errorf("serve's public key: %w", err)
	}
	return keys, nil
}

// fetchKeys gets serve's published keys. Over plain http only on loopback: the keys
// decide what verifies.
func fetchKeys(ctx context.Context, base string) ([]byte, error) {
	u, err := url.Parse(strings.TrimSuffix(base, "/"))
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("%w: --url %q is not serve's http(s) base URL", errUsage, base)
	}
	if u.Scheme == "http" && !loopbackHost(u.Hostname()) {
		return nil, fmt.Errorf("%w: --url %s: fetch serve's key over https (plain http only on loopback), or give it with --key", errUsage, base)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.JoinPath(attest.KeyPath).String(), nil)
	if err != nil {
		return nil, fmt.Errorf("failed to ask serve for its key: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("failed to fetch serve's attestation key: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxKeyDoc+1))
	if err != nil {
		return nil, fmt.Errorf("failed to fetch serve's attestation key: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("serve answered %s %s: %s", attest.KeyPath, resp.Status, strings.TrimSpace(string(raw[:min(len(raw), 300)])))
	}
	if len(raw) > maxKeyDoc {
		return nil, fmt.Errorf("serve's key document is over %d bytes", maxKeyDoc)
	}
	return raw, nil
}

func loopbackHost(h string) bool {
	return h == "localhost" || h == "127.0.0.1" || h == "::1"
}

// readBounded reads at most limit bytes of a file, refusing a larger one.
func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("failed to read %s: %w", path, err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("failed to read %s: %w", path, err)
	}
	if int64(len(raw)) > limit {
		return nil, fmt.Errorf("%s is over %d bytes", path, limit)
	}
	return raw, nil
}

// The key files keygen writes, named as bumper setup names them.
const (
	attestationKeyName       = setup.AttestationKeyFile
	attestationPublicKeyName = setup.AttestationPublicKeyFile
)

// runEvidenceKeygen writes a new attestation key (0600) and its public key, refusing to
// overwrite either: a key replaced by mistake cannot be had back.
func runEvidenceKeygen(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("evidence keygen", "[--dir DIR]", stderr)
	dir := fs.String("dir", ".", "where "+attestationKeyName+" (mode 0600) and "+attestationPublicKeyName+" go")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: evidence keygen takes no arguments", errUsage)
	}
	priv, err := attest.GenerateKey()
	if err != nil {
		return err
	}
	signer, err := attest.NewSigner(priv)
	if err != nil {
		return err
	}
	privPath, pubPath := filepath.Join(*dir, attestationKeyName), filepath.Join(*dir, attestationPublicKeyName)
	for _, p := range []string{privPath, pubPath} {
		if _, err := os.Lstat(p); err == nil || !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s exists: keygen never replaces a key; move it away first (docs/attestation.md, rotation)", p)
		}
	}
	if err := writeNew(privPath, priv, 0o600); err != nil {
		return err
	}
	if err := writeNew(pubPath, attest.EncodePublicKeys([]attest.PublicKey{signer.PublicKey()}), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (mode 0600; set bumper.attestation_key_file to it) and %s (key %s)\n", privPath, pubPath, signer.PublicKey().ID())
	return nil
}

// writeNew creates path with data, failing if it exists.
func writeNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("failed to create %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("failed to write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("failed to write %s: %w", path, err)
	}
	return nil
}
