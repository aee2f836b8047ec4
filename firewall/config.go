package firewall

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/bumperdev/bumper/firewall/credential"
)

// Environment variables that carry secrets when the config names no file for them.
const (
	EnvGitHubToken  = "BUMPER_GITHUB_TOKEN"
	EnvAnthropicKey = "BUMPER_ANTHROPIC_KEY"
	EnvOpenAIKey    = "BUMPER_OPENAI_KEY"
	// EnvDependencyToken is the dependency token (GatewayConfig.Dependencies).
	EnvDependencyToken = "BUMPER_DEPENDENCY_TOKEN"
)

// Config is the firewall's YAML configuration. Secrets are never written in it: they
// come from files it names or from environment variables. A caller may set or add to any
// field after loading it (the command layers its flags over the file this way).
type Config struct {
	// Listen is the proxy's address, e.g. 127.0.0.1:3128 (required).
	Listen string `yaml:"listen"`
	// Audit is the hash-chained JSON-lines audit log to append to (required).
	Audit string `yaml:"audit"`
	// Allow and Deny are policy entries: name, *.suffix or IP literal, optionally
	// :port[,port].
	Allow []string `yaml:"allow"`
	Deny  []string `yaml:"deny"`
	// Resolve pins names to IP addresses, which are trusted as given (they skip the
	// address filter).
	Resolve map[string]string `yaml:"resolve"`
	Limits  Limits            `yaml:"limits"`
	Gateway GatewayConfig     `yaml:"gateways"`
	Budget  BudgetConfig      `yaml:"budget"`
	// Secrets, when set, are the gateways' credentials, used instead of the files and
	// environment variables the YAML names: a caller that runs the firewall in process
	// (bumper run) hands over the run's token without writing it to disk or putting it
	// in an environment a child process could inherit. Never read from YAML.
	Secrets *Secrets `yaml:"-"`
	// Credentials are the runner host's credentials the run was granted (issue #26,
	// docs/credentials.md): requests to their hosts go upstream over TLS (verified
	// against Gateway.CAFile when set) with the value added. Never read from YAML: the
	// runner hands them over in memory.
	Credentials []credential.Credential `yaml:"-"`
}

// Secrets are the real credentials the gateways put in place of the VM's sentinels.
type Secrets struct {
	GitHubToken, AnthropicKey, OpenAIKey string
	// DependencyToken reads GatewayConfig.Dependencies (contents: read on exactly them).
	DependencyToken string
}

// Limits bound what one client may hold. Zero values take the defaults.
type Limits struct {
	MaxHeaderBytes    int           `yaml:"max_header_bytes"`
	IdleTimeout       time.Duration `yaml:"idle_timeout"`
	MaxConnDuration   time.Duration `yaml:"max_conn_duration"`
	DialTimeout       time.Duration `yaml:"dial_timeout"`
	MaxConnsPerClient int           `yaml:"max_conns_per_client"`
	DNSCacheTTL       time.Duration `yaml:"dns_cache_ttl"`
}

// GatewayConfig configures the gateways; an empty base URL turns that gateway off.
type GatewayConfig struct {
	GitBase       string `yaml:"git_base"`
	GitHubAPIBase string `yaml:"github_api_base"`
	AnthropicBase string `yaml:"anthropic_base"`
	OpenAIBase    string `yaml:"openai_base"`
	// Repository is the run's repository, owner/name: the only one the git and API
	// gateways serve (required when either is on); RepositoryID its numeric id, which
	// /repositories/{id} paths need (gateway.Config.Repository, RepositoryID).
	Repository   string   `yaml:"repository"`
	RepositoryID int64    `yaml:"repository_id"`
	APIAllow     []string `yaml:"api_allow"` // the agent's GitHub API, read-only; empty: none (gateway.Config.APIAllow)
	PushRef      string   `yaml:"push_ref"`
	// PushFrom is the only old value an update of PushRef may carry (gateway.Config.PushFrom).
	PushFrom string `yaml:"push_from"`
	// PushClosed starts with pushes closed until Firewall.SetPushOpen opens them: for a
	// caller in process (bumper run) that pushes the verified result itself.
	PushClosed bool `yaml:"-"`
	// Dependencies are other repositories of the run's owner the git gateway serves
	// for fetching only, with the dependency token (gateway.Config.Dependencies).
	Dependencies        []string `yaml:"dependencies"`
	DependencyTokenFile string   `yaml:"dependency_token_file"`
	CAFile              string   `yaml:"ca_file"`
	TokenFile           string   `yaml:"token_file"`
	AnthropicKeyFile    string   `yaml:"anthropic_key_file"`
	OpenAIKeyFile       string   `yaml:"openai_key_file"`
}

// BudgetConfig caps the run's model spending.
type BudgetConfig struct {
	USD        float64 `yaml:"usd"`         // 0: metered, not capped
	PricesFile string  `yaml:"prices_file"` // empty: the table built into this binary
}

// LoadConfig reads a config file strictly: unknown keys and wrong types are errors that
// name the line.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("failed to read firewall config: %w", err)
	}
	var c Config
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	// An empty file (io.EOF) means all defaults.
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("failed to parse firewall config %s: %w", path, err)
	}
	return &c, nil
}

// readSecret takes a secret from a file (trimmed) or, failing that, the environment.
func readSecret(file, env string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("failed to read secret file: %w", err)
		}
		s := strings.TrimSpace(string(b))
		if s == "" {
			return "", fmt.Errorf("secret file %s is empty", file)
		}
		return s, nil
	}
	return os.Getenv(env), nil
}
