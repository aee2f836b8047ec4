package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bumperdev/bumper/action/harness"
	"github.com/bumperdev/bumper/ghemu"
	"github.com/bumperdev/bumper/ghemu/emutest"
	"github.com/bumperdev/bumper/internal/doctorreport"
)

// TestDoctorCommand checks the command's contract: the JSON shape, and the exit
// status: 0 when nothing blocks, 1 when something does or, with --strict, on warnings.
func TestDoctorCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The default world's acme/widgets, and acme/gadgets: the same without a
	// .github/bumper.yml, which names the harness the runner needs.
	seed := ghemu.DefaultSeed()
	gadgets := seed.Repositories[0]
	gadgets.Name, gadgets.Files = "gadgets", maps.Clone(gadgets.Files)
	seed.Repositories[0].Files = maps.Clone(seed.Repositories[0].Files)
	seed.Repositories[0].Files[".github/bumper.yml"] = "version: 1\nharness: {name: claude-code, version: " + harness.DefaultClaudeCodeVersion + "}\n"
	seed.Repositories = append(seed.Repositories, gadgets)
	e := emutest.New(t, ghemu.Options{Seed: seed})
	dir := t.TempDir()
	key := filepath.Join(dir, "key.pem")
	if err := os.WriteFile(key, e.AppKeyPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "serve.yml")
	body := fmt.Sprintf("github:\n  v3_api_url: %s/\n  app:\n    integration_id: %d\n    webhook_secret: s\nbumper:\n  private_key_file: %s\n  run_token_key: %x\n",
		e.BaseURL(), e.AppID(), key, bytes.Repeat([]byte{7}, 32))
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		args     []string
		code     int
		blocking bool
	}{
		// The default world's App asks for more than Bumper needs and its workflow grants
		// contents: read: warnings only.
		{"warnings only", []string{"--repo", "acme/widgets"}, 0, false},
		{"strict", []string{"--repo", "acme/widgets", "--strict"}, 1, false},
		{"not installed", []string{"--repo", "acme/nothing"}, 1, true},
		{"no harness", []string{"--repo", "acme/gadgets"}, 1, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			args := append([]string{"doctor", "--host=false", "--config", cfg, "--json"}, c.args...)
			if code := run(ctx, args, &out, &errb); code != c.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, c.code, out.String(), errb.String())
			}
			var rep doctorreport.Report
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, out.String())
			}
			if c.name == "no harness" && !slices.ContainsFunc(rep.Findings, func(f doctorreport.Finding) bool {
				return f.Check == "repo.config" && strings.Contains(f.Fix, "version: "+harness.DefaultClaudeCodeVersion+"}")
			}) {
				t.Errorf("no repo.config finding whose fix names claude-code %s: %+v", harness.DefaultClaudeCodeVersion, rep.Findings)
			}
			if rep.Schema != doctorreport.Schema || rep.OK == c.blocking || (rep.Blocking > 0) != c.blocking || rep.Warnings == 0 || len(rep.Findings) == 0 {
				t.Errorf("report: %+v", rep)
			}
		})
	}
	var errb bytes.Buffer
	if code := run(ctx, []string{"doctor", "--repo", "acme/widgets"}, &bytes.Buffer{}, &errb); code != 2 {
		t.Errorf("--repo without --config: exit %d, want 2 (%s)", code, errb.String())
	}
}
