// Package credentials reads the runner host's credentials file (BUMPER_CREDENTIALS,
// issue #26): the secrets a repository's runs may ask for by name, the hosts each may
// be sent to, how, and which repositories may ask. The runner grants a run the
// credentials its policy names (.github/bumper.yml credentials:) and its repository is
// allowed; the firewall holds the values, the VM a placeholder at most.
package credentials

import (
	"bytes"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/bumperdev/bumper/firewall/credential"
	"github.com/bumperdev/bumper/internal/repoconfig"
)

// Env names the runner host's credentials file.
const Env = "BUMPER_CREDENTIALS"

// MaxCredentials bounds the file; MaxValueBytes one value.
const (
	MaxCredentials = 100
	MaxValueBytes  = 16 << 10
)

// file is the YAML as written.
type file struct {
	Version     int `yaml:"version"`
	Credentials []struct {
		Name         string   `yaml:"name"`
		Hosts        []string `yaml:"hosts"`
		Auth         string   `yaml:"auth"`
		Header       string   `yaml:"header"`
		Username     string   `yaml:"username"`
		File         string   `yaml:"file"`
		CAFile       string   `yaml:"ca_file"`
		Repositories []string `yaml:"repositories"`
	} `yaml:"credentials"`
}

// Entry is one credential of the file, its value read, with the repositories that may
// ask for it.
type Entry struct {
	credential.Credential
	// Repositories are owner/name or owner/* patterns, lower-cased.
	Repositories []string
}

// Host is the runner host's credentials. The zero value holds none.
type Host struct {
	path    string
	entries map[string]Entry
}

// Load reads the file at p. It must be a regular file that only its owner may read or
// write (0600 or narrower), and so must every value file it names: a credential the
// runner host leaves readable to others is refused before any run gets it.
func Load(p string) (*Host, error) {
	data, err := readPrivate(p, 1<<20)
	if err != nil {
		return nil, err
	}
	var f file
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("failed to parse the credentials file %s: %w", p, err)
	}
	if f.Version != 1 {
		return nil, fmt.Errorf("credentials file %s: version is %d; write version: 1", p, f.Version)
	}
	if len(f.Credentials) > MaxCredentials {
		return nil, fmt.Errorf("credentials file %s declares %d credentials; at most %d", p, len(f.Credentials), MaxCredentials)
	}
	h := &Host{path: p, entries: map[string]Entry{}}
	var all []credential.Credential
	for i, c := range f.Credentials {
		at := fmt.Sprintf("credentials file %s: credentials[%d] (%s)", p, i, c.Name)
		if _, dup := h.entries[c.Name]; dup {
			return nil, fmt.Errorf("%s: the name is declared twice", at)
		}
		e := Entry{Credential: credential.Credential{Name: c.Name, Auth: credential.Auth(c.Auth), Header: c.Header, Username: c.Username}}
		for _, s := range c.Hosts {
			hh, err := credential.ParseHost(s)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", at, err)
			}
			e.Hosts = append(e.Hosts, hh)
		}
		if len(c.Repositories) == 0 {
			return nil, fmt.Errorf("%s: repositories is empty; name the repositories (owner/name or owner/*) that may ask for it", at)
		}
		for _, r := range c.Repositories {
			if err := checkPattern(r); err != nil {
				return nil, fmt.Errorf("%s: %w", at, err)
			}
			e.Repositories = append(e.Repositories, strings.ToLower(r))
		}
		if c.File == "" {
			return nil, fmt.Errorf("%s: file is missing; name the file holding the value", at)
		}
		v, err := readPrivate(c.File, MaxValueBytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", at, err)
		}
		e.Value = strings.TrimSpace(string(v))
		if c.CAFile != "" {
			pem, err := os.ReadFile(c.CAFile)
			if err != nil {
				return nil, fmt.Errorf("%s: failed to read ca_file: %w", at, err)
			}
			e.RootCAs = x509.NewCertPool()
			if !e.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("%s: ca_file %s holds no PEM certificate", at, c.CAFile)
			}
		}
		if e.Placeholder, err = newPlaceholder(c.Name); err != nil {
			return nil, err
		}
		if err := e.Check(); err != nil {
			return nil, fmt.Errorf("%s: %w", at, err)
		}
		h.entries[c.Name] = e
		all = append(all, e.Credential)
	}
	// Two credentials claiming one host would make the one a request gets a guess.
	if _, err := credential.NewSet(all); err != nil {
		return nil, fmt.Errorf("credentials file %s: %w", p, err)
	}
	return h, nil
}

