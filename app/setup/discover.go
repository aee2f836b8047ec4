package setup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// probeTimeout bounds each request discovery makes.
const probeTimeout = 10 * time.Second

// DiscoverAPIURL finds the REST API of the GitHub at githubURL, as GitHub's own tools
// do: github.com's is api.github.com, asked nothing; any other host is asked
// GET HOST/api/v3/meta first (GitHub Enterprise Server serves its API under /api/v3/)
// and then GET HOST/meta (an API at the root of the address, as api.github.com's is).
// The first that answers GitHub's meta object is the API; the URL ends in "/". When
// neither does, the error says what each answered.
func DiscoverAPIURL(ctx context.Context, client *http.Client, githubURL string) (string, error) {
	v3, _, err := APIURLs(githubURL)
	if err != nil {
		return "", err
	}
	if v3 == "https://api.github.com/" {
		return v3, nil
	}
	if client == nil {
		client = http.DefaultClient
	}
	base := strings.TrimRight(githubURL, "/")
	var tried []string
	for _, api := range []string{base + "/api/v3/", base + "/"} {
		err := probeMeta(ctx, client, api+"meta")
		if err == nil {
			return api, nil
		}
		tried = append(tried, fmt.Sprintf("GET %smeta: %v", api, err))
	}
	return "", fmt.Errorf("no GitHub REST API answers at %s (%s): check --github-url, or give the API's base URL with --api-url",
		base, strings.Join(tried, "; "))
}

// probeMeta asks u for GitHub's meta object (GET /meta, no credentials).
func probeMeta(ctx context.Context, client *http.Client, u string) error {
	var meta map[string]json.RawMessage
	if err := getJSON(ctx, client, u, &meta); err != nil {
		return err
	}
	if _, ok := meta["verifiable_password_authentication"]; !ok {
		return errors.New("the answer is JSON but not GitHub's meta object")
	}
	return nil
}

// DiscoverOIDCIssuer finds the issuer of the runners' OIDC tokens by OpenID Connect
// discovery: github.com's is token.actions.githubusercontent.com, asked nothing; any
// other host is asked for HOST/_services/token/.well-known/openid-configuration (GitHub
// Enterprise Server's issuer) and then HOST/.well-known/openid-configuration (an
// issuer at the address itself, as `bumper emulator`'s is), and the first document's
// issuer is taken. When neither answers, it is what OIDCIssuer says for the address
// and its API.
func DiscoverOIDCIssuer(ctx context.Context, client *http.Client, githubURL, apiURL string) string {
	fallback := OIDCIssuer(githubURL, apiURL)
	v3, _, err := APIURLs(githubURL)
	if err != nil || v3 == "https://api.github.com/" {
		return fallback
	}
	if client == nil {
		client = http.DefaultClient
	}
	base := strings.TrimRight(githubURL, "/")
	for _, issuer := range []string{base + "/_services/token", base} {
		var doc struct {
			Issuer string `json:"issuer"`
		}
		if err := getJSON(ctx, client, issuer+"/.well-known/openid-configuration", &doc); err == nil && doc.Issuer != "" {
			return doc.Issuer
		}
	}
	return fallback
}

// getJSON GETs u and decodes a 200 JSON answer into v.
func getJSON(ctx context.Context, client *http.Client, u string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		return fmt.Errorf("%s", resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v); err != nil {
		return fmt.Errorf("the answer is not JSON: %w", err)
	}
	return nil
}
