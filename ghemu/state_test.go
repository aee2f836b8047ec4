package ghemu_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"

	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
)

func TestStateSurvivesARestart(t *testing.T) {
	dir := t.TempDir()
	e1 := emutest.New(t, ghemu.Options{StateDir: dir})
	ctx := emutest.Context(t)
	c := emutest.UserClient(t, e1, ghemu.DefaultMaintainer)
	if _, _, err := c.Issues.Create(ctx, org, repo, &github.IssueRequest{Title: github.String("remember me"),
		Labels: &[]string{"agent:implement"}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Issues.CreateComment(ctx, org, repo, 1, &github.IssueComment{Body: github.String("/approve")}); err != nil {
		t.Fatal(err)
	}
	token, appID, key := e1.UserToken(ghemu.DefaultMaintainer), e1.AppID(), string(e1.AppKeyPEM())
	if err := e1.Close(); err != nil {
		t.Fatal(err)
	}

	e2 := emutest.New(t, ghemu.Options{StateDir: dir})
	if e2.UserToken(ghemu.DefaultMaintainer) != token || e2.AppID() != appID || string(e2.AppKeyPEM()) != key {
		t.Fatal("tokens, App ID or App key changed across the restart")
	}
	c2 := emutest.UserClient(t, e2, ghemu.DefaultMaintainer)
	is, _, err := c2.Issues.Get(ctx, org, repo, 1)
	if err != nil || is.GetTitle() != "remember me" || len(is.Labels) != 1 || is.GetComments() != 1 {
		t.Fatalf("issue after restart = %+v, %v", is, err)
	}
	next, _, err := c2.Issues.Create(ctx, org, repo, &github.IssueRequest{Title: github.String("second")})
	if err != nil || next.GetNumber() != 2 {
		t.Fatalf("numbering after restart = %d, %v", next.GetNumber(), err)
	}
	if _, err := e2.Git().Refs(ctx, org, repo); err != nil {
		t.Errorf("git repository lost across the restart: %v", err)
	}
}

func TestSeedFiles(t *testing.T) {
	tests := []struct {
		name, yaml, wantErr string
	}{
		{"valid", `
users: [{login: alice}]
organizations: [org1]
repositories:
  - {owner: org1, name: r1, collaborators: {alice: write}, files: {"a.txt": "hi"}}
installations: [{account: org1, repositories: [r1]}]
`, ""},
		{"unknown field", "users: [{login: alice, colour: red}]\n", "colour"},
		{"bad login", "users: [{login: -bad-}]\n", "not a valid GitHub login"},
		{"unknown collaborator", `
organizations: [o]
repositories: [{owner: o, name: r, collaborators: {ghost: write}}]
`, "ghost"},
		{"bad permission", `
users: [{login: a}]
organizations: [o]
repositories: [{owner: o, name: r, collaborators: {a: superuser}}]
`, "superuser"},
		{"installation on unknown repo", `
organizations: [o]
installations: [{account: o, repositories: [nope]}]
`, "nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "seed.yml")
			if err := os.WriteFile(path, []byte(tt.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			seed, err := ghemu.LoadSeed(path)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			e := emutest.New(t, ghemu.Options{Seed: seed})
			c := emutest.UserClient(t, e, "alice")
			f, _, _, err := c.Repositories.GetContents(emutest.Context(t), "org1", "r1", "a.txt", nil)
			if err != nil {
				t.Fatal(err)
			}
			if s, _ := f.GetContent(); s != "hi" {
				t.Errorf("a.txt = %q", s)
			}
		})
	}
}
