package e2e

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// goModule is the Go module of action/envbuild's toolchain test: its go.mod asks for a
// Go newer than Debian's, and its setup script installs that release from the Go module
// proxy.
func goModule(t *testing.T) map[string]string {
	t.Helper()
	root := filepath.Join("..", "action", "envbuild", "testdata", "gotoolchain")
	files := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		files[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil || files["go.mod"] == "" || files["scripts/env-setup.sh"] == "" {
		t.Fatalf("the Go module: %v (%d files)", err, len(files))
	}
	return files
}

// hostCABundle is Debian's CA bundle, which update-ca-certificates fills with the
// host's own CAs too.
const hostCABundle = "/etc/ssl/certs/ca-certificates.crt"

// goPolicy is the Go module's .github/bumper.yml: the scripted agent, the module's
// real tests as verification, and the environment that gives them their Go.
const goPolicy = "version: 1\n" +
	"harness:\n  name: command\n  command: sh .bumper/agent.sh\n" +
	"verification:\n  - go vet ./...\n  - go test -json ./...\n" +
	"bounds:\n  verification_rounds: 1\n  wall_time: 20m\n" +
	"reviewer: false\n" +
	"environment:\n  packages: [golang-go]\n  setup: scripts/env-setup.sh\n  inputs: [go.mod, go.sum]\n" +
	"  allow: [proxy.golang.org]\n  cache_paths: [~/go/pkg/mod, ~/.cache/go-build]\n"
