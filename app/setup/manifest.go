package setup

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

// Manifest is a GitHub App manifest: what the App's registration page is filled in with
// ("Registering a GitHub App from a manifest" in GitHub's docs).
type Manifest struct {
	Name        string         `json:"name"`
	URL         string         `json:"url"`
	Description string         `json:"description,omitempty"`
	Hook        HookAttributes `json:"hook_attributes"`
	// RedirectURL is where GitHub sends the browser, with the code and state, once the
	// App is created.
	RedirectURL        string            `json:"redirect_url"`
	Public             bool              `json:"public"`
	DefaultPermissions map[string]string `json:"default_permissions"`
	DefaultEvents      []string          `json:"default_events"`
}

// HookAttributes are the App's webhook.
type HookAttributes struct {
	URL    string `json:"url"`
	Active bool   `json:"active"`
}

// DefaultWebhookPath is serve's webhook route (server.webhook_path's default).
const DefaultWebhookPath = "/api/github/hook"

// NewManifest is the manifest of a Bumper App whose serve is reached at publicURL and
// which sends the browser back to redirectURL. The App is private: only its owner's
// account can install it.
func NewManifest(name, publicURL, webhookPath, redirectURL string) (Manifest, error) {
	pub, err := url.Parse(publicURL)
	if err != nil || (pub.Scheme != "https" && pub.Scheme != "http") || pub.Host == "" {
		return Manifest{}, fmt.Errorf("the public URL %q must be serve's absolute http(s) base URL, such as https://bumper.example.com", publicURL)
	}
	if webhookPath == "" {
		webhookPath = DefaultWebhookPath
	}
	return Manifest{
		Name:               name,
		URL:                strings.TrimRight(publicURL, "/"),
		Description:        "Bumper runs coding agents on this organisation's repositories in microVMs, behind a default-deny firewall; humans merge.",
		Hook:               HookAttributes{URL: strings.TrimRight(publicURL, "/") + webhookPath, Active: true},
		RedirectURL:        redirectURL,
		Public:             false,
		DefaultPermissions: PermissionMap(),
		DefaultEvents:      EventNames(),
	}, nil
}

// JSON is the manifest as the registration form's `manifest` field carries it.
func (m Manifest) JSON() string {
	b, err := json.Marshal(m)
	if err != nil {
		// A struct of strings, maps of strings and a bool always encodes.
		panic(fmt.Errorf("failed to encode the manifest: %w", err))
	}
	return string(b)
}

// NewAppURL is GitHub's page the manifest form is posted to: the organisation's App
// settings, or the signed-in user's when org is empty. state comes back with the code.
func NewAppURL(githubURL, org, state string) string {
	base := strings.TrimRight(githubURL, "/")
	path := "/settings/apps/new"
	if org != "" {
		path = "/organizations/" + url.PathEscape(org) + "/settings/apps/new"
	}
	return base + path + "?state=" + url.QueryEscape(state)
}

// APIURLs derives the REST and GraphQL base URLs from GitHub's web URL: api.github.com
// for github.com, HOST/api/v3/ and HOST/api/graphql for GitHub Enterprise Server. The
// REST URL ends in "/".
func APIURLs(githubURL string) (v3, v4 string, err error) {
	u, err := url.Parse(githubURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", "", fmt.Errorf("the GitHub URL %q must be an absolute http(s) URL such as https://github.com", githubURL)
	}
	if strings.EqualFold(u.Host, "github.com") {
		return "https://api.github.com/", "https://api.github.com/graphql", nil
	}
	base := strings.TrimRight(githubURL, "/")
	return base + "/api/v3/", base + "/api/graphql", nil
}
