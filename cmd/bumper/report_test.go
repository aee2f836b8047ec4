package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
)

// TestReportCommand checks the command's contract: its usage errors, its formats, the
// note on unverified records when serve's configuration holds no run_token_key, and
// --post opening the report issue once, then leaving it be. The figures themselves are
// app/report's tests'.
func TestReportCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e := emutest.New(t, ghemu.Options{})
	dir := t.TempDir()
	key := filepath.Join(dir, "key.pem")
	if err := os.WriteFile(key, e.AppKeyPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	write := func(name, extra string) string {
		p := filepath.Join(dir, name)
		body := fmt.Sprintf("github:\n  v3_api_url: %s/\n  app:\n    integration_id: %d\n    webhook_secret: s\nbumper:\n  private_key_file: %s\n%s",
			e.BaseURL(), e.AppID(), key, extra)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	keyed := write("serve.yml", fmt.Sprintf("  run_token_key: %x\n", bytes.Repeat([]byte{7}, 32)))
	keyless := write("reader.yml", "")
	repo := ghemu.DefaultOrg + "/" + ghemu.DefaultRepo
	for _, tc := range []struct {
		name       string
		args       []string
		code       int
		out, notIn string
		stderr     string
	}{
		{"neither repo nor org", []string{"--config", keyed}, 2, "", "", "--repo OWNER/NAME or --org ORG"},
		{"both", []string{"--config", keyed, "--repo", repo, "--org", ghemu.DefaultOrg}, 2, "", "", "--repo OWNER/NAME or --org ORG"},
		{"no config", []string{"--repo", repo}, 2, "", "", "--config is required"},
		{"bad format", []string{"--config", keyed, "--repo", repo, "--format", "yaml"}, 2, "", "", "--format"},
		{"bad since", []string{"--config", keyed, "--repo", repo, "--since", "soon"}, 2, "", "", "--since"},
		{"table, verified", []string{"--config", keyed, "--repo", repo}, 0, "pull requests merged (accepted)", "unverified", ""},
		{"table, without the key", []string{"--config", keyless, "--org", ghemu.DefaultOrg, "--since", "all"}, 0, "Records unverified", "", ""},
		{"json", []string{"--config", keyed, "--repo", repo, "--format", "json"}, 0, `"verified": true`, "", ""},
		{"csv", []string{"--config", keyed, "--repo", repo, "--format", "csv"}, 0, "repository,items,", "", ""},
		// An absolute --since: a relative one moves with the clock, and a second that
		// ticks between the two posts changes the body's window line.
		{"post", []string{"--config", keyed, "--repo", repo, "--since", "2026-01-01", "--post"}, 0, "metric", "", "(bumper:report): updated"},
		{"post again", []string{"--config", keyed, "--repo", repo, "--since", "2026-01-01", "--post"}, 0, "metric", "", "(bumper:report): unchanged"},
		{"not installed", []string{"--config", keyed, "--repo", "acme/nothing"}, 1, "", "", "failed to find the App's installation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run(ctx, append([]string{"report"}, tc.args...), &out, &errb); code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, out.String(), errb.String())
			}
			if !strings.Contains(out.String(), tc.out) || (tc.notIn != "" && strings.Contains(out.String(), tc.notIn)) {
				t.Errorf("output lacks %q or holds %q:\n%s", tc.out, tc.notIn, out.String())
			}
			if !strings.Contains(errb.String(), tc.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderr, errb.String())
			}
		})
	}
}
