package setup

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/template"

	"github.com/bumperdev/bumper/app"
	"github.com/bumperdev/bumper/internal/attest"
)

// The files Run writes into its directory.
const (
	PrivateKeyFile    = "app-private-key.pem" // 0600
	WebhookSecretFile = "webhook-secret"      // 0600
	ServeConfigFile   = "serve.yml"           // 0600: it holds the webhook secret and the run token key
	IdentityFile      = "app.json"            // 0644: the App's ID, slug, owner; nothing secret
	// AttestationKeyFile is serve's attestation key (0600), which signs each run's
	// statement; AttestationPublicKeyFile its public key (0644), for
	// `bumper evidence verify --key` (docs/attestation.md).
	AttestationKeyFile       = "attestation-key.pem"
	AttestationPublicKeyFile = "attestation-public-key.pem"
)

// Files are the names Run writes, in the order it writes them.
func Files() []string {
	return []string{PrivateKeyFile, WebhookSecretFile, AttestationKeyFile, AttestationPublicKeyFile, ServeConfigFile, IdentityFile}
}

// checkFree refuses a directory that already holds one of the files: an App's key is
// never replaced by a second setup.
func checkFree(dir string) error {
	var taken []string
	for _, name := range Files() {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			taken = append(taken, name)
		} else if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("failed to look at %s: %w", filepath.Join(dir, name), err)
		}
	}
	if len(taken) > 0 {
		return fmt.Errorf("%s already holds %s; setup never overwrites an App's credentials: choose another --dir, or move those files away", dir, strings.Join(taken, ", "))
	}
	return nil
}

type outFile struct {
	name string
	data []byte
	mode os.FileMode
}

// writeFiles writes every file or none: each goes to a temporary file first, and is
// then hard-linked into place, which fails instead of replacing a file that appeared
// meanwhile; on any failure the files already placed are removed again.
func writeFiles(o Options, id Identity, pem, webhookSecret string) ([]string, error) {
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("failed to create %s: %w", o.Dir, err)
	}
	absDir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("failed to resolve %s: %w", o.Dir, err)
	}
	runKey, err := randomHex(32)
	if err != nil {
		return nil, err
	}
	// The key's name alone: serve reads it beside serve.yml (app.LoadConfig), so the
	// directory can be copied to the server as it is.
	cfg, err := ServeConfig(o, id, PrivateKeyFile, webhookSecret, runKey)
	if err != nil {
		return nil, err
	}
	// serve must accept what it is given: the key is handed over inline because its
	// file is not in place yet.
	env := func(k string) (string, bool) {
		if k == app.EnvPrefix+"GITHUB_APP_PRIVATE_KEY" {
			return pem, true
		}
		return "", false
	}
	if _, err := app.ParseConfig(cfg, env); err != nil {
		return nil, fmt.Errorf("failed to write a serve configuration that serve accepts: %w", err)
	}
	ident, err := json.MarshalIndent(id, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("failed to encode the App's identity: %w", err)
	}
	attKey, attPub, err := attestationKeys()
	if err != nil {
		return nil, err
	}
	files := []outFile{
		{PrivateKeyFile, []byte(pem), 0o600},
		{WebhookSecretFile, []byte(webhookSecret + "\n"), 0o600},
		{AttestationKeyFile, attKey, 0o600},
		{AttestationPublicKeyFile, attPub, 0o644},
		{ServeConfigFile, cfg, 0o600},
		{IdentityFile, append(ident, '\n'), 0o644},
	}
	var temps, placed []string
	cleanup := func() {
		for _, p := range append(temps, placed...) {
			_ = os.Remove(p)
		}
	}
	for _, f := range files {
		tmp, err := writeTemp(absDir, f)
		if err != nil {
			cleanup()
			return nil, err
		}
		temps = append(temps, tmp)
	}
	var names []string
	for i, f := range files {
		dst := filepath.Join(absDir, f.name)
		if err := os.Link(temps[i], dst); err != nil {
			cleanup()
			return nil, fmt.Errorf("failed to put %s in place (nothing was kept): %w", dst, err)
		}
		placed = append(placed, dst)
		names = append(names, dst)
	}
	for _, t := range temps {
		_ = os.Remove(t)
	}
	return names, nil
}

func writeTemp(dir string, f outFile) (string, error) {
	tmp, err := os.CreateTemp(dir, "."+f.name+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("failed to create a temporary file in %s: %w", dir, err)
	}
	name := tmp.Name()
	fail := func(err error) (string, error) {
		_ = tmp.Close()
		_ = os.Remove(name)
		return "", fmt.Errorf("failed to write %s: %w", f.name, err)
	}
	if err := tmp.Chmod(f.mode); err != nil {
		return fail(err)
	}
	if _, err := tmp.Write(f.data); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		_ = os.Remove(name)
		return "", fmt.Errorf("failed to write %s: %w", f.name, err)
	}
	return name, nil
}