// readPrivate reads a regular file only its owner can read, at most limit bytes.
func readPrivate(p string, limit int64) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("failed to open %s: %w", p, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("failed to stat %s: %w", p, err)
	}
	switch {
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file", p)
	case st.Mode().Perm()&0o077 != 0:
		return nil, fmt.Errorf("%s is mode %04o: a credential must be readable by its owner only; chmod 600 %s", p, st.Mode().Perm(), p)
	case st.Size() > limit:
		return nil, fmt.Errorf("%s is %d bytes; at most %d", p, st.Size(), limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("failed to read %s: %w", p, err)
	}
	return b, nil
}

// checkPattern accepts owner/name and owner/*.
func checkPattern(r string) error {
	owner, name, ok := strings.Cut(r, "/")
	if !ok || !repoconfig.ValidOwner(owner) || name != "*" && !repoconfig.ValidRepoName(name) {
		return fmt.Errorf("repository %q: write owner/name or owner/*", r)
	}
	return nil
}

func newPlaceholder(name string) (string, error) {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("failed to make a placeholder: %w", err)
	}
	return credential.PlaceholderPrefix + name + "-" + hex.EncodeToString(b), nil
}

// Names lists the file's credentials.
func (h *Host) Names() []string {
	if h == nil {
		return nil
	}
	out := make([]string, 0, len(h.entries))
	for n := range h.entries {
		out = append(out, n)
	}
	return out
}

// Grant returns the credentials repo (owner/name) asked for, or an error naming the
// first it may not have: one the host does not declare, or one whose repositories do
// not include repo. A run that asks for nothing gets nothing, with or without a file.
func (h *Host) Grant(repo string, names []string) ([]credential.Credential, error) {
	if len(names) == 0 {
		return nil, nil
	}
	if h == nil {
		return nil, fmt.Errorf("the repository asks for the credentials %s, but this runner host declares none (%s is not set): ask the runner host's admin to declare them (docs/credentials.md)", strings.Join(names, ", "), Env)
	}
	repo = strings.ToLower(repo)
	if owner, name, ok := strings.Cut(repo, "/"); !ok || !repoconfig.ValidOwner(owner) || !repoconfig.ValidRepoName(name) {
		// Not owner/name: "tools" or "tools/a/b" would otherwise match tools/*.
		return nil, fmt.Errorf("the repository %q is not owner/name: no credential is granted", repo)
	}
	out := make([]credential.Credential, 0, len(names))
	for _, n := range names {
		e, ok := h.entries[n]
		if !ok {
			return nil, fmt.Errorf("the repository asks for the credential %q, which this runner host does not declare in %s: ask its admin to add it, or remove it from credentials: in .github/bumper.yml", n, h.path)
		}
		if !granted(e.Repositories, repo) {
			return nil, fmt.Errorf("the credential %q is not granted to %s on this runner host (it is for %s): ask the runner host's admin to add the repository to its repositories in %s", n, repo, strings.Join(e.Repositories, ", "), h.path)
		}
		out = append(out, e.Credential)
	}
	return out, nil
}

func granted(patterns []string, repo string) bool {
	owner, _, _ := strings.Cut(repo, "/")
	for _, p := range patterns {
		if p == repo || p == owner+"/*" {
			return true
		}
	}
	return false
}

// GuestEnv is what a VM whose firewall holds creds is told of them, as KEY=VALUE: for
// each, BUMPER_CREDENTIAL_<NAME> (the name upper-cased, '-' as '_') holds its
// placeholder, for a tool that wants a token written somewhere, and
// BUMPER_CREDENTIAL_<NAME>_URL the plain-HTTP URL of its first host and prefix, which
// the firewall sends on over TLS with the value added. Never a value.
func GuestEnv(creds []credential.Credential) []string {
	var env []string
	for _, c := range creds {
		key := "BUMPER_CREDENTIAL_" + strings.ToUpper(strings.ReplaceAll(c.Name, "-", "_"))
		env = append(env, key+"="+c.Placeholder)
		if len(c.Hosts) > 0 {
			env = append(env, key+"_URL=http://"+c.Hosts[0].Name+c.Hosts[0].Prefix)
		}
	}
	return env
}
