package emutest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/bumperdev/bumper/ghemu"
)

// InstallationToken mints an installation token for one repository of owner, as the
// App does for a run: an App JWT, then POST /app/installations/{id}/access_tokens with
// the repository and permissions.
func InstallationToken(t testing.TB, e *ghemu.Emulator, owner, repo string, perms map[string]string) string {
	t.Helper()
	key, err := jwt.ParseRSAPrivateKeyFromPEM(e.AppKeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	appJWT, err := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.RegisteredClaims{
		Issuer: strconv.FormatInt(e.AppID(), 10), IssuedAt: jwt.NewNumericDate(now.Add(-30 * time.Second)),
		ExpiresAt: jwt.NewNumericDate(now.Add(5 * time.Minute)),
	}).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"repositories": []string{repo}, "permissions": perms})
	req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/app/installations/%d/access_tokens", e.BaseURL(), e.InstallationID(owner)), bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+appJWT)
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusCreated || out.Token == "" {
		t.Fatalf("minting an installation token: %s, %v", resp.Status, err)
	}
	return out.Token
}