// OIDCIssuer is the issuer of Actions' OIDC tokens for the GitHub at githubURL whose
// REST API is apiURL: token.actions.githubusercontent.com for github.com, and
// https://HOST/_services/token for GitHub Enterprise Server (whose API is
// HOST/api/v3/). An API elsewhere is `bumper emulator`'s, whose issuer is its own
// address.
func OIDCIssuer(githubURL, apiURL string) string {
	v3, _, err := APIURLs(githubURL)
	switch {
	case err != nil || v3 == "https://api.github.com/":
		return app.DefaultConfig().Bumper.OIDCIssuer
	case strings.TrimRight(apiURL, "/") == strings.TrimRight(v3, "/"):
		return strings.TrimRight(githubURL, "/") + "/_services/token"
	default:
		return strings.TrimRight(githubURL, "/")
	}
}

// ServeConfig renders serve's configuration for the new App, commented like
// app/config.example.yml.
func ServeConfig(o Options, id Identity, keyFile, webhookSecret, runTokenKey string) ([]byte, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	_, v4, err := APIURLs(o.GitHubURL)
	if err != nil {
		return nil, err
	}
	if o.APIURL != "" {
		if d, _, _ := APIURLs(o.GitHubURL); d != o.APIURL {
			v4 = strings.TrimSuffix(o.APIURL, "/") + "/graphql"
		}
	}
	def := app.DefaultConfig()
	issuer := o.OIDCIssuer
	if issuer == "" {
		issuer = OIDCIssuer(o.GitHubURL, o.APIURL)
	}
	var b strings.Builder
	err = serveTemplate.Execute(&b, map[string]any{
		"WebURL": strings.TrimRight(o.GitHubURL, "/"), "V3": o.APIURL, "V4": v4, "App": id,
		"WebhookSecret": webhookSecret, "KeyFile": keyFile, "RunTokenKey": runTokenKey,
		"PublicURL": strings.TrimRight(o.PublicURL, "/"), "WebhookPath": o.WebhookPath,
		"Address": def.Server.Address, "Label": def.Bumper.TriggerLabel, "Workflow": def.Bumper.Workflow,
		"OIDC": issuer, "AttestationKeyFile": AttestationKeyFile,
	})
	if err != nil {
		return nil, fmt.Errorf("failed to render serve's configuration: %w", err)
	}
	return []byte(b.String()), nil
}

var serveTemplate = template.Must(template.New("serve.yml").Parse(`# bumper serve --config serve.yml
#
# Written by ` + "`bumper setup`" + ` for the GitHub App {{printf "%q" .App.Name}} (ID {{.App.ID}}, {{.App.HTMLURL}}).
# Every key is documented in app/config.example.yml and docs/install.md. This file
# holds the webhook secret and the run token key: keep it mode 0600. Environment
# variables override it (BUMPER_GITHUB_APP_WEBHOOK_SECRET, BUMPER_RUN_TOKEN_KEY, ...).

github:
  # Where GitHub is.
  web_url: {{.WebURL}}
  v3_api_url: {{.V3}}
  v4_api_url: {{.V4}}
  app:
    # The App's ID.
    integration_id: {{.App.ID}}
    # The App's webhook secret (also in webhook-secret beside this file); unsigned or
    # wrongly signed deliveries are refused.
    webhook_secret: {{printf "%q" .WebhookSecret}}
    # Empty: the key is read from bumper.private_key_file.
    private_key: ""

server:
  # Where serve listens. GitHub sends webhooks to {{.PublicURL}}{{.WebhookPath}}:
  # put a TLS-terminating proxy at {{.PublicURL}} in front of this address.
  address: {{.Address}}
  # The webhook route; it must match the App's webhook URL.
  webhook_path: {{.WebhookPath}}

bumper:
  # The App's private key, as GitHub handed it over (mode 0600); a relative path is
  # relative to this file's directory.
  private_key_file: {{printf "%q" .KeyFile}}
  # The label that asks Bumper to work on an issue; create it in each repository.
  trigger_label: {{printf "%q" .Label}}
  # The runner workflow under .github/workflows/ of each repository: copy
  # .github/workflows/bumper-run.yml from Bumper's source.
  workflow: {{.Workflow}}
  # The issuer of the runners' OIDC tokens (audience "bumper"): GitHub Enterprise
  # Server's is https://HOST/_services/token.
  oidc_issuer: {{.OIDC}}
  # Signs run tokens and status records: 32 random bytes, made by setup. Every replica
  # needs the same key; rotate it with previous_run_token_keys (docs/operating.md).
  run_token_key: {{.RunTokenKey}}
  # serve's attestation key (mode 0600), made by setup: it signs each run's statement,
  # and no runner or VM ever sees it. Its public key is attestation-public-key.pem
  # beside this file and GET /api/v1/attestation/key (docs/attestation.md).
  attestation_key_file: "{{.AttestationKeyFile}}"

log:
  # debug, info, warn or error.
  level: info
`))

// attestationKeys makes serve's attestation key and its public key, as PEM.
func attestationKeys() (key, public []byte, err error) {
	key, err = attest.GenerateKey()
	if err != nil {
		return nil, nil, err
	}
	s, err := attest.NewSigner(key)
	if err != nil {
		return nil, nil, err
	}
	return key, attest.EncodePublicKeys([]attest.PublicKey{s.PublicKey()}), nil
}

// joinPath joins for display, keeping a relative directory relative.
func joinPath(dir, name string) string { return filepath.Join(dir, name) }
