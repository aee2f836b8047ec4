package main

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/action/harness"
	"github.com/bumperdev/bumper/app"
	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
	"github.com/bumperdev/bumper/internal/doctorreport"
)

// TestAdminSetsUpAgainstTheEmulator is an admin's first hour, on a real emulator:
// `bumper setup --github-url` alone (the API and the OIDC issuer found by asking the
// emulator), its manifest flow driven through setup's local page and the emulator's
// pages as a browser drives them; the new App installed through the emulator's
// install page on three of acme's four repositories, by an admin of them; then
// `bumper doctor --host=false` with the serve.yml setup wrote passes for each of the
// three, and blocks for the fourth, where the App is not installed.
func TestAdminSetsUpAgainstTheEmulator(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	seed := ghemu.DefaultSeed()
	seed.Users = append(seed.Users, ghemu.SeedUser{Login: "olivia", Name: "Olivia Admin"})
	base := seed.Repositories[0]
	base.Files = maps.Clone(base.Files)
	base.Files[".github/bumper.yml"] = "version: 1\nharness: {name: claude-code, version: " + harness.DefaultClaudeCodeVersion + "}\n"
	seed.Repositories = nil
	repos := []string{"widgets", "gadgets", "gizmos", "sprockets"}
	for _, name := range repos {
		r := base
		r.Name = name
		r.Collaborators = maps.Clone(base.Collaborators)
		r.Collaborators["olivia"] = "admin"
		seed.Repositories = append(seed.Repositories, r)
	}
	seed.Installations = nil
	e := emutest.New(t, ghemu.Options{Seed: seed})
	dir := filepath.Join(t.TempDir(), "bumper-app")

	// bumper setup, as the admin types it.
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"setup", "--url", "https://bumper.example.test", "--org", "acme", "--github-url", e.BaseURL(), "--dir", dir}, &out, &errb)
	}()
	pageRE := regexp.MustCompile(`Open (http://127\.0\.0\.1:\d+/) in a browser`)
	var local string
	for local == "" {
		if m := pageRE.FindStringSubmatch(out.String()); m != nil {
			local = m[1]
			break
		}
		select {
		case code := <-done:
			t.Fatalf("setup exited %d before serving its page\n%s%s", code, out.String(), errb.String())
		case <-ctx.Done():
			t.Fatal("setup did not serve its page")
		case <-time.After(20 * time.Millisecond):
		}
	}
	b := emutest.NewBrowser(t)
	b.CreateApp(local, "acme")
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("setup exited %d\n%s%s", code, out.String(), errb.String())
		}
	case <-ctx.Done():
		t.Fatal("setup did not finish")
	}
	cfgPath := filepath.Join(dir, "serve.yml")
	cfg, err := app.LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GitHub.V3APIURL != e.BaseURL()+"/api/v3/" || cfg.Bumper.OIDCIssuer != e.OIDCIssuerURL() || cfg.GitHub.App.IntegrationID != e.AppID() {
		t.Errorf("serve.yml: API %s, issuer %s, App %d (the emulator's: %d)", cfg.GitHub.V3APIURL, cfg.Bumper.OIDCIssuer, cfg.GitHub.App.IntegrationID, e.AppID())
	}
	var ident struct {
		Slug    string `json:"slug"`
		HTMLURL string `json:"html_url"`
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "app.json"))
	if err := json.Unmarshal(raw, &ident); err != nil {
		t.Fatal(err)
	}
	installURL := strings.TrimRight(ident.HTMLURL, "/") + "/installations/new"
	if !strings.Contains(out.String(), installURL) {
		t.Errorf("setup does not print the install page %s:\n%s", installURL, out.String())
	}

	// Before installing, doctor says where to install it.
	doctor := func(repo string) (int, doctorreport.Report, string) {
		var o, eb bytes.Buffer
		code := run(ctx, []string{"doctor", "--host=false", "--config", cfgPath, "--json", "--repo", "acme/" + repo}, &o, &eb)
		var rep doctorreport.Report
		if err := json.Unmarshal(o.Bytes(), &rep); err != nil {
			t.Fatalf("doctor's report: %v\n%s%s", err, o.String(), eb.String())
		}
		return code, rep, o.String()
	}
	if code, _, report := doctor("widgets"); code != 1 || !strings.Contains(report, installURL) {
		t.Errorf("doctor before the App is installed: exit %d\n%s", code, report)
	}

	// The admin signs in on the emulator and installs the App on three repositories.
	b.InstallApp(e, ident.Slug, "olivia", repos[:3])

	for _, repo := range repos[:3] {
		code, rep, report := doctor(repo)
		t.Logf("doctor for acme/%s: exit %d, %d warnings", repo, code, rep.Warnings)
		if code != 0 || rep.Blocking != 0 {
			t.Errorf("doctor for acme/%s: exit %d\n%s", repo, code, report)
		}
	}
	code, rep, report := doctor(repos[3])
	if code != 1 || !strings.Contains(report, "repo.installation") {
		t.Errorf("doctor for acme/%s, not installed: exit %d, %d blocking\n%s", repos[3], code, rep.Blocking, report)
	}
}
